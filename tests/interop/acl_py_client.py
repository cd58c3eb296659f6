"""py_client.py with ACL credentials: every producer and consumer calls `set_session_credentials` (the
official C++ client's request signing) before it starts. Keys come from the environment:
ACL_ACCESS_KEY, ACL_SECRET_KEY, ACL_CHANNEL (default ALIYUN). Same arguments and output as py_client.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import py_client  # noqa: E402
from rocketmq import client as rocketmq_client  # noqa: E402


def _signed(cls):
    class Signed(cls):
        def start(self):
            self.set_session_credentials(os.environ["ACL_ACCESS_KEY"], os.environ["ACL_SECRET_KEY"],
                                         os.environ.get("ACL_CHANNEL", "ALIYUN"))
            super().start()

    Signed.__name__ = cls.__name__
    return Signed


py_client.Producer = _signed(rocketmq_client.Producer)
py_client.PushConsumer = _signed(rocketmq_client.PushConsumer)
py_client.PullConsumer = _signed(rocketmq_client.PullConsumer)

if __name__ == "__main__":
    py_client.main()

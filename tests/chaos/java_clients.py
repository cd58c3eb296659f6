"""Clients written by other people in the chaos history: Apache RocketMQ's Java clients (from Maven
Central through tests/apache/: the producer on 4.9.8, the push consumer on 5.5.0) running
java/ChaosProducer.java and java/ChaosConsumer.java, their
lines turned into the operations the Python producers (run.py's Producer) and consumers (consumer.py)
record.

They route, retry, time out, rebalance and commit as the Java client does (retryTimesWhenSendFailed 2,
sendMsgTimeout 2 s; a push consumer of its own group committing offsets every 5 s), with the route
poll set to 1 s where the client's default is 30 s, as a failover-minded user would (with the default a
producer keeps sending to a deposed master until its next poll). `build()` compiles the programs once
per source change; when Apache's jars or a JDK are missing it says why and the run goes on without
them.
"""

import os
import threading
import time

from programs import HistoryProgram, compile_java, java_argv

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(HERE, "java", name) for name in ("ChaosProducer.java", "ChaosConsumer.java")]
# The producer on the 4.x client users still run; the push consumer on a 5.x one, as a RocketMQ 5 user's:
# 4.9.8 leaves a pull parked on a connection the broker closed (a killed master) until its 30 s
# timeout, 5.1.3 and later fail it at once (docs/testing.md, "Chaos").
PRODUCER_SET = "rocketmq-4.9.8"
CONSUMER_SET = "rocketmq-5.5.0"


def classes(client_set):
    """The programs compiled against one client version."""
    return os.path.join(HERE, "java", "build", client_set)


def build():
    """None when the programs are ready to run (compiled once per source change and client version),
    else why they are not."""
    for client_set in (PRODUCER_SET, CONSUMER_SET):
        why = compile_java(SOURCES, client_set, classes(client_set))
        if why:
            return why
    return None


class JavaProgram(HistoryProgram):
    """Runs one of java/'s programs with `client_set`'s jars."""

    def __init__(self, name, client_set, argv, t0, out, lock, workdir):
        # A log directory per program: two JVMs appending to one rocketmq_client.log lose lines.
        env = dict(os.environ, RMQ_CLIENT_LOG_DIR=os.path.join(workdir, "%s-client-logs" % name))
        super().__init__(name, java_argv(client_set, classes(client_set), argv), t0, out, lock, workdir, env)


class JavaProducer(JavaProgram):
    """ChaosProducer: invoke / ok / fail / unknown, as run.py's Producer records them."""

    OPS = ("invoke", "ok", "fail", "unknown")

    def __init__(self, index, seed, cluster, topic, t0, out, lock, workdir):
        super().__init__("java-producer-%d" % index, PRODUCER_SET, ["ChaosProducer", cluster.namesrv_addr, topic,
                                                       "s%d-j%d" % (seed, index), "1000"], t0, out, lock, workdir)
        self.index = index

    def tag(self, op):
        op["proc"] = "java%d" % self.index


class JavaConsumer(JavaProgram):
    """ChaosConsumer, group `chaos-java-consumer`: `consume` operations as consumer.py records them, with
    consumer numbers from 100 on (no commit or reset operations: the client keeps those to itself)."""

    OPS = ("consume",)
    GROUP = "chaos-java-consumer"

    def __init__(self, index, cluster, topic, t0, out, lock, workdir):
        super().__init__("java-consumer-%d" % index, CONSUMER_SET, ["ChaosConsumer", cluster.namesrv_addr, topic, self.GROUP,
                                                       "1000"], t0, out, lock, workdir)
        self.index = index
        self.freeze = threading.Event()  # what run.py's drain() sets; the client rebalances on its own
        self.last_consume = None

    def tag(self, op):
        op["consumer"] = 100 + self.index
        # The client names the broker that stored the message, not the replica that served the pull.
        op["addr"] = "store host %s" % op.get("addr")

    def seen(self, op):
        self.last_consume = time.monotonic()

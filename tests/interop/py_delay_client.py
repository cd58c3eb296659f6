"""Drives PyPI `rocketmq==0.4.4` (official C++ client) for the delayed-message, retry and broadcasting cases.

One JSON object per line on stdout, like py_client.py:

    py_delay_client.py --namesrv ADDR produce --topic T --prefix P --count N [--level L]
    py_delay_client.py --namesrv ADDR later --topic T --group G --prefix P --count N --fail-times K
    py_delay_client.py --namesrv ADDR push --topic T --group G --prefix P --count N [--broadcast]

`produce` sends with `Message.set_delay_time_level(L)` and reports the wall-clock send time. `later` is a
PushConsumer whose callback fails (the binding then answers RECONSUME_LATER) until a message has been
reconsumed K times (K < 0: always fails); it reports every delivery with its reconsume_times and time.
"""

import argparse
import json
import os
import sys
import threading
import time

from rocketmq.client import Message, MessageModel, Producer, PushConsumer

_OUT_LOCK = threading.Lock()


def emit(record):
    with _OUT_LOCK:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def produce(args):
    producer = Producer("py-delay-producer-%s" % args.prefix)
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    # As py_client.start_producer: the client's first scheduled round passes before the first send.
    time.sleep(1.0)
    for i in range(args.count):
        msg = Message(args.topic)
        msg.set_body("%s-%d" % (args.prefix, i))
        msg.set_tags("TagD")
        msg.set_keys("%s-key-%d" % (args.prefix, i))
        msg.set_property("seq", str(i))
        msg.set_property("origin", args.prefix)
        if args.level:
            msg.set_delay_time_level(args.level)
        before = time.time()
        try:
            res = producer.send_sync(msg)
            emit({"kind": "sent", "i": i, "status": res.status.name, "msg_id": res.msg_id,
                  "at": before, "acked": time.time()})
        except Exception as err:  # the C++ client raises its own exception types
            emit({"kind": "send_error", "i": i, "error": "%s: %s" % (type(err).__name__, err)})
    emit({"kind": "done"})
    producer.shutdown()
    os._exit(0)


class Seen:
    """Deliveries per seq; `complete` once each of `count` messages reached `target` reconsume times."""

    def __init__(self, count, target):
        self.count = count
        self.target = target
        self.done = set()
        self.lock = threading.Lock()
        self.complete = threading.Event()

    def record(self, msg, accepted):
        seq = _text(msg.get_property("seq"))
        emit({"kind": "recv", "topic": _text(msg.topic), "body": _text(msg.body), "seq": seq,
              "origin": _text(msg.get_property("origin")), "reconsume_times": msg.reconsume_times,
              "tags": _text(msg.tags), "keys": _text(msg.keys), "delay": msg.delay_time_level,
              "at": time.time(), "accepted": accepted, "queue_id": msg.queue_id, "msg_id": _text(msg.id)})
        if accepted and seq is not None and seq.isdigit():
            with self.lock:
                self.done.add(int(seq))
                if len(self.done) >= self.count:
                    self.complete.set()


def later(args):
    seen = Seen(args.count, args.fail_times)

    def on_message(msg):
        accept = 0 <= args.fail_times <= msg.reconsume_times
        seen.record(msg, accept)
        if not accept:
            raise RuntimeError("consume later (reconsume_times %d)" % msg.reconsume_times)

    return _run_push(args, seen, on_message, MessageModel.CLUSTERING)


def push(args):
    seen = Seen(args.count, 0)

    def on_message(msg):
        seen.record(msg, True)

    model = MessageModel.BROADCASTING if args.broadcast else MessageModel.CLUSTERING
    return _run_push(args, seen, on_message, model)


def _run_push(args, seen, on_message, model):
    consumer = PushConsumer(args.group, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    if args.instance:
        consumer.set_instance_name(args.instance)
    consumer.set_thread_count(2)
    # The C binding's callback sees only the first message of a batch; a failure sends back all of it.
    consumer.set_message_batch_max_size(1)
    consumer.subscribe(args.topic, on_message)
    consumer.start()
    emit({"kind": "started", "at": time.time()})
    ok = seen.complete.wait(args.timeout) if args.count > 0 else (time.sleep(args.timeout) or True)
    time.sleep(args.linger)
    emit({"kind": "done", "complete": ok})
    consumer.shutdown()
    os._exit(0 if ok else 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namesrv", required=True)
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("produce")
    p.add_argument("--topic", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--level", type=int, default=0)
    p.set_defaults(func=produce)
    for name, func in (("later", later), ("push", push)):
        c = sub.add_parser(name)
        c.add_argument("--topic", required=True)
        c.add_argument("--group", required=True)
        c.add_argument("--prefix", required=True)
        c.add_argument("--count", type=int, required=True)
        c.add_argument("--timeout", type=float, default=60)
        c.add_argument("--linger", type=float, default=1.0)
        c.add_argument("--instance")
        if name == "later":
            c.add_argument("--fail-times", type=int, required=True)
        else:
            c.add_argument("--broadcast", action="store_true")
        c.set_defaults(func=func)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()

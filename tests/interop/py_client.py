"""Drives PyPI `rocketmq==0.4.4` (the official RocketMQ C++ client) for the interop runner, one action per process.

Prints one JSON object per line on stdout: `sent` / `send_error` records from producers, `recv` records from
consumers, then `done`. The runner compares them with what was sent (see messages.py).

    py_client.py --namesrv ADDR produce --topic T --prefix P --count N --mode sync|oneway|batch|orderly
    py_client.py --namesrv ADDR push --topic T --group G --expect P:N [--expect P:N] [--orderly]
    py_client.py --namesrv ADDR pull --topic T --group G --expect P:N [--expect P:N]
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import messages  # noqa: E402
from rocketmq.client import Message, Producer, PullConsumer, PushConsumer  # noqa: E402

_OUT_LOCK = threading.Lock()


def emit(record):
    line = json.dumps(record, ensure_ascii=False)
    with _OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def build_message(topic, prefix, i):
    msg = Message(topic)
    msg.set_body(messages.body(prefix, i))
    msg.set_tags(messages.tags(i))
    msg.set_keys(messages.keys(prefix, i))
    for k, v in messages.user_properties(prefix, i).items():
        msg.set_property(k, v)
    return msg


def start_producer(producer):
    """Start, then let the client's first scheduled round (route update and heartbeat to every known broker,
    about 10 ms after start) pass before the first send. The C++ client's transport table lock gives up at
    once when another thread holds it (its try_lock_for returns at once here), so a send that needs a
    connection while that round is connecting to another broker fails every retry ("No route info of this
    topic"); with a topic on several brokers (every shard-broker of ours) that round has several to connect
    to. The next round comes 30 s later, when the sends have opened every connection."""
    producer.start()
    time.sleep(1.0)


def produce(args):
    producer = Producer(args.group or "py-producer-%s" % args.prefix)
    producer.set_namesrv_addr(args.namesrv)
    producer.set_timeout(args.send_timeout_ms)
    start_producer(producer)
    errors = 0
    i = args.start
    end = args.start + args.count
    while i < end and not (args.stop_file and os.path.exists(args.stop_file)):
        try:
            if args.mode == "sync":
                res = producer.send_sync(build_message(args.topic, args.prefix, i))
                emit({"kind": "sent", "i": i, "status": res.status.name, "msg_id": res.msg_id, "offset": res.offset,
                      "t_ms": int(time.time() * 1000)})
                i += 1
            elif args.mode == "oneway":
                producer.send_oneway(build_message(args.topic, args.prefix, i))
                emit({"kind": "sent", "i": i, "status": "ONEWAY"})
                i += 1
            elif args.mode == "orderly":
                key = messages.sharding_key(i)
                res = producer.send_orderly(build_message(args.topic, args.prefix, i), key)
                emit({"kind": "sent", "i": i, "status": res.status.name, "msg_id": res.msg_id,
                      "offset": res.offset, "sharding_key": key})
                i += 1
            elif args.mode == "batch":
                batch = list(range(i, min(i + args.batch_size, end)))
                res = producer.send_batch([build_message(args.topic, args.prefix, j) for j in batch])
                for j in batch:
                    emit({"kind": "sent", "i": j, "status": res.status.name, "msg_id": res.msg_id,
                          "offset": res.offset, "batch_first": batch[0]})
                i = batch[-1] + 1
            else:
                raise SystemExit("unknown mode %s" % args.mode)
        except Exception as err:  # the C++ client raises its own exception types
            errors += 1
            emit({"kind": "send_error", "i": i, "error": "%s: %s" % (type(err).__name__, err),
                  "t_ms": int(time.time() * 1000)})
            if not args.keep_going or errors > args.max_errors:
                emit({"kind": "done", "errors": errors})
                os._exit(1)
            time.sleep(args.error_pause_ms / 1000.0)
            if args.mode != "batch":
                i += 1
        if args.pace_ms:
            time.sleep(args.pace_ms / 1000.0)
    emit({"kind": "done", "errors": errors})
    producer.shutdown()
    os._exit(0)


def parse_expect(values):
    """PREFIX:COUNT (messages 0..COUNT-1) or PREFIX:COUNT:NEEDED (a filtered subscription gets NEEDED of them)."""
    want = {}
    for v in values:
        parts = v.split(":")
        count = int(parts[1])
        needed = int(parts[2]) if len(parts) > 2 else count
        want[parts[0]] = (count, needed)
    return want


class Tracker:
    """Counts distinct (origin, seq) seen against what is expected; thread-safe."""

    def __init__(self, want):
        self.want = want
        self.seen = {p: set() for p in want}
        self.lock = threading.Lock()
        self.complete = threading.Event()
        if not want:
            self.complete.set()

    def record(self, msg):
        origin = _text(msg.get_property("origin"))
        seq = _text(msg.get_property("seq"))
        emit({
            "kind": "recv",
            "topic": msg.topic,
            "body": _text(msg.body),
            "tags": _text(msg.tags),
            "keys": _text(msg.keys),
            "props": {"seq": seq, "origin": origin},
            "queue_id": msg.queue_id,
            "queue_offset": msg.queue_offset,
            "commit_log_offset": msg.commit_log_offset,
            "msg_id": msg.id,
            "reconsume_times": msg.reconsume_times,
            "thread": threading.get_ident(),
        })
        with self.lock:
            if origin in self.seen and seq is not None and seq.isdigit() and int(seq) < self.want[origin][0]:
                self.seen[origin].add(int(seq))
            if all(len(self.seen[p]) >= needed for p, (_, needed) in self.want.items()):
                self.complete.set()


def _text(value):
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def push(args):
    tracker = Tracker(parse_expect(args.expect))
    consumer = PushConsumer(args.group, orderly=args.orderly)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.set_thread_count(2)
    consumer.subscribe(args.topic, tracker.record, args.expression)
    consumer.start()
    emit({"kind": "started"})
    ok = tracker.complete.wait(args.timeout)
    # Linger: late duplicates show up here, and the client's 5 s offset auto-commit runs at least once.
    time.sleep(args.linger)
    emit({"kind": "done", "complete": ok})
    consumer.shutdown()
    os._exit(0 if ok else 2)


def broker_aware(pull_consumer_class):
    """The wrapper's PullConsumer keeps its offsets by `topic@queueId`, so queue 0 of one broker and queue 0
    of another share an offset (with a topic on several brokers, as on every shard-broker of ours, it skips
    and re-reads). Keyed here by broker name too, as a queue is."""

    class BrokerAware(pull_consumer_class):
        def _get_mq_key(self, mq):
            return "%s@%s@%s" % (_text(mq.topic), _text(mq.brokerName), mq.queueId)

    return BrokerAware


def pull(args):
    tracker = Tracker(parse_expect(args.expect))
    consumer = broker_aware(PullConsumer)(args.group)
    consumer.offset_table = {}  # the wrapper's table is class-level; keep it per consumer
    consumer.set_namesrv_addr(args.namesrv)
    consumer.start()
    emit({"kind": "started"})
    end = time.monotonic() + args.timeout
    while not tracker.complete.is_set() and time.monotonic() < end:
        for msg in consumer.pull(args.topic, args.expression):
            tracker.record(msg)
        if not tracker.complete.is_set():
            time.sleep(0.2)
    # One more sweep: anything past the expected messages (duplicates, strays) is reported too.
    for msg in consumer.pull(args.topic, args.expression):
        tracker.record(msg)
    ok = tracker.complete.is_set()
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
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--mode", choices=["sync", "oneway", "batch", "orderly"], default="sync")
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--group")
    p.add_argument("--send-timeout-ms", type=int, default=5000)
    p.add_argument("--keep-going", action="store_true", help="log send errors and continue")
    p.add_argument("--max-errors", type=int, default=1000000)
    p.add_argument("--error-pause-ms", type=int, default=50, help="pause after a send error (--keep-going)")
    p.add_argument("--pace-ms", type=int, default=0, help="pause after each send")
    p.add_argument("--stop-file", help="stop sending once this file exists")
    p.set_defaults(func=produce)

    for name, func in (("push", push), ("pull", pull)):
        c = sub.add_parser(name)
        c.add_argument("--topic", required=True)
        c.add_argument("--group", required=True)
        c.add_argument("--expect", action="append", default=[], help="PREFIX:COUNT[:NEEDED], repeatable")
        c.add_argument("--expression", default="*")
        c.add_argument("--timeout", type=float, default=60)
        c.add_argument("--linger", type=float, default=0)
        if name == "push":
            c.add_argument("--orderly", action="store_true")
        c.set_defaults(func=func)

    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()

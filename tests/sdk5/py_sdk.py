"""Scenarios run with apache/rocketmq-clients' Python SDK (PyPI rocketmq-python-client 5.1.2) against
our proxy: `py_sdk.py <scenario> <proxy endpoint> <topic> [args]`. Each scenario checks what it sees and
exits non-zero with the reason on stderr when something is wrong; on success it prints one JSON line."""

import json
import os
import sys
import threading
import time

from rocketmq import (ClientConfiguration, Credentials, FilterExpression, Message, Producer,
                      SimpleConsumer, TransactionChecker)
from rocketmq.grpc_protocol import TransactionResolution


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    sys.stderr.flush()
    # The SDK's threads would keep the process alive.
    import os
    os._exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


# SDK5_TLS=1: connect with TLS (the proxy's certificate is checked against GRPC_DEFAULT_SSL_ROOTS_FILE_PATH).
TLS = os.environ.get("SDK5_TLS") == "1"


def config(endpoint, ak="", sk=""):
    return ClientConfiguration(endpoint, Credentials(ak, sk), request_timeout=10)


def message(topic, body, tag=None, keys=(), props=None, group=None, deliver_at_s=None):
    m = Message()
    m.topic = topic
    m.body = body.encode()
    if tag:
        m.tag = tag
    for k in keys:
        # The SDK's `keys` setter adds one key per assignment.
        m.keys = k
    for k, v in (props or {}).items():
        m.add_property(k, v)
    if group:
        m.message_group = group
    if deliver_at_s:
        # This SDK takes the delivery time in whole seconds.
        m.delivery_timestamp = deliver_at_s
    return m


def handle_queue(msg):
    """(brokerName, queueId) of a received message, from the proxy's receipt handle (extraInfo fields)."""
    f = msg.receipt_handle.split(" ")
    return f[5], int(f[6])


def consumer(endpoint, group, topic, ak="", sk="", tag="*"):
    c = SimpleConsumer(config(endpoint, ak, sk), group, {topic: FilterExpression(tag)}, await_duration=3,
                       tls_enable=TLS)
    c.startup()
    return c


def receive_until(c, want, deadline_s, invisible_s=15, ack=True):
    """Receives until `want` distinct bodies were seen or the deadline passes: {body: [Message]}."""
    seen = {}
    end = time.time() + deadline_s
    while time.time() < end and len(seen) < want:
        for m in c.receive(32, invisible_s) or []:
            seen.setdefault(m.body.decode(), []).append(m)
            if ack:
                c.ack(m)
    return seen


def normal(endpoint, topic, group):
    p = Producer(config(endpoint), (topic,), tls_enable=TLS)
    p.startup()
    n = 20
    ids = {}
    for i in range(n):
        r = p.send(message(topic, "normal-%d" % i, tag="TagA", keys=("k%d" % i, "all"),
                           props={"seq": str(i)}))
        check(r.message_id, "send %d has no message id" % i)
        ids["normal-%d" % i] = r.message_id
    p.shutdown()
    c = consumer(endpoint, group, topic)
    seen = receive_until(c, n, 40)
    check(len(seen) == n, "received %d of %d messages: %s" % (len(seen), n, sorted(seen)))
    for body, msgs in seen.items():
        m = msgs[0]
        i = body.split("-")[1]
        check(m.tag == "TagA", "%s: tag %r" % (body, m.tag))
        check(set(m.keys) == {"k" + i, "all"}, "%s: keys %r" % (body, m.keys))
        check(m.properties.get("seq") == i, "%s: properties %r" % (body, m.properties))
        check(m.message_id == ids[body], "%s: message id %s, sent as %s" % (body, m.message_id, ids[body]))
        check(m.delivery_attempt == 1, "%s: delivery attempt %r" % (body, m.delivery_attempt))
    # Acked messages stay acked: nothing comes back after their invisible time.
    time.sleep(1)
    again = receive_until(c, 1, 5)
    check(not again, "acked messages were delivered again: %s" % sorted(again))
    c.shutdown()
    print(json.dumps({"sent": n, "received": len(seen)}))


FIFO_GROUPS = 4
FIFO_PER_GROUP = 6


def fifo(endpoint, topic, group):
    """FIFO_PER_GROUP messages in each of FIFO_GROUPS message groups; two consumers of one orderly group
    receive them one at a time (invisible 2 s) and ack each, except the first delivery of `order-0:0`.
    Prints the delivery log for run.py's order checks, and the queues each group was received from."""
    p = Producer(config(endpoint), (topic,))
    p.startup()
    groups = ["order-%d" % g for g in range(FIFO_GROUPS)]
    for i in range(FIFO_PER_GROUP):
        for g in groups:
            p.send(message(topic, "%s:%d" % (g, i), group=g))
    p.shutdown()
    consumers = [consumer(endpoint, group, topic), consumer(endpoint, group, topic)]
    log = []
    queues = {}
    acked = 0
    held = False
    end = time.time() + 60
    while time.time() < end and acked < FIFO_GROUPS * FIFO_PER_GROUP:
        for n, c in enumerate(consumers):
            for m in c.receive(1, 2) or []:
                body = m.body.decode()
                queues.setdefault(body.split(":")[0], set()).add(handle_queue(m))
                ack = held or body != "order-0:0"
                held = True if body == "order-0:0" else held
                log.append({"c": n, "body": body, "group": m.message_group, "attempt": m.delivery_attempt,
                            "ack": ack})
                if ack:
                    c.ack(m)
                    acked += 1
    for c in consumers:
        c.shutdown()
    print(json.dumps({"log": log, "queues": {g: sorted("%s/%d" % q for q in qs) for g, qs in queues.items()}}))


def fifo_dlq(endpoint, topic, group, attempts):
    """An orderly group with `attempts` max deliveries: `dlq:0` never acked is delivered `attempts` times,
    then the proxy moves it to %DLQ%group and the group's next messages come, in order."""
    attempts = int(attempts)
    p = Producer(config(endpoint), (topic,))
    p.startup()
    for i in range(3):
        p.send(message(topic, "dlq:%d" % i, group="dlq"))
    p.shutdown()
    c = consumer(endpoint, group, topic)
    seen = []
    end = time.time() + 60
    while time.time() < end and len(seen) < attempts + 2:
        for m in c.receive(1, 1) or []:
            body = m.body.decode()
            seen.append([body, m.delivery_attempt])
            if body != "dlq:0":
                c.ack(m)
    want = [["dlq:0", a] for a in range(1, attempts + 1)] + [["dlq:1", 1], ["dlq:2", 1]]
    check(seen == want, "deliveries %s, want %s" % (seen, want))
    more = receive_until(c, 1, 4, invisible_s=1, ack=False)
    check(not more, "delivered again: %s" % sorted(more))
    c.shutdown()
    print(json.dumps({"deliveries": seen}))


class Checker(TransactionChecker):
    def __init__(self):
        self.checked = []

    def check(self, msg):
        self.checked.append(msg.body.decode())
        return TransactionResolution.COMMIT


def transaction(endpoint, topic, group):
    checker = Checker()
    p = Producer(config(endpoint), (topic,), checker)
    p.startup()
    t = p.begin_transaction()
    p.send(message(topic, "tx-commit"), t)
    t.commit()
    t = p.begin_transaction()
    p.send(message(topic, "tx-rollback"), t)
    t.rollback()
    # Neither committed nor rolled back: the broker checks back, through the proxy, and the checker commits.
    t = p.begin_transaction()
    p.send(message(topic, "tx-orphan"), t)
    c = consumer(endpoint, group, topic)
    seen = receive_until(c, 2, 60)
    # A rolled-back message must not show up even a little later.
    seen.update(receive_until(c, 3, 3))
    c.shutdown()
    p.shutdown()
    check(sorted(seen) == ["tx-commit", "tx-orphan"], "received %s" % sorted(seen))
    check("tx-orphan" in checker.checked, "the checker was asked about %s" % checker.checked)
    print(json.dumps({"received": sorted(seen), "checked": checker.checked}))


def redelivery(endpoint, topic, group):
    p = Producer(config(endpoint), (topic,))
    p.startup()
    p.send(message(topic, "redeliver-me"))
    p.send(message(topic, "keep-invisible"))
    p.shutdown()
    c = consumer(endpoint, group, topic)
    first = receive_until(c, 2, 30, invisible_s=2, ack=False)
    check(sorted(first) == ["keep-invisible", "redeliver-me"], "first receive: %s" % sorted(first))
    # Extend one message's invisible time: it must not come back with the other.
    kept = first["keep-invisible"][0]
    c.change_invisible_duration(kept, 30)
    t0 = time.time()
    again = receive_until(c, 1, 30, invisible_s=10, ack=False)
    waited = time.time() - t0
    check(sorted(again) == ["redeliver-me"], "after the invisible time: %s" % sorted(again))
    m = again["redeliver-me"][0]
    check(m.delivery_attempt == 2, "redelivered with delivery attempt %r" % m.delivery_attempt)
    c.ack(m)
    # The message whose invisible time was extended is acked with its renewed handle.
    c.ack(kept)
    later = receive_until(c, 1, 5, invisible_s=10)
    check(not later, "acked messages came back: %s" % sorted(later))
    c.shutdown()
    print(json.dumps({"redelivered_after_s": round(waited, 1), "attempt": m.delivery_attempt}))


def delay(endpoint, topic, group):
    p = Producer(config(endpoint), (topic,))
    p.startup()
    due_s = int(time.time()) + 4
    due = due_s * 1000
    p.send(message(topic, "delayed", deliver_at_s=due_s))
    p.send(message(topic, "now"))
    p.shutdown()
    c = consumer(endpoint, group, topic)
    got = {}
    end = time.time() + 40
    while time.time() < end and len(got) < 2:
        for m in c.receive(32, 15) or []:
            got[m.body.decode()] = int(time.time() * 1000)
            c.ack(m)
    c.shutdown()
    check(sorted(got) == ["delayed", "now"], "received %s" % sorted(got))
    check(got["delayed"] >= due, "the delayed message came %d ms early" % (due - got["delayed"]))
    print(json.dumps({"late_ms": got["delayed"] - due}))


def bad_handle(endpoint, topic, group):
    """A forged receipt handle is refused with a clear error and the proxy keeps serving."""
    from rocketmq.v5.exception import BadRequestException
    p = Producer(config(endpoint), (topic,))
    p.startup()
    p.send(message(topic, "real"))
    p.shutdown()
    c = consumer(endpoint, group, topic)
    seen = receive_until(c, 1, 30, ack=False)
    check("real" in seen, "received %s" % sorted(seen))
    m = seen["real"][0]
    good = m.receipt_handle
    m.receipt_handle = "not a handle"
    try:
        c.ack(m)
        fail("a forged receipt handle was accepted")
    except BadRequestException as e:
        check("receipt handle" in str(e), "error does not say why: %s" % e)
    m.receipt_handle = good
    c.ack(m)
    c.shutdown()
    print(json.dumps({"ok": True}))


def acl(endpoint, topic, ak, sk):
    """Right credentials send (run.py checks the broker stored it); a wrong secret is refused."""
    from rocketmq.v5.exception import UnauthorizedException
    p = Producer(config(endpoint, ak, sk), (topic,))
    p.startup()
    p.send(message(topic, "signed"))
    p.shutdown()
    bad = Producer(config(endpoint, ak, sk + "x"), (topic,))
    try:
        bad.startup()
        bad.send(message(topic, "forged"))
        fail("a wrong secret key could send")
    except UnauthorizedException as e:
        refused = str(e)
    except Exception as e:
        # Startup fails on the refused route query with a generic error; run.py checks the proxy's reason.
        refused = str(e)
    print(json.dumps({"refused": refused[:200]}))


def produce(endpoint, topic, fifo_topic, tx_topic):
    """Sends only (the stored result is checked by run.py against the broker): normal, FIFO, transactional."""
    p = Producer(config(endpoint), (topic, fifo_topic, tx_topic), Checker())
    p.startup()
    ids = set()
    for i in range(10):
        ids.add(p.send(message(topic, "plain-%d" % i, tag="T", keys=("k%d" % i,))).message_id)
    check(len(ids) == 10, "message ids were not unique: %s" % ids)
    for i in range(8):
        for g in range(4):
            p.send(message(fifo_topic, "g%d:%d" % (g, i), group="g%d" % g))
    t = p.begin_transaction()
    p.send(message(tx_topic, "commit-me"), t)
    t.commit()
    t = p.begin_transaction()
    p.send(message(tx_topic, "roll-me-back"), t)
    t.rollback()
    p.shutdown()
    print(json.dumps({"sent": 10 + 32 + 2}))


def orphan(endpoint, topic):
    """A half message left open: the broker checks back through the proxy; the checker commits it."""
    checker = Checker()
    p = Producer(config(endpoint), (topic,), checker)
    p.startup()
    t = p.begin_transaction()
    p.send(message(topic, "left-open"), t)
    end = time.time() + 45
    while time.time() < end and not checker.checked:
        time.sleep(0.2)
    check(checker.checked == ["left-open"], "the checker was asked about %s" % checker.checked)
    # The SDK ends the transaction right after its checker answers.
    time.sleep(2)
    p.shutdown()
    print(json.dumps({"checked": checker.checked}))


def push(endpoint, topic, group):
    """A PushConsumer (QueryAssignment, ReceiveMessage with auto-renew, AckMessage) gets every message."""
    from rocketmq import ConsumeResult, MessageListener, PushConsumer
    n = 12
    got = []
    lock = threading.Lock()

    class Listener(MessageListener):
        def consume(self, m):
            with lock:
                got.append(m.body.decode())
            return ConsumeResult.SUCCESS

    p = Producer(config(endpoint), (topic,))
    p.startup()
    for i in range(n):
        p.send(message(topic, "push-%d" % i))
    p.shutdown()
    c = PushConsumer(config(endpoint), group, Listener(), {topic: FilterExpression()})
    c.startup()
    end = time.time() + 45
    while time.time() < end:
        with lock:
            if len(set(got)) == n:
                break
        time.sleep(0.2)
    time.sleep(2)
    c.shutdown()
    check(sorted(set(got)) == sorted("push-%d" % i for i in range(n)), "consumed %s" % sorted(set(got)))
    check(len(got) == n, "consumed %d times for %d messages (acks lost?)" % (len(got), n))
    print(json.dumps({"consumed": len(got)}))


def dlq(endpoint, topic, group, attempts):
    """Never acked: after `attempts` deliveries (the group's retryMaxTimes + 1) it goes to %DLQ%group."""
    attempts = int(attempts)
    p = Producer(config(endpoint), (topic,))
    p.startup()
    p.send(message(topic, "poison"))
    p.shutdown()
    c = consumer(endpoint, group, topic)
    seen = []
    end = time.time() + 60
    while time.time() < end and len(seen) < attempts:
        for m in c.receive(32, 1) or []:
            seen.append(m.delivery_attempt)
    check(seen == list(range(1, attempts + 1)), "delivery attempts %s, want 1..%d" % (seen, attempts))
    more = receive_until(c, 1, 6, invisible_s=1, ack=False)
    check(not more, "delivered again after the last attempt: %s" % sorted(more))
    c.shutdown()
    print(json.dumps({"attempts": seen}))


def produce_acked(endpoint, topic, count, out_path):
    """Sends `count` messages one by one, writing the body of each acknowledged send to out_path (flushed
    per line) and ignoring failures: the broker is killed meanwhile."""
    count = int(count)
    p = Producer(config(endpoint), (topic,))
    p.startup()
    ok = 0
    with open(out_path, "w") as out:
        for i in range(count):
            try:
                p.send(message(topic, "acked-%d" % i))
                out.write("acked-%d\n" % i)
                out.flush()
                ok += 1
            except Exception:
                time.sleep(0.05)
    p.shutdown()
    print(json.dumps({"acked": ok, "tried": count}))


def consume_all(endpoint, topic, group, acked_path):
    """Every body in acked_path is received (and acked)."""
    with open(acked_path) as f:
        want = set(l.strip() for l in f if l.strip())
    c = consumer(endpoint, group, topic)
    seen = receive_until(c, len(want), 90)
    c.shutdown()
    missing = want - set(seen)
    check(not missing, "%d acknowledged messages lost: %s" % (len(missing), sorted(missing)[:20]))
    print(json.dumps({"acked": len(want), "received": len(seen)}))


def delay_refused(endpoint, topic):
    """With the broker's timer off, a delayed send is refused (never delivered early)."""
    from rocketmq.v5.exception import UnsupportedException
    p = Producer(config(endpoint), (topic,))
    p.startup()
    try:
        p.send(message(topic, "too-early", deliver_at_s=int(time.time()) + 60))
        fail("a delayed message was accepted by a broker without timer messages")
    except UnsupportedException as e:
        check("timerWheelEnable" in str(e), "error does not say why: %s" % e)
    p.shutdown()
    print(json.dumps({"ok": True}))


SCENARIOS = {f.__name__: f for f in (normal, fifo, fifo_dlq, transaction, redelivery, delay, delay_refused, bad_handle,
                                     acl, produce, orphan, push, dlq, produce_acked,
                                     consume_all)}

if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    SCENARIOS[name](*args)
    sys.stdout.flush()
    import os
    os._exit(0)

"""Interop cases for the admin statistics Java's mqadmin uses, with the official C++ client (PyPI
`rocketmq==0.4.4`): GET_TOPIC_STATS_INFO and GET_CONSUME_STATS follow what a PushConsumer consumed
and committed, and INVOKE_BROKER_TO_RESET_OFFSET rewinds a *running* PushConsumer (the broker pushes
RESET_CONSUMER_CLIENT_OFFSET, in the list form C++ clients read, and the client consumes again).

With shardRouting = direct each shard is a broker of its own with its own queues, offsets and statistics:
every request goes to each shard-broker and the answers are combined, keyed by (brokerName, queueId)."""

import collections
import json
import re
import time

import remoting
from harness import read_records
from caselib import case, check, require_sent, store_shard

GET_TOPIC_STATS_INFO = 202
GET_CONSUME_STATS = 208
INVOKE_BROKER_TO_RESET_OFFSET = 222

# fastjson writes Map<MessageQueue, V> with the MessageQueue object as the key.
_MQ_KEY = re.compile(r'\{"brokerName":"([^"]*)","queueId":(\d+),"topic":"([^"]*)"\}:')


def _queue_table(resp, what, broker_name):
    """{(brokerName, queueId): value} of a body's offsetTable (object keys rewritten to strings). Every queue
    must be one of `broker_name`, the broker asked."""
    check(resp.code == remoting.SUCCESS, "%s of %s answered %d %r" % (what, broker_name, resp.code, resp.remark))
    text = _MQ_KEY.sub(lambda m: '"%s/%s":' % (m.group(1), m.group(2)), resp.body.decode("utf-8"))
    table = {}
    for key, value in json.loads(text)["offsetTable"].items():
        name, queue = key.rsplit("/", 1)
        check(name == broker_name, "%s of %s lists a queue of broker %s: %s" % (what, broker_name, name, key))
        table[(name, int(queue))] = value
    return table


def _each_queue_table(cluster, code, fields, what):
    """`code` asked of every shard-broker, their offsetTables combined."""
    table = {}
    for name, _, resp in cluster.ask_each(code, fields):
        table.update(_queue_table(resp, what, name))
    return table


def _consume_stats(cluster, group, topic):
    return _each_queue_table(cluster, GET_CONSUME_STATS, {"consumerGroup": group, "topic": topic},
                             "GET_CONSUME_STATS")


def _received(proc):
    """Deliveries per seq so far (the client's output file is read while it runs)."""
    counts = collections.Counter()
    for r in read_records(proc.base + ".jsonl"):
        if r.get("kind") == "recv" and (r.get("props") or {}).get("seq", "").isdigit():
            counts[int(r["props"]["seq"])] += 1
    return counts


def _stored_on(proc):
    """{seq: shard that stored it} from the client's deliveries so far (the physical offset's shard bits)."""
    return {int(r["props"]["seq"]): store_shard(r["commit_log_offset"]) for r in read_records(proc.base + ".jsonl")
            if r.get("kind") == "recv" and (r.get("props") or {}).get("seq", "").isdigit()}


def _each_seq_seen(counts, n, times):
    return all(counts[i] >= times for i in range(n))


def _wait(what, condition, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    check(False, "%s within %ss" % (what, timeout))


@case("py_admin_stats_reset_running_consumer", timeout=300)
def reset_running_consumer(ctx):
    n, topic, group = 40, "PyAdminStats", "py-stats-group"
    c = ctx.start_cluster()
    c.create_topic(topic)
    require_sent(ctx.clients.run("py", "py-produce-stats", ["produce", "--topic", topic, "--prefix", "stats",
                                                            "--count", str(n)], 90), "stats", n)
    stats = _each_queue_table(c, GET_TOPIC_STATS_INFO, {"topic": topic}, "GET_TOPIC_STATS_INFO")
    check(len(stats) == 4 * len(c.broker_names), "topic stats list %d queues, want 4 per broker (%s): %s"
          % (len(stats), c.broker_names, sorted(stats)))
    check(sum(v["maxOffset"] for v in stats.values()) == n, "topic stats do not add up to %d: %s" % (n, stats))

    # A push consumer that stays up (linger) after its first full pass, so the reset reaches it running;
    # it is stopped once the checks are done.
    proc = ctx.clients.spawn("py", "py-push-stats", ["push", "--topic", topic, "--group", group, "--timeout", "60",
                                                     "--linger", "150", "--expect", "stats:%d" % n])
    try:
        _wait("the PushConsumer receiving every message", lambda: len(_received(proc)) >= n, 60)
        # Its offsets reach the broker with its periodic commit (every 5 s).
        _wait("GET_CONSUME_STATS showing everything consumed",
              lambda: sum(w["consumerOffset"] for w in _consume_stats(c, group, topic).values()) == n,
              40)
        first_pass = sum(_received(proc).values())

        # mqadmin resetOffsetByTime asks every broker of the topic's route; here one shard-broker at a time,
        # each once the client has consumed its messages again. The C++ client (2.0) handles a
        # RESET_CONSUMER_CLIENT_OFFSET on one of its remoting threads (one per CPU) and there waits for the
        # in-flight pull of each reset queue to end; with two resets back to back on a 2-CPU host it was seen
        # waiting on such a pull for over 60 s ("has unfinished pullMsgEvent") and consuming nothing, while
        # a single reset waits out one long poll.
        shard_of_seq = _stored_on(proc)
        moved = {}
        for shard, (name, addr) in enumerate(c.shard_brokers()):
            resp = remoting.request(addr, INVOKE_BROKER_TO_RESET_OFFSET,
                                    {"group": group, "topic": topic, "timestamp": 0, "isForce": "true"})
            moved.update(_queue_table(resp, "INVOKE_BROKER_TO_RESET_OFFSET", name))
            stored_here = [i for i, s in shard_of_seq.items() if len(c.broker_names) == 1 or s == shard]
            # The running client is told and consumes the messages of that broker again.
            _wait("the PushConsumer receiving the %d message(s) of %s again after its reset" % (len(stored_here), name),
                  lambda: all(_received(proc)[i] >= 2 for i in stored_here), 60)
        check(len(moved) == len(stats) and all(o == 0 for o in moved.values()), "reset answered %s" % moved)
        check(_each_seq_seen(_received(proc), n, 2), "not every message consumed again after the resets")
        ctx.note("deliveries before the reset: %d, after: %d" % (first_pass, sum(_received(proc).values()) - first_pass))
        # Its commits after the second pass bring the group's offsets (0 right after the reset) to the end.
        _wait("GET_CONSUME_STATS back at the end after the second pass",
              lambda: sum(w["consumerOffset"] for w in _consume_stats(c, group, topic).values()) == n,
              40)
    finally:
        ctx.clients.finish(proc, 1)

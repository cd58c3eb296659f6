"""Interop cases for delayed messages, retries (RECONSUME_LATER), the dead-letter queue and broadcasting
consumers, with PyPI `rocketmq==0.4.4` (official C++ client), driven through py_delay_client.py.

With shardRouting = direct each shard is a broker with its own queues (retry and DLQ topics too) and its own
delay offsets: the checks ask every shard-broker and add up."""

import collections
import os
import time

import harness
import remoting
from caselib import case, check

DELAY_CLIENT = os.path.join(harness.HERE, "py_delay_client.py")
GET_MAX_OFFSET = 30
GET_ALL_TOPIC_CONFIG = 21
GET_ALL_DELAY_OFFSET = 45


class DelayClients(harness.Clients):
    def _argv(self, lang, args):
        return [harness.VENV_PYTHON, DELAY_CLIENT, "--namesrv", self.cluster.namesrv_addr] + list(args)


def _start(ctx, delay_levels):
    """A cluster whose broker uses `messageDelayLevel = delay_levels`."""
    cluster = harness.Cluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    write_config = cluster._broker_config

    def config_with_levels():
        path = write_config()
        with open(path, "a") as f:
            f.write('messageDelayLevel = "%s"\n' % delay_levels)
        return path

    cluster._broker_config = config_with_levels
    ctx.cluster = cluster
    ctx.clients = DelayClients(ctx.workdir, cluster)
    cluster.start()
    return cluster


def _wait_started(proc, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(r.get("kind") == "started" for r in harness.read_records(proc.base + ".jsonl")):
            return
        check(proc.alive(), "consumer %s exited before starting" % proc.name)
        time.sleep(0.1)
    raise harness.CaseFailure("consumer %s did not start in %ss" % (proc.name, timeout))


def _produce(ctx, topic, prefix, count, level):
    res = ctx.clients.run("py", "produce-%s" % prefix, ["produce", "--topic", topic, "--prefix", prefix,
                                                        "--count", str(count), "--level", str(level)], 90)
    check(not res.of_kind("send_error"), "send errors: %s" % res.describe())
    sent = {r["i"]: r for r in res.of_kind("sent")}
    check(len(sent) == count and all(r["status"] == "OK" for r in sent.values()),
          "not every delayed send was SEND_OK: %s" % res.describe())
    return sent


def _max_offset(cluster, topic, queue_id=0):
    """The max offsets of queue `queue_id` of `topic` on every shard-broker, added up; -1 when none answers."""
    offsets = [int(resp.ext_fields.get("offset", -1)) for _, _, resp in
               cluster.ask_each(GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id}) if resp.code == 0]
    return sum(offsets) if offsets else -1


def _delay_offsets(cluster):
    """{level: offset} of GET_ALL_DELAY_OFFSET, the shard-brokers' tables added up, and their bodies."""
    total = {}
    bodies = []
    for name, _, resp in cluster.ask_each(GET_ALL_DELAY_OFFSET):
        check(resp.code == 0, "GET_ALL_DELAY_OFFSET of %s answered %d %r" % (name, resp.code, resp.remark))
        bodies.append("%s: %s" % (name, resp.body.decode()))
        for level, offset in (resp.json_body().get("offsetTable") or {}).items():
            total[int(level)] = total.get(int(level), 0) + int(offset)
    return total, bodies


def _by_seq(result, prefix):
    out = collections.defaultdict(list)
    for r in result.of_kind("recv"):
        if r.get("origin") == prefix and str(r.get("seq")).isdigit():
            out[int(r["seq"])].append(r)
    return out


def _consumer_warmup(ctx, proc):
    """Consumers rebalance a moment after start; messages sent before would still arrive, but the
    timing checks want the consumer polling before the first delivery is due."""
    _wait_started(proc)
    time.sleep(3)


@case("py_delay_level_delivered_late_and_only_then", timeout=150)
def delay_level(ctx):
    c = _start(ctx, "1s 3s 5s")
    c.create_topic("PyDelay")
    consumer = ctx.clients.spawn("py", "push-delay", ["push", "--topic", "PyDelay", "--group", "py-delay-group",
                                                       "--prefix", "pydelay", "--count", "10", "--timeout", "60",
                                                       "--linger", "2"])
    _consumer_warmup(ctx, consumer)
    sent = _produce(ctx, "PyDelay", "pydelay", 10, level=2)
    res = ctx.clients.finish(consumer, 80)
    got = _by_seq(res, "pydelay")
    missing = [i for i in range(10) if i not in got]
    check(not missing, "delayed messages never delivered: %s (%s)" % (missing, res.describe()))
    lateness = []
    for i, recs in sorted(got.items()):
        check(len(recs) == 1, "message %d delivered %d times" % (i, len(recs)))
        r = recs[0]
        waited = r["at"] - sent[i]["at"]
        check(waited >= 2.95, "message %d delivered after %.3f s, before its 3 s delay" % (i, waited))
        check(waited < 8, "message %d delivered only after %.3f s" % (i, waited))
        check(r["topic"] == "PyDelay", "message %d arrived on topic %s" % (i, r["topic"]))
        check((r["body"], r["tags"], r["keys"]) == ("pydelay-%d" % i, "TagD", "pydelay-key-%d" % i),
              "message %d fields changed: %r" % (i, r))
        check(r["delay"] == 0, "message %d still carries DELAY %s" % (i, r["delay"]))
        check(r["reconsume_times"] == 0, "message %d reconsume_times %s" % (i, r["reconsume_times"]))
        check(r["msg_id"] == sent[i]["msg_id"], "message %d msgId %s != sent %s" % (i, r["msg_id"], sent[i]["msg_id"]))
        lateness.append(waited - 3.0)
    ctx.note("seen by the consumer after send: 3 s + %.0f..%.0f ms" % (min(lateness) * 1000, max(lateness) * 1000))
    table, bodies = _delay_offsets(c)
    check(table.get(2) == 10, "GET_ALL_DELAY_OFFSET does not show level 2 at offset 10 (added up over %s): %s"
          % (c.broker_names, bodies))


@case("py_reconsume_later_redelivers_with_growing_reconsume_times", timeout=150)
def reconsume_later(ctx):
    # Level 3 + reconsumeTimes is what a retry waits: 1 s each here.
    c = _start(ctx, " ".join(["1s"] * 18))
    c.create_topic("PyLater")
    consumer = ctx.clients.spawn("py", "later", ["later", "--topic", "PyLater", "--group", "py-later-group",
                                                  "--prefix", "pylater", "--count", "5", "--fail-times", "2",
                                                  "--timeout", "60", "--linger", "3"])
    _consumer_warmup(ctx, consumer)
    _produce(ctx, "PyLater", "pylater", 5, level=0)
    res = ctx.clients.finish(consumer, 80)
    got = _by_seq(res, "pylater")
    check(sorted(got) == list(range(5)), "not every message arrived: %s" % res.describe())
    # The C binding calls back only for the first message of a batch the C++ client consumes (a failure
    # sends the whole batch back), so a message can be sent back unseen: its reconsume_times then skip.
    seen_once = 0
    for i, recs in sorted(got.items()):
        times = [r["reconsume_times"] for r in recs]
        check(times[0] == 0 and times[-1] == 2 and times == sorted(set(times)),
              "message %d reconsume_times over deliveries: %s, want 0 first, increasing, ending at 2" % (i, times))
        check(recs[-1]["accepted"] and not any(r["accepted"] for r in recs[:-1]),
              "message %d accepted before its third attempt: %r" % (i, recs))
        seen_once += times == [0, 1, 2]
        gaps = [b["at"] - a["at"] for a, b in zip(recs, recs[1:])]
        check(all(g >= 0.9 for g in gaps), "message %d redelivered without its retry delay: gaps %s" % (i, gaps))
        check(all(r["body"] == "pylater-%d" % i and r["tags"] == "TagD" for r in recs),
              "message %d changed on redelivery: %r" % (i, recs))
        check(all(r["msg_id"] == recs[0]["msg_id"] for r in recs), "message %d msgId changed on retry" % i)
    check(seen_once >= 1, "no message was seen at each of reconsume_times 0, 1, 2")
    retried = _max_offset(c, "%RETRY%py-later-group")
    check(retried == 10, "%%RETRY%%py-later-group holds %s messages, want 5 messages x 2 retries" % retried)
    ctx.note("reconsume_times per message: %s" % {i: [r["reconsume_times"] for r in recs] for i, recs in got.items()})
    ctx.note("redelivery gaps (s): %s" % [round(b["at"] - a["at"], 2) for a, b in zip(got[0], got[0][1:])])
    check(_max_offset(c, "%DLQ%py-later-group") <= 0, "nothing should reach the DLQ")


@case("py_dead_letter_after_max_reconsume_times", timeout=180)
def dead_letter(ctx):
    # Retry levels 3..18 wait 0 s, so 16 retries are quick; the path is still the schedule topic.
    c = _start(ctx, "1s 1s " + " ".join(["0s"] * 16))
    c.create_topic("PyDead")
    consumer = ctx.clients.spawn("py", "always-later", ["later", "--topic", "PyDead", "--group", "py-dead-group",
                                                         "--prefix", "pydead", "--count", "1", "--fail-times", "-1",
                                                         "--timeout", "100", "--linger", "0"])
    _consumer_warmup(ctx, consumer)
    _produce(ctx, "PyDead", "pydead", 1, level=0)
    end = time.monotonic() + 100
    while time.monotonic() < end and _max_offset(c, "%DLQ%py-dead-group") < 1:
        time.sleep(0.3)
    dlq = _max_offset(c, "%DLQ%py-dead-group")
    time.sleep(2)
    res = ctx.clients.finish(consumer, 0)
    times = [r["reconsume_times"] for r in _by_seq(res, "pydead").get(0, [])]
    check(dlq == 1, "the message did not reach %%DLQ%%py-dead-group (max offset %s); reconsume_times seen %s"
          % (dlq, times))
    check(times == list(range(17)), "deliveries before the DLQ: reconsume_times %s, want 0..16" % times)
    topics = remoting.request(c.broker_addr, GET_ALL_TOPIC_CONFIG).json_body()["topicConfigTable"]
    perm = topics.get("%DLQ%py-dead-group", {}).get("perm")
    check(perm == 2, "DLQ topic perm %s, want 2 (write only)" % perm)
    ctx.note("deliveries before the DLQ: %d" % len(times))


@case("py_broadcasting_consumers_each_get_everything", timeout=150)
def broadcasting(ctx):
    c = _start(ctx, "1s 2s")
    c.create_topic("PyBroadcast")
    consumers = [ctx.clients.spawn("py", "broadcast-%d" % n, [
        "push", "--topic", "PyBroadcast", "--group", "py-broadcast-group", "--prefix", "pybc", "--count", "20",
        "--timeout", "60", "--linger", "2", "--broadcast", "--instance", "bc-%d" % n]) for n in range(2)]
    queues = [(name, q) for name, _ in c.shard_brokers() for q in range(4)]
    for proc in consumers:
        _wait_started(proc)
        ctx.clients.wait_cpp_pulling(proc, "PyBroadcast", queues)
    _produce(ctx, "PyBroadcast", "pybc", 20, level=0)
    for n, proc in enumerate(consumers):
        res = ctx.clients.finish(proc, 80)
        got = _by_seq(res, "pybc")
        missing = [i for i in range(20) if i not in got]
        check(not missing, "broadcasting consumer %d missed %s (%s)" % (n, missing, res.describe()))
        queues = {r["queue_id"] for recs in got.values() for r in recs}
        ctx.note("broadcasting consumer %d: %d messages from queues %s" % (n, len(got), sorted(queues)))
    # Clustering would split the queues between the two; broadcasting gives each all four.

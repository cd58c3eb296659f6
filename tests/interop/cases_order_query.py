"""Interop cases for ordered consumption (Python `rocketmq` PushConsumer with orderly=True across a consumer
restart and a second consumer joining), broker-side tag filtering, and message queries (QUERY_MESSAGE by key
within a time range, VIEW_MESSAGE_BY_ID) through the raw remoting protocol (the Python client has no query API).

With shardRouting = direct each shard is a broker with queues 0..3 of its own: raw pulls and queries go to every
shard-broker and their answers are put together (as mqadmin's queryMsgByKey asks every broker of the route).
"""

import struct
import time

import messages
import remoting
from caselib import case, check, check_received, queue_key, require_sent

QUERY_MESSAGE = 12
VIEW_MESSAGE_BY_ID = 33
QUERY_NOT_FOUND = 22
PULL_MESSAGE = 11
PULL_RETRY_IMMEDIATELY = 20
PULL_FLAG_SUBSCRIPTION = 0x4


def _produce(ctx, topic, prefix, count, mode="sync", timeout=90):
    args = ["produce", "--topic", topic, "--prefix", prefix, "--count", str(count), "--mode", mode]
    return ctx.clients.run("py", "py-produce-%s-%s" % (mode, prefix), args, timeout)


def _push_args(topic, group, want, timeout, linger, orderly=True, expression="*"):
    args = ["push", "--topic", topic, "--group", group, "--timeout", str(timeout), "--linger", str(linger),
            "--expression", expression]
    for prefix, spec in want.items():
        args += ["--expect", "%s:%s" % (prefix, spec)]
    if orderly:
        args.append("--orderly")
    return args


def check_delivery_order(result, what):
    """Within one consumer, each queue's messages were first delivered in queue (send) order."""
    per_queue = {}
    for rec in result.of_kind("recv"):
        per_queue.setdefault(queue_key(rec), []).append(int(rec["queue_offset"]))
    for queue_id, offsets in per_queue.items():
        firsts = list(dict.fromkeys(offsets))
        check(firsts == sorted(firsts), "%s: queue %s delivered out of order (queue offsets in delivery order): %s"
              % (what, queue_id, firsts[:40]))
    return {q: len(set(o)) for q, o in per_queue.items()}


@case("order_push_restart_and_second_consumer", timeout=300)
def ordered_restart_and_join(ctx):
    c = ctx.start_cluster()
    topic = "OrdJoin"
    group = "ord-join-group"
    # Four queues in all, over the shard-brokers (2 each with shardRouting = direct and 2 shards): the three
    # sharding keys then fill queues of both halves a second consumer can be given.
    c.create_topic(topic, queue_nums=4 // len(c.broker_names))
    require_sent(_produce(ctx, topic, "orda", 30, mode="orderly"), "orda", 30)
    # First consumer: all of orda, in order; linger 7 s so its offsets are committed.
    first = ctx.clients.run("py", "ord-first", _push_args(topic, group, {"orda": "30"}, 60, 7), 110)
    check_received(ctx, first, {"orda": 30}, what="first orderly consumer")
    check_delivery_order(first, "first orderly consumer")
    # The consumer restarts (same group), a second consumer joins while messages keep coming.
    # `:0` = nothing needed to finish early: each runs for its linger and reports what it got.
    want = {"ordb": "20:0", "ordc": "20:0", "orda": "30:0"}
    restarted = ctx.clients.spawn("py", "ord-restarted", _push_args(topic, group, want, 0, 40))
    time.sleep(4)
    require_sent(_produce(ctx, topic, "ordb", 20, mode="orderly"), "ordb", 20)
    joined = ctx.clients.spawn("py", "ord-joined", _push_args(topic, group, want, 0, 30))
    time.sleep(8)
    require_sent(_produce(ctx, topic, "ordc", 20, mode="orderly"), "ordc", 20)
    res_restarted = ctx.clients.finish(restarted, 80)
    res_joined = ctx.clients.finish(joined, 80)
    for res, what in ((res_restarted, "restarted consumer"), (res_joined, "joined consumer")):
        check(not res.timed_out, "%s hung: %s" % (what, res.describe()))
        queues = check_delivery_order(res, what)
        ctx.note("%s: messages per queue %s" % (what, queues))
    # Together they got everything sent after the first run.
    got = {}
    redelivered_a = 0
    for res in (res_restarted, res_joined):
        for rec in res.of_kind("recv"):
            props = rec.get("props") or {}
            if props.get("origin") == "orda":
                redelivered_a += 1
            elif props.get("origin") in ("ordb", "ordc"):
                got.setdefault(props["origin"], set()).add(int(props["seq"]))
    for prefix in ("ordb", "ordc"):
        missing = sorted(set(range(20)) - got.get(prefix, set()))
        check(not missing, "%s: %d message(s) never arrived at either consumer: %s" % (prefix, len(missing), missing))
    check(res_joined.of_kind("recv"), "the second consumer got no queue (rebalance or locks did not hand over)")
    ctx.note("orda messages redelivered after the restart (at-least-once): %d" % redelivered_a)


@case("filter_tags_or_list_and_star", timeout=200)
def tag_filters(ctx):
    c = ctx.start_cluster()
    topic = "FilterTags"
    c.create_topic(topic)
    n = 30
    require_sent(_produce(ctx, topic, "ftag", n), "ftag", n)
    wanted = {i for i in range(n) if messages.tags(i) in ("Tag0", "Tag2")}
    res = ctx.clients.run("py", "push-or-list", _push_args(topic, "ftag-or", {"ftag": "%d:%d" % (n, len(wanted))},
                                                             60, 2, orderly=False, expression="Tag0||Tag2"), 100)
    check_received(ctx, res, {"ftag": wanted}, what="PushConsumer subscribed to Tag0||Tag2")
    # The broker itself filters: a raw pull with the expression returns only matching records.
    tags = [r["props"].get("TAGS") for r in pull_all(c, topic, "raw-filter", "Tag0 || Tag2")]
    check(sorted(tags) == sorted(messages.tags(i) for i in wanted),
          "raw pulls with Tag0 || Tag2 returned tags %s, want %d of Tag0/Tag2" % (sorted(tags), len(wanted)))
    check(len(pull_all(c, topic, "raw-all", "*")) == n, "raw pulls with * did not return every message")
    res = ctx.clients.run("py", "push-single", _push_args(topic, "ftag-one", {"ftag": "%d:%d" % (n, n // 3)},
                                                            60, 2, orderly=False, expression="Tag1"), 100)
    check_received(ctx, res, {"ftag": {i for i in range(n) if messages.tags(i) == "Tag1"}},
                   what="PushConsumer subscribed to Tag1")
    res = ctx.clients.run("py", "push-star", _push_args(topic, "ftag-all", {"ftag": str(n)}, 60, 2,
                                                          orderly=False, expression="*"), 100)
    check_received(ctx, res, {"ftag": n}, what="PushConsumer subscribed to *")


def parse_records(buf):
    """Stored records (RocketMQ's CommitLog format) -> dicts with topic, physical offset, body, properties."""
    out = []
    pos = 0
    while pos + 8 <= len(buf):
        total, magic = struct.unpack_from(">ii", buf, pos)
        check(total > 0 and pos + total <= len(buf), "bad record size %d at %d of %d" % (total, pos, len(buf)))
        p = pos + 20
        queue_offset, phys, sys_flag, born = struct.unpack_from(">qqiq", buf, p)
        p += 28
        p += 20 if sys_flag & 0x10 else 8
        (store_ts,) = struct.unpack_from(">q", buf, p)
        p += 8
        p += 20 if sys_flag & 0x20 else 8
        p += 12
        (body_len,) = struct.unpack_from(">i", buf, p)
        body = buf[p + 4:p + 4 + body_len]
        p += 4 + body_len
        if magic == -626843477:
            (topic_len,) = struct.unpack_from(">h", buf, p)
            p += 2
        else:
            topic_len = buf[p]
            p += 1
        topic = buf[p:p + topic_len].decode()
        p += topic_len
        (props_len,) = struct.unpack_from(">h", buf, p)
        props_text = buf[p + 2:p + 2 + props_len].decode("utf-8", "replace")
        props = dict(kv.split("\x01", 1) for kv in props_text.split("\x02") if "\x01" in kv)
        out.append({"topic": topic, "phys": phys, "queue_offset": queue_offset, "store_ts": store_ts,
                    "body": body, "props": props, "raw": buf[pos:pos + total]})
        pos += total
    return out


def pull_all(c, topic, group, expression, queues=4):
    """Every record the shard-brokers return to raw PULL_MESSAGEs carrying `expression` (no client-side
    filter), from each one's queues."""
    found = []
    for addr, q in [(addr, q) for addr in c.broker_addrs for q in range(queues)]:
        offset = 0
        for _ in range(100):
            resp = remoting.request(addr, PULL_MESSAGE, {
                "consumerGroup": group, "topic": topic, "queueId": q, "queueOffset": offset, "maxMsgNums": 32,
                "sysFlag": PULL_FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0,
                "subscription": expression, "subVersion": 0, "expressionType": "TAG"})
            if resp.code == 0:
                found.extend(parse_records(resp.body))
            elif resp.code != PULL_RETRY_IMMEDIATELY:
                break
            next_offset = int(resp.ext_fields.get("nextBeginOffset", offset))
            if next_offset <= offset:
                break
            offset = next_offset
    return found


def query(c, topic, key, begin_ms, end_ms, max_num=32):
    """QUERY_MESSAGE asked of every shard-broker: (the codes, the records found, all answers put together)."""
    codes = []
    found = []
    for name, _, resp in c.ask_each(QUERY_MESSAGE, {
            "topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms, "endTimestamp": end_ms}):
        check(resp.code in (0, QUERY_NOT_FOUND), "QUERY_MESSAGE %s of %s answered %d %r"
              % (key, name, resp.code, resp.remark))
        codes.append(resp.code)
        if resp.code == 0:
            records = parse_records(resp.body)
            check(records, "QUERY_MESSAGE %s of %s answered SUCCESS without a message" % (key, name))
            found.extend(records)
    return codes, found


@case("query_by_key_and_view_by_id", timeout=150)
def query_and_view(ctx):
    c = ctx.start_cluster()
    topic = "QueryKeys"
    c.create_topic(topic)
    before_ms = int(time.time() * 1000) - 1000
    n = 12
    require_sent(_produce(ctx, topic, "qk", n), "qk", n)
    after_ms = int(time.time() * 1000) + 1000
    time.sleep(1.5)  # the index is written by dispatch right after the append; leave a margin anyway
    views = []
    for i in (0, 5, 11):
        key = messages.keys("qk", i)
        codes, found = query(c, topic, key, before_ms, after_ms)
        check(len(found) == 1, "QUERY_MESSAGE %s: want 1 message from the shard-brokers, got %d (codes %s)"
              % (key, len(found), codes))
        rec = found[0]
        check(rec["topic"] == topic and rec["body"].decode() == messages.body("qk", i)
              and rec["props"].get("KEYS") == key, "QUERY_MESSAGE %s returned another message: %r" % (key, rec))
        views.append((i, rec))
        # Outside the time range: nothing.
        codes, found = query(c, topic, key, before_ms - 3_600_000, before_ms - 1_800_000)
        check(not found and set(codes) == {QUERY_NOT_FOUND},
              "QUERY_MESSAGE %s for an earlier hour answered %s, want QUERY_NOT_FOUND" % (key, codes))
    codes, found = query(c, topic, "no-such-key", before_ms, after_ms)
    check(not found and set(codes) == {QUERY_NOT_FOUND}, "QUERY_MESSAGE for an unknown key answered %s" % codes)
    # The unique key (the msgId users see) is indexed too.
    i, rec = views[1]
    codes, found = query(c, topic, rec["props"]["UNIQ_KEY"], before_ms, after_ms)
    check(len(found) == 1 and found[0]["raw"] == rec["raw"], "QUERY_MESSAGE by UNIQ_KEY answered %s with %d "
          "message(s)" % (codes, len(found)))
    # VIEW_MESSAGE_BY_ID: the offsetMsgId's physical offset reads back the same stored record, from any
    # shard-broker of the process.
    for i, rec in views:
        for name, addr in c.shard_brokers():
            resp = remoting.request(addr, VIEW_MESSAGE_BY_ID, {"offset": rec["phys"]})
            check(resp.code == 0, "VIEW_MESSAGE_BY_ID %d of %s answered %d %r"
                  % (rec["phys"], name, resp.code, resp.remark))
            check(resp.body == rec["raw"], "VIEW_MESSAGE_BY_ID %d of %s returned other bytes than the query"
                  % (rec["phys"], name))
    for name, addr in c.shard_brokers():
        resp = remoting.request(addr, VIEW_MESSAGE_BY_ID, {"offset": views[-1][1]["phys"] + 10 ** 9})
        check(resp.code != 0, "VIEW_MESSAGE_BY_ID of an offset past the end answered SUCCESS on %s" % name)

"""Interop cases with Apache RocketMQ's Java remoting clients from Maven Central, 4.9.8 (`java_...`) and 5.5.0
(`java5_...`): the same programs in java/, compiled by setup.sh against each. SQL92 property filters through DefaultMQPushConsumer and DefaultLitePullConsumer with
MessageSelector.bySql, the broker's answer when property filters are off, and a differential check of
the broker's SQL92 filter against Apache's own parser and evaluator (5.5.0's filter module) on generated
expressions;
request-reply (DefaultMQProducer.request, sync and async); message queries signed by AclClientRPCHook on
a broker with ACL on; timer messages (the TIMER_DELAY_MS property) delivered to a push consumer."""

import collections
import functools
import json
import os
import random

import remoting
from caselib import case, check
from cases_acl import ADMIN, USER, create_topic_fields, signed_request, start_acl_cluster
from cases_adminstats import _consume_stats

COUNT = 40
# The client of a case: its language in harness.JAVA_SETS and the prefix of its name.
CLIENTS = (("java", "java_"), ("java5", "java5_"))


def each_client(name, timeout):
    """Register `func(ctx, lang)` once per Java client, as `java_<name>` and `java5_<name>`."""
    def register(func):
        for lang, prefix in CLIENTS:
            case(prefix + name, timeout=timeout)(functools.partial(func, lang=lang))
        return func
    return register
PROPERTY_FILTER = {"enablePropertyFilter": "true"}


def _a(i):
    """Property `a` of message i as Sql92Consumer sends it (left out when i % 7 == 6)."""
    return None if i % 7 == 6 else i


def _require_java_ok(result, what):
    errors = result.of_kind("error")
    check(not errors and not result.timed_out and result.code == 0,
          "%s failed: %s %s" % (what, errors[:1], result.describe()))


def _produce(ctx, topic, lang):
    result = ctx.clients.run(lang, "java-produce", ["Sql92Consumer", "produce", ctx.cluster.namesrv_addr, topic,
                                                      str(COUNT)], 90)
    _require_java_ok(result, "Java producer")
    sent = result.of_kind("sent")
    check(len(sent) == COUNT and all(r["status"] == "SEND_OK" for r in sent),
          "Java producer: %d of %d sends SEND_OK: %s" % (len(sent), COUNT, sent[:3]))


def _check_exactly(result, want, what):
    """The consumer received every message of `want` (duplicates allowed) and nothing else."""
    got = collections.Counter(int(r["seq"]) for r in result.of_kind("recv"))
    extra = sorted(set(got) - want)
    missing = sorted(want - set(got))
    check(not extra, "%s: the filter let through %s (want exactly %s)" % (what, extra, sorted(want)))
    check(not missing, "%s: never received %s (want exactly %s; %s)" % (what, missing, sorted(want),
                                                                       result.describe()))
    for r in result.of_kind("recv"):
        i = int(r["seq"])
        check(r.get("body") == "sql-%d" % i and r.get("b") == ("x" if i % 2 == 0 else "y")
              and r.get("a") == (None if _a(i) is None else str(i)),
              "%s: message %d arrived with other properties or body: %s" % (what, i, r))
    return sum(got.values()) - len(got)


def _start(ctx, topic, group, sql, lang):
    result = ctx.clients.run(lang, "java-start-" + group, ["Sql92Consumer", "start", ctx.cluster.namesrv_addr,
                                                             topic, group, sql], 60)
    check(not result.timed_out and result.code == 0, "Java consumer start: %s" % result.describe())
    return (result.of_kind("started") + result.of_kind("start_error") + [None])[0]


@each_client("sql92_push_and_lite_pull_filter_by_properties", timeout=300)
def sql92_push_and_lite(ctx, lang):
    topic = "JavaSql92"
    c = ctx.start_cluster(extra_config=PROPERTY_FILTER)
    c.create_topic(topic)
    _produce(ctx, topic, lang)

    # Push consumer: the broker filters with the expression the heartbeat registered.
    sql = "a > 5 AND b = 'x'"
    want = {i for i in range(COUNT) if _a(i) is not None and i > 5 and i % 2 == 0}
    push = ctx.clients.run(lang, "java-push", ["Sql92Consumer", "push", c.namesrv_addr, topic, "sql-push", sql,
                                                 str(len(want)), "60"], 120)
    _require_java_ok(push, "Java push consumer")
    dups = _check_exactly(push, want, "push consumer %r" % sql)
    # Skipped messages are consumed past: the committed offsets reach the end of every queue (the consumer
    # waits until its own offsets have, up to 30 s: after the last match of a queue that takes a long poll).
    stats = _consume_stats(c, "sql-push", topic)
    behind = {q: w for q, w in stats.items() if w["consumerOffset"] != w["brokerOffset"]}
    check(stats and not behind, "push consumer's committed offsets short of the queue ends: %s" % behind)

    # Lite pull consumer: every pull carries the expression (its compile is cached per shard).
    sql = "a IN ('3', '9', '14') OR a IS NULL"
    want = {3, 9, 14} | {i for i in range(COUNT) if _a(i) is None}
    lite = ctx.clients.run(lang, "java-lite", ["Sql92Consumer", "lite", c.namesrv_addr, topic, "sql-lite", sql,
                                                 str(len(want)), "60"], 120)
    _require_java_ok(lite, "Java lite pull consumer")
    lite_dups = _check_exactly(lite, want, "lite pull consumer %r" % sql)
    ctx.note("push received %d (%d duplicates), lite received %d (%d duplicates); push offsets at the queue ends "
             "after %s" % (len(push.of_kind("recv")), dups, len(lite.of_kind("recv")), lite_dups,
                           push.of_kind("offsets")))

    # An expression Apache refuses to build: start() fails with the broker's SUBSCRIPTION_PARSE_FAILED.
    started = _start(ctx, topic, "sql-bad", "a > 'x'", lang)
    check(started and started["kind"] == "start_error" and started["code"] == 23,
          "a consumer with an invalid SQL92 filter was not refused with code 23: %s" % started)
    ctx.note("invalid filter refused: %s" % started["message"])


@each_client("sql92_refused_when_property_filter_off", timeout=120)
def sql92_off(ctx, lang):
    topic = "JavaSql92Off"
    c = ctx.start_cluster()
    c.create_topic(topic)
    started = _start(ctx, topic, "sql-off", "a > 5", lang)
    check(started and started["kind"] == "start_error" and started["code"] == 1
          and "does not support consumer to filter message by SQL92" in started["message"],
          "with enablePropertyFilter off a SQL92 consumer must be refused with SYSTEM_ERROR: %s" % started)


# ---- differential check against Apache's evaluator -------------------------------------------------

_PROPS = ["a", "b", "c"]
_VALUES = ["0", "1", "5", "-3", "7", "10", "42", "7.5", "1e2", "+3", "007", "-0", "x", "y", "abc", "true",
           "TRUE", "false", "NaN", "Infinity", "2147483648", "9223372036854775808", "1.5f", " 5", "5 ", "0x10",
           "it's", "1_0"]
_LITERALS = ["0", "1", "5", "7", "10", "2147483647", "2147483648", "9223372036854775807", "5L", "1.5", ".5",
             "5.", "1e1", "7.5", "'5'", "'x'", "'y'", "''", "'it''s'", "'true'", "'7.5'", "TRUE", "FALSE",
             "NULL", "0.0", "1e400", "007"]
_HAND_PICKED = [
    "a > 5", "a > 5.0", "a = 5", "a = '5'", "a <> 5", "a = b", "a > b", "zz = yy", "zz IS NULL",
    "a IS NOT NULL", "NOT a = 1", "a", "NOT a", "TRUE", "NULL", "NOT NULL", "a BETWEEN 1 AND 10",
    "a NOT BETWEEN 1 AND 10", "a BETWEEN 10 AND 1", "a NOT BETWEEN 10 AND 1", "a BETWEEN -5 AND -10",
    "a IN ('5', '7')", "a NOT IN ('5')", "b = 'x' OR a > 5", "a > 5 OR b = 'x'", "-a < 0", "-a IS NULL",
    "a = TRUE", "'true' = TRUE", "TRUE = 'x'", "a = NULL", "a > 0.0", "a > 'x'", "a = 1 b = 2", "a = 1 #",
    "a = 1 -- c\n OR b = 'x'", "a = 1 /* c */ OR b = 'x'", "(a = 1", "a = 1)", "a IS 5", "a == 1",
    "a != 1", "a = 1 AND", "5 IS NULL", "a = 1 = 2", "(a = 1) = TRUE", "a >= 2147483648",
    "a = 9223372036854775808", "a < 9223372036854775807", "NOT (a > 5 AND b = 'y')", "a = 5L", "a = 007",
]


def _gen_atom(rng, depth):
    r = rng.random()
    if r < 0.45:
        return rng.choice(_PROPS + ["zz"])
    if r < 0.85 or depth > 3:
        return rng.choice(_LITERALS)
    if r < 0.93:
        return "-" + _gen_atom(rng, depth + 1)
    return "(" + _gen_atom(rng, depth + 1) + ")"


def _gen_condition(rng, depth):
    r = rng.random()
    if r < 0.35:
        return "%s %s %s" % (_gen_atom(rng, depth), rng.choice(["=", "<>", ">", ">=", "<", "<="]),
                             _gen_atom(rng, depth))
    if r < 0.5:
        return "%s %sBETWEEN %s AND %s" % (_gen_atom(rng, depth), rng.choice(["", "NOT "]),
                                           _gen_atom(rng, depth), _gen_atom(rng, depth))
    if r < 0.62:
        items = ", ".join(rng.choice(["'%s'" % v.replace("'", "''") for v in _VALUES[:12]])
                          for _ in range(rng.randint(1, 6)))
        return "%s %sIN (%s)" % (rng.choice(_PROPS + ["zz", "5"]), rng.choice(["", "NOT "]), items)
    if r < 0.72:
        return "%s IS %sNULL" % (_gen_atom(rng, depth), rng.choice(["", "NOT "]))
    if r < 0.8:
        return rng.choice(_PROPS + ["TRUE", "FALSE", "NULL"])
    if r < 0.9 and depth < 4:
        return "NOT " + _gen_condition(rng, depth + 1)
    if depth < 4:
        return "(" + _gen_expr(rng, depth + 1) + ")"
    return rng.choice(_PROPS)


def _gen_expr(rng, depth=0):
    terms = [_gen_condition(rng, depth) for _ in range(rng.choice([1, 1, 2, 3]))]
    expr = terms[0]
    for t in terms[1:]:
        expr = "%s %s %s" % (expr, rng.choice(["AND", "OR", "and", "Or"]), t)
    return expr


def _mutate(rng, expr):
    """Damage an expression a little: Apache and we must agree on what still parses."""
    tokens = expr.split(" ")
    i = rng.randrange(len(tokens))
    op = rng.random()
    if op < 0.4:
        del tokens[i]
    elif op < 0.8:
        tokens.insert(i, rng.choice(["(", ")", "AND", "OR", "NOT", ",", "=", "IN", "IS", "'x'", "5", "a", "#"]))
    else:
        tokens[i] = rng.choice(["BETWEEN", "NULL", "-", "+", "<>", "b"])
    return " ".join(tokens)


def _cases(seed, count):
    rng = random.Random(seed)
    props = []
    for _ in range(24):
        # The Java client refuses blank property values; it sends the rest as they are.
        props.append({k: rng.choice(_VALUES) for k in _PROPS if rng.random() < 0.75})
    exprs = list(_HAND_PICKED)
    while len(exprs) < count:
        expr = _gen_expr(rng)
        if rng.random() < 0.2:
            expr = _mutate(rng, expr)
        # The Java client itself refuses a blank expression before asking the broker.
        if expr.strip():
            exprs.append(expr)
    return {"props": props, "exprs": exprs}


# Maven serves Apache's filter module with the 5.x broker, not for 4.9.8: the 5.5.0 client runs this one.
@case("java5_sql92_same_as_apache_evaluator", timeout=300)
def sql92_differential(ctx):
    topic = "JavaSql92Diff"
    c = ctx.start_cluster(extra_config=PROPERTY_FILTER)
    c.create_topic(topic, queue_nums=1)
    seed = int(os.environ.get("SQL92_DIFF_SEED", "9217"))
    cases = _cases(seed, int(os.environ.get("SQL92_DIFF_COUNT", "1000")))
    path = os.path.join(ctx.workdir, "sql92-cases.json")
    with open(path, "w") as f:
        json.dump(cases, f)
    result = ctx.clients.run("java5", "java-sql92-diff", ["Sql92Diff", c.namesrv_addr, topic, "sql-diff", path], 240)
    _require_java_ok(result, "Sql92Diff")
    diffs = result.of_kind("diff")
    check(len(diffs) == len(cases["exprs"]), "Sql92Diff compared %d of %d expressions: %s"
          % (len(diffs), len(cases["exprs"]), result.describe()))
    differ = [d for d in diffs if d["apache"] != d["ours"]]
    shown = "\n".join("  %r: apache %s, ours %s" % (d["sql"], d["apache"], d["ours"]) for d in differ[:10])
    check(not differ, "%d of %d expressions filter differently from Apache's evaluator (seed %d):\n%s"
          % (len(differ), len(diffs), seed, shown))
    refused = sum(1 for d in diffs if d["apache"] == "error")
    matched_some = sum(1 for d in diffs if d["apache"] not in ("error", []))
    ctx.note("%d expressions (seed %d): %d refused by both, %d matching some messages, the rest none"
             % (len(diffs), seed, refused, matched_some))


# ---- broker shards ---------------------------------------------------------------------------------

def _java_string_hash(s):
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split(" "):
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _owner_shard(topic, queue_id, shards):
    """The broker shard that owns a queue (broker/src/shard/ownership.rs)."""
    return ((_java_string_hash(topic) + queue_id) & 0xFFFFFFFF) % shards if shards > 1 else 0


def _shard_of(c, topic, rec):
    """The broker shard that holds the queue of a record carrying the client's `broker` and `queue_id`: with
    shardRouting = direct the shard-broker's own (`<brokerName>-<shard>`), else the owner of the queue id."""
    check(rec.get("broker") in c.broker_names, "a queue of broker %r, not one of %s: %s"
          % (rec.get("broker"), c.broker_names, rec))
    if len(c.broker_names) > 1:
        return c.broker_names.index(rec["broker"])
    return _owner_shard(topic, rec["queue_id"], c.shard_count)


# ---- request-reply ---------------------------------------------------------------------------------

REQUEST_TIMEOUT_MS = 5000


@each_client("request_reply_sync_and_async", timeout=300)
def request_reply(ctx, lang):
    topic = "JavaRequest"
    c = ctx.start_cluster()
    c.create_topic(topic)
    n = 8
    # Every request is answered: n sync, n async and one warm-up.
    responder = ctx.clients.spawn(lang, "java-responder", ["RequestReply", "respond", c.namesrv_addr, topic,
                                                             "responder", str(2 * n + 1), "150"])
    requester = ctx.clients.run(lang, "java-requester", ["RequestReply", "request", c.namesrv_addr, topic,
                                                           str(n), str(REQUEST_TIMEOUT_MS)], 170)
    answered = ctx.clients.finish(responder, 60)
    _require_java_ok(requester, "Java requester")
    _require_java_ok(answered, "Java responder")
    failed = requester.of_kind("request_error")
    check(not failed, "%d request(s) got no reply, first: %s" % (len(failed), failed[:2]))
    cluster = "DefaultCluster"
    reply_topic = cluster + "_REPLY_TOPIC"

    replies = requester.of_kind("reply")
    by_request = collections.defaultdict(list)
    for r in replies:
        by_request[r["request"]].append(r)
    for i in range(n):
        got = by_request.get("sync-%d" % i, [])
        check(len(got) == 1, "sync request %d: %d replies (want 1): %s" % (i, len(got), got))
        # The 4.9.8 client calls an async request's callback twice (also when the send succeeds, with
        # the reply if it came first, else null): once or twice with the reply, never another message.
        got = by_request.get("async-%d" % i, [])
        check(1 <= len(got) <= 2, "async request %d: %d replies (want 1 or 2): %s" % (i, len(got), got))
    check(by_request.get("warmup"), "the warm-up request got no reply: %s" % requester.describe())
    for r in replies:
        check(r.get("body") == "reply:" + r["request"],
              "request %r answered with another body: %r" % (r["request"], r.get("body")))
        check(r.get("request_correlation") and r.get("reply_correlation") == r["request_correlation"],
              "request %r: reply CORRELATION_ID %r, request's %r" % (r["request"], r.get("reply_correlation"),
                                                                    r.get("request_correlation")))
        check(r.get("reply_topic") == reply_topic, "request %r: reply on topic %r, want %r"
              % (r["request"], r["reply_topic"], reply_topic))
        if r["mode"] != "warmup":
            check(r["ms"] <= REQUEST_TIMEOUT_MS, "request %r: reply after %d ms (timeout %d)"
                  % (r["request"], r["ms"], REQUEST_TIMEOUT_MS))

    # The responder saw each request with the broker's CLUSTER and replied to <cluster>_REPLY_TOPIC, on
    # queues owned by every broker shard.
    check(not answered.of_kind("reply_error"), "the responder's reply sends failed: %s"
          % answered.of_kind("reply_error")[:2])
    seen = answered.of_kind("replied")
    check(len(seen) >= 2 * n + 1, "the responder answered %d of %d requests" % (len(seen), 2 * n + 1))
    bad = [r for r in seen if r.get("cluster") != cluster or r.get("reply_topic") != reply_topic
           or r.get("status") != "SEND_OK"]
    check(not bad, "requests without CLUSTER=%s, or replies not SEND_OK to %s: %s" % (cluster, reply_topic, bad[:2]))
    shards = {_shard_of(c, topic, r) for r in seen}
    check(len(shards) == c.shard_count, "requests only reached queues of shard(s) %s of %d"
          % (sorted(shards), c.shard_count))
    ms = sorted(r["ms"] for r in replies if r["mode"] != "warmup")
    ctx.note("%d replies (sync and async), queues %s, reply time median %d ms, max %d ms; warm-up %d ms; "
             "async callbacks: %d repeated with the reply, %d with null"
             % (len(ms), sorted({(r["broker"], r["queue_id"]) for r in seen}), ms[len(ms) // 2], ms[-1],
                by_request["warmup"][0]["ms"], len(replies) - 1 - 2 * n, len(requester.of_kind("null_reply"))))


# ---- queries through ACL ---------------------------------------------------------------------------

@each_client("acl_signed_queries", timeout=240)
def acl_queries(ctx, lang):
    c = start_acl_cluster(ctx)
    topic = "AclTopic"
    resp = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields(topic), ADMIN)
    check(resp.code == 0, "admin topic creation answered %d %r" % (resp.code, resp.remark))
    c.wait_route(topic)
    n = 4
    result = ctx.clients.run(lang, "java-acl-query", ["AclQuery", c.namesrv_addr, topic, USER[0], USER[1],
                                                        "not-the-secret", str(n)], 180)
    _require_java_ok(result, "AclQuery")
    sent = result.of_kind("sent")
    check(len(sent) == n and all(r["status"] == "SEND_OK" for r in sent),
          "signed Java producer: %d of %d sends SEND_OK: %s" % (len(sent), n, sent[:3]))

    def one(kind, keys, i):
        recs = [r for r in result.of_kind(kind) if r["keys"] == keys and r["i"] == i]
        check(len(recs) == 1, "%s with the %s keys for message %d: %d answers (%s)"
              % (kind, keys, i, len(recs), result.describe()))
        return recs[0]

    for i in range(n):
        body = "aclq-%d" % i
        q = one("query_key", "right", i)
        check(q.get("bodies") == [body], "queryMessage(topic, key %d) with the right keys: %s" % (i, q))
        v = one("view_unique", "right", i)
        check(v.get("body") == body, "viewMessage(topic, msgId %d) with the right keys: %s" % (i, v))
        v = one("view_offset", "right", i)
        check(v.get("body") == body, "viewMessage(offsetMsgId %d) with the right keys: %s" % (i, v))
        raw = one("raw_unique_query", "right", i)
        sent_to = [s for s in sent if s["i"] == i][0]["broker"]
        check(raw.get("broker_addr") == dict(c.shard_brokers()).get(sent_to),
              "the unique-key QUERY_MESSAGE for message %d went to %s, not to %s where it was sent (%s)"
              % (i, raw.get("broker_addr"), sent_to, c.shard_brokers()))
        check(raw["code"] == 0 and raw.get("bodies") and set(raw["bodies"]) == {body},
              "QUERY_MESSAGE _UNIQUE_KEY_QUERY=true for message %d with the right keys answered %s %r, bodies %s"
              % (i, raw["code"], raw.get("remark"), raw.get("bodies")))

    # A wrong secret: nothing comes back. queryMessage and the unique-key query hide the broker's
    # answer behind "no message"; VIEW_MESSAGE_BY_ID and the raw request show the reason.
    refusal = "Check signature failed for accessKey=%s" % USER[0]
    for kind in ("query_key", "view_unique"):
        r = one(kind, "wrong", 0)
        check(r.get("error") and not r.get("bodies") and not r.get("body"),
              "%s with a wrong secret returned messages: %s" % (kind, r))
    v = one("view_offset", "wrong", 0)
    if lang == "java":
        check(v.get("error") and refusal in v.get("message", ""),
              "viewMessage(offsetMsgId) with a wrong secret was not refused with %r: %s" % (refusal, v))
    else:
        # The 5.x client's viewMessage(topic, msgId) falls back to a query by key when VIEW_MESSAGE_BY_ID
        # fails, which hides the refusal behind "no message" too.
        check(v.get("error") and not v.get("body"),
              "viewMessage(topic, offsetMsgId) with a wrong secret returned a message: %s" % v)
    raw = one("raw_unique_query", "wrong", 0)
    check(raw["code"] != 0 and refusal in (raw.get("remark") or "") and not raw.get("bodies"),
          "QUERY_MESSAGE _UNIQUE_KEY_QUERY=true with a wrong secret answered %s %r" % (raw["code"], raw.get("remark")))
    ctx.note("wrong secret: VIEW_MESSAGE_BY_ID refused with code %s, unique-key QUERY_MESSAGE with code %s %r"
             % (v["code"], raw["code"], raw.get("remark")))


# ---- timer messages --------------------------------------------------------------------------------

TIMER_DELAY_MS = 2000
# A timer fires at its due time, never before; this bounds how late it may reach the consumer.
TIMER_LATE_MS = 3000


@each_client("timer_delay_ms_property", timeout=240)
def timer_delay_ms(ctx, lang):
    topic = "JavaTimer"
    c = ctx.start_cluster()
    c.create_topic(topic)
    n = 8
    result = ctx.clients.run(lang, "java-timer", ["TimerMessages", c.namesrv_addr, topic, "timer-group", str(n),
                                                    str(TIMER_DELAY_MS), "90"], 150)
    _require_java_ok(result, "TimerMessages")
    sent = {r["body"]: r for r in result.of_kind("sent")}
    check(len(sent) == 2 * n and all(r["status"] == "SEND_OK" for r in sent.values()),
          "Java producer: %d of %d sends SEND_OK: %s" % (len(sent), 2 * n, list(sent.values())[:3]))
    first = {}
    for r in result.of_kind("recv"):
        first.setdefault(r["body"], r)
        check(r["body"] in sent, "the consumer received a message never sent: %s" % r)
    missing = sorted(set(sent) - set(first))
    check(not missing, "never received %s (%s)" % (missing, result.describe()))
    for body, r in first.items():
        kind, i = body.split("-")
        check(r.get("topic") == topic and r.get("queue_id") == sent[body]["queue_id"] and r.get("seq") == i
              and r.get("broker") == sent[body]["broker"],
              "%s arrived on %s queue %s of %s with seq %r, sent to queue %s of %s"
              % (body, r.get("topic"), r.get("queue_id"), r.get("broker"), r.get("seq"), sent[body]["queue_id"],
                 sent[body]["broker"]))
        if kind == "timer":
            check(r["after_send_ms"] >= TIMER_DELAY_MS,
                  "%s (TIMER_DELAY_MS=%d) arrived %d ms after its send: early" % (body, TIMER_DELAY_MS,
                                                                                  r["after_send_ms"]))
            check(r["after_send_ms"] <= TIMER_DELAY_MS + TIMER_LATE_MS,
                  "%s (TIMER_DELAY_MS=%d) arrived %d ms after its send (allowed %d)"
                  % (body, TIMER_DELAY_MS, r["after_send_ms"], TIMER_DELAY_MS + TIMER_LATE_MS))
        else:
            # Sent after the timers, these show the consumer was pulling all along.
            check(r["after_send_ms"] < TIMER_DELAY_MS, "plain message %s took %d ms" % (body, r["after_send_ms"]))
    shards = {_shard_of(c, topic, sent[b]) for b in sent if b.startswith("timer")}
    check(len(shards) == c.shard_count, "timer messages only went to queues of shard(s) %s" % sorted(shards))
    late = sorted(first[b]["after_send_ms"] - TIMER_DELAY_MS for b in first if b.startswith("timer"))
    plain = sorted(first[b]["after_send_ms"] for b in first if b.startswith("plain"))
    dups = len(result.of_kind("recv")) - len(first)
    ctx.note("timer messages arrived %d..%d ms after due (median %d); plain ones %d..%d ms after send; %d duplicates"
             % (late[0], late[-1], late[len(late) // 2], plain[0], plain[-1], dups))

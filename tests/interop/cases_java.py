"""Interop cases with Apache RocketMQ 4.9.8's Java client (the shared kit; programs in java/, compiled by
setup.sh): SQL92 property filters through DefaultMQPushConsumer and DefaultLitePullConsumer with
MessageSelector.bySql, the broker's answer when property filters are off, and a differential check of
the broker's SQL92 filter against Apache's own parser and evaluator on generated expressions."""

import collections
import json
import os
import random

from caselib import case, check
from cases_adminstats import _consume_stats

COUNT = 40
PROPERTY_FILTER = {"enablePropertyFilter": "true"}


def _a(i):
    """Property `a` of message i as Sql92Consumer sends it (left out when i % 7 == 6)."""
    return None if i % 7 == 6 else i


def _require_java_ok(result, what):
    errors = result.of_kind("error")
    check(not errors and not result.timed_out and result.code == 0,
          "%s failed: %s %s" % (what, errors[:1], result.describe()))


def _produce(ctx, topic):
    result = ctx.clients.run("java", "java-produce", ["Sql92Consumer", "produce", ctx.cluster.namesrv_addr, topic,
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


def _start(ctx, topic, group, sql):
    result = ctx.clients.run("java", "java-start-" + group, ["Sql92Consumer", "start", ctx.cluster.namesrv_addr,
                                                             topic, group, sql], 60)
    check(not result.timed_out and result.code == 0, "Java consumer start: %s" % result.describe())
    return (result.of_kind("started") + result.of_kind("start_error") + [None])[0]


@case("java_sql92_push_and_lite_pull_filter_by_properties", timeout=300)
def sql92_push_and_lite(ctx):
    topic = "JavaSql92"
    c = ctx.start_cluster(extra_config=PROPERTY_FILTER)
    c.create_topic(topic)
    _produce(ctx, topic)

    # Push consumer: the broker filters with the expression the heartbeat registered.
    sql = "a > 5 AND b = 'x'"
    want = {i for i in range(COUNT) if _a(i) is not None and i > 5 and i % 2 == 0}
    push = ctx.clients.run("java", "java-push", ["Sql92Consumer", "push", c.namesrv_addr, topic, "sql-push", sql,
                                                 str(len(want)), "60"], 120)
    _require_java_ok(push, "Java push consumer")
    dups = _check_exactly(push, want, "push consumer %r" % sql)
    # Skipped messages are consumed past: the committed offsets reach the end of every queue.
    stats = _consume_stats(c.broker_addr, "sql-push", topic)
    behind = {q: w for q, w in stats.items() if w["consumerOffset"] != w["brokerOffset"]}
    check(stats and not behind, "push consumer's committed offsets short of the queue ends: %s" % behind)

    # Lite pull consumer: every pull carries the expression (its compile is cached per shard).
    sql = "a IN ('3', '9', '14') OR a IS NULL"
    want = {3, 9, 14} | {i for i in range(COUNT) if _a(i) is None}
    lite = ctx.clients.run("java", "java-lite", ["Sql92Consumer", "lite", c.namesrv_addr, topic, "sql-lite", sql,
                                                 str(len(want)), "60"], 120)
    _require_java_ok(lite, "Java lite pull consumer")
    lite_dups = _check_exactly(lite, want, "lite pull consumer %r" % sql)
    ctx.note("push received %d (%d duplicates), lite received %d (%d duplicates)"
             % (len(push.of_kind("recv")), dups, len(lite.of_kind("recv")), lite_dups))

    # An expression Apache refuses to build: start() fails with the broker's SUBSCRIPTION_PARSE_FAILED.
    started = _start(ctx, topic, "sql-bad", "a > 'x'")
    check(started and started["kind"] == "start_error" and started["code"] == 23,
          "a consumer with an invalid SQL92 filter was not refused with code 23: %s" % started)
    ctx.note("invalid filter refused: %s" % started["message"])


@case("java_sql92_refused_when_property_filter_off", timeout=120)
def sql92_off(ctx):
    topic = "JavaSql92Off"
    c = ctx.start_cluster()
    c.create_topic(topic)
    started = _start(ctx, topic, "sql-off", "a > 5")
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


@case("java_sql92_same_as_apache_evaluator", timeout=300)
def sql92_differential(ctx):
    topic = "JavaSql92Diff"
    c = ctx.start_cluster(extra_config=PROPERTY_FILTER)
    c.create_topic(topic, queue_nums=1)
    seed = int(os.environ.get("SQL92_DIFF_SEED", "9217"))
    cases = _cases(seed, int(os.environ.get("SQL92_DIFF_COUNT", "1000")))
    path = os.path.join(ctx.workdir, "sql92-cases.json")
    with open(path, "w") as f:
        json.dump(cases, f)
    result = ctx.clients.run("java", "java-sql92-diff", ["Sql92Diff", c.namesrv_addr, topic, "sql-diff", path], 240)
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

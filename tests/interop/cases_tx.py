"""Interop cases for transactional messages with rocketmq-client-rust 1.0.0's TransactionMQProducer.

Commit visible once, rollback never visible, Unknown -> check-back -> commit, a SIGKILL of the broker between
prepare and commit, and a transaction left Unknown rolled back after transactionCheckMax check-backs. The
broker runs with short transaction timings (see TX_TIMINGS) so the cases stay quick.

With shardRouting = direct each shard is a broker with its own queues and its own half queue: visible counts
add up every shard-broker's queues, and a repeated END_TRANSACTION goes where the half message was stored.
"""

import os
import re
import time

import harness
import remoting
from caselib import case, check, check_received, require_ok

GET_MAX_OFFSET = 30
END_TRANSACTION = 37
COMMIT = 8

# transactionTimeOut / transactionCheckInterval in ms.
TX_TIMINGS = {"transactionTimeOut": "1000", "transactionCheckInterval": "1500", "transactionCheckMax": "3"}


def start_tx_cluster(ctx, extra=None, flush_disk_type="ASYNC_FLUSH"):
    """Like ctx.start_cluster, with more broker config keys appended."""
    c = harness.Cluster(os.path.join(ctx.workdir, "cluster"), flush_disk_type=flush_disk_type)
    os.makedirs(c.workdir, exist_ok=True)
    write_config = c._broker_config
    settings = dict(TX_TIMINGS, **(extra or {}))

    def config_with_tx_keys():
        path = write_config()
        with open(path, "a") as f:
            f.write("".join("%s = %s\n" % kv for kv in settings.items()))
        return path

    c._broker_config = config_with_tx_keys
    ctx.cluster = c
    ctx.clients = harness.Clients(ctx.workdir, c)
    c.start()
    return c


def visible_count(cluster, topic, queues=4):
    """Messages consumers can see in `topic`: the sum of its queues' max offsets on every shard-broker."""
    return sum(cluster.max_offsets(topic, queues).values())


def stored_at(offset_msg_id):
    """The broker address an offsetMsgId names (IPv4 and port, 8 hex digits each, then the offset)."""
    ip = ".".join(str(int(offset_msg_id[i:i + 2], 16)) for i in range(0, 8, 2))
    return "%s:%d" % (ip, int(offset_msg_id[8:16], 16))


def tx_args(topic, group, prefix, count, mode, timeout, checks=0):
    return ["transaction", "--topic", topic, "--group", group, "--prefix", prefix, "--count", str(count),
            "--mode", mode, "--timeout", str(timeout), "--checks", str(checks)]


def require_tx_sent(result, prefix, count):
    require_ok(result, "transaction producer %s" % prefix)
    sent = {r["i"]: r for r in result.of_kind("sent")}
    missing = [i for i in range(count) if i not in sent]
    check(not missing, "transaction producer %s: no send result for %s" % (prefix, missing[:5]))
    bad = [(i, r["status"]) for i, r in sent.items() if r["status"] != "SendOk"]
    check(not bad, "transaction producer %s: half messages not stored: %s" % (prefix, bad[:5]))
    return sent


def checks_by_seq(result):
    seen = {}
    for rec in result.of_kind("check"):
        seen[int(rec["seq"])] = seen.get(int(rec["seq"]), 0) + 1
    return seen


def consume(ctx, topic, group, want, timeout=60):
    args = ["consume", "--topic", topic, "--group", group, "--timeout", str(timeout)]
    for prefix, count in want.items():
        args += ["--expect", "%s:%d" % (prefix, count)]
    res = ctx.clients.run("rust", "rs-consume-%s" % group, args, timeout + 40)
    check(not res.timed_out, "consumer hung: %s" % res.describe())
    return res


def wait_for(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise harness.CaseFailure("%s not seen within %ss" % (what, timeout))


@case("tx_commit_once_rollback_never", timeout=240)
def commit_and_rollback(ctx):
    c = start_tx_cluster(ctx)
    topic = "TxCommit"
    c.create_topic(topic)
    n = 10
    sent = require_tx_sent(ctx.clients.run("rust", "tx-commit", tx_args(topic, "txg", "txc", n, "commit", 30), 90),
                           "txc", n)
    require_tx_sent(ctx.clients.run("rust", "tx-rollback", tx_args(topic, "txg", "txr", n, "rollback", 30), 90),
                    "txr", n)
    # END_TRANSACTION is oneway: wait until the commits are visible.
    wait_for(lambda: visible_count(c, topic) >= n, 20, "%d committed messages" % n)
    # A second commit of the same half message (as a retried or late END_TRANSACTION, sent to the broker that
    # stored it, as the client does) changes nothing.
    first = sent[0]
    offset = int(first["offset_msg_id"][16:], 16)
    half_at = stored_at(first["offset_msg_id"])
    check(half_at in c.broker_addrs, "offsetMsgId %s names %s, not one of %s"
          % (first["offset_msg_id"], half_at, c.broker_addrs))
    resp = remoting.request(half_at, END_TRANSACTION, {
        "producerGroup": "txg-producer", "tranStateTableOffset": first["offset"], "commitLogOffset": offset,
        "commitOrRollback": COMMIT, "fromTransactionCheck": "false", "msgId": first["msg_id"]})
    check(resp.code == 0, "repeated END_TRANSACTION answered %d %r" % (resp.code, resp.remark))
    time.sleep(3)  # past transactionTimeOut: the check service must not revive anything either
    check(visible_count(c, topic) == n, "expected exactly %d visible messages, found %d"
          % (n, visible_count(c, topic)))
    # Rolled-back messages never arrive (they would be unexpected records).
    res = consume(ctx, topic, "txg-consumer", {"txc": n})
    dups, _ = check_received(ctx, res, {"txc": n}, what="push consumer")


def unknown_then_commit(ctx, env):
    c = start_tx_cluster(ctx)
    topic = "TxCheck"
    c.create_topic(topic)
    n = 5
    res = ctx.clients.run("rust", "tx-unknown-commit",
                          tx_args(topic, "txk", "txk", n, "unknown-commit", 60, checks=n), 110, env=env)
    require_tx_sent(res, "txk", n)
    checks = checks_by_seq(res)
    check(sorted(checks) == list(range(n)), "check-backs seen for %s, want every one of 0..%d: %s"
          % (sorted(checks), n - 1, res.describe()))
    wait_for(lambda: visible_count(c, topic) >= n, 20, "%d messages committed on check-back" % n)
    time.sleep(3)
    check(visible_count(c, topic) == n, "expected exactly %d visible, found %d" % (n, visible_count(c, topic)))
    got = consume(ctx, topic, "txk-consumer", {"txk": n})
    check_received(ctx, got, {"txk": n}, what="push consumer")
    ctx.note("check-backs per message: %s" % checks)


# JSON headers, and ROCKETMQ binary headers (the client library reads the variable itself).
case("tx_unknown_then_commit_on_check_json", timeout=240)(lambda ctx: unknown_then_commit(ctx, {}))
case("tx_unknown_then_commit_on_check_rocketmq", timeout=240)(
    lambda ctx: unknown_then_commit(ctx, {"ROCKETMQ_SERIALIZE_TYPE": "ROCKETMQ"}))


@case("tx_unresolved_rolled_back_after_max_checks", timeout=240)
def unresolved_rolled_back(ctx):
    c = start_tx_cluster(ctx, {"transactionCheckMax": "2"})
    topic = "TxGiveUp"
    c.create_topic(topic)
    n = 3
    # Timeout 1 s, then 2 checks 1.5 s apart, then the rollback: stay up well past that.
    res = ctx.clients.run("rust", "tx-unknown", tx_args(topic, "txu", "txu", n, "unknown", 14), 80)
    require_tx_sent(res, "txu", n)
    checks = checks_by_seq(res)
    check(checks == {i: 2 for i in range(n)}, "want exactly 2 check-backs per message, got %s" % checks)
    check(visible_count(c, topic) == 0, "a transaction never committed became visible")
    log = open(os.path.join(c.workdir, "broker.log"), errors="replace").read()
    check(log.count("rolled back") >= n, "the broker did not report %d rollbacks after the last check" % n)
    ctx.note("check-backs per message: %s" % checks)


@case("tx_sigkill_between_prepare_and_commit", timeout=300)
def sigkill_between_prepare_and_commit(ctx):
    # The first check comes after 5 s: the broker is killed before it; the producer is asked after the restart
    # (once it has sent a heartbeat to the new broker, up to 30 s later), commits, and each message is visible.
    c = start_tx_cluster(ctx, {"transactionTimeOut": "5000", "transactionCheckInterval": "2000",
                               "transactionCheckMax": "40"}, flush_disk_type="SYNC_FLUSH")
    topic = "TxRestart"
    c.create_topic(topic)
    n = 5
    proc = ctx.clients.spawn("rust", "tx-restart", tx_args(topic, "txs", "txs", n, "unknown-commit", 150, checks=n))
    jsonl = proc.base + ".jsonl"
    wait_for(lambda: len([r for r in harness.read_records(jsonl) if r.get("kind") == "sent"]) >= n, 60,
             "%d half messages sent" % n)
    check(not [r for r in harness.read_records(jsonl) if r.get("kind") == "check"],
          "a check-back came before the broker was killed; the case cannot test the restart")
    check(visible_count(c, topic) == 0, "half messages were visible before the commit")
    c.kill_broker()
    c.start_broker()
    res = ctx.clients.finish(proc, 170)
    require_tx_sent(res, "txs", n)
    checks = checks_by_seq(res)
    check(sorted(checks) == list(range(n)), "check-backs after the restart for %s, want 0..%d: %s"
          % (sorted(checks), n - 1, res.describe()))
    wait_for(lambda: visible_count(c, topic) >= n, 20, "%d messages committed after the restart" % n)
    time.sleep(3)
    check(visible_count(c, topic) == n, "expected exactly %d visible, found %d" % (n, visible_count(c, topic)))
    got = consume(ctx, topic, "txs-consumer", {"txs": n})
    check_received(ctx, got, {"txs": n}, what="push consumer")
    # A committed transaction survives another SIGKILL, and is not committed again.
    c.kill_broker()
    c.start_broker()
    time.sleep(4)
    log = open(os.path.join(c.workdir, "broker.log"), errors="replace").read()
    last_start = log.rsplit("===== broker start", 1)[-1]
    # One line per shard ("shard S: transactions: N resolved, ..."); each shard-broker has its own half queue.
    resolved = re.findall(r"shard (\d+): transactions: (\d+) resolved", last_start)
    check(sum(int(r) for _, r in resolved) >= n, "after the second restart the broker did not load the %d "
          "resolutions from the op queues: %s" % (n, resolved or "no transactions line"))
    check(visible_count(c, topic) == n, "after a second SIGKILL: expected %d visible, found %d"
          % (n, visible_count(c, topic)))
    ctx.note("check-backs per message: %s" % checks)

"""Interop cases driving the official Go client, github.com/apache/rocketmq-client-go/v2 (remoting, JSON headers,
language GO), through the program in go-client/ (built by go-client/build.sh).

The client (v2.1.2) does not flag its oneway requests oneway, so brokers answer them, and its producer's Shutdown
closes the connection at once: with those answers unread the kernel resets it and drops whatever of the last sends
it had not transmitted yet. The program pauses 500 ms before Shutdown after oneway sends (`--linger-ms`), so that
loss, the client's own, stays out of the oneway check. The broker's part (it handles every request that reached
it, though the answers can no longer be written) is tested in remoting/tests/peer_gone.rs.
"""

import collections
import json
import os
import time

import harness
import messages
import remoting
from caselib import case, check, check_queue_order, check_received, check_sharding, queue_key, require_ok, require_sent
from cases_acl import ADMIN, USER, create_topic_fields, signed_request, start_acl_cluster
from cases_tx import start_tx_cluster, visible_count, wait_for

N = 40
SEND_OK = ("SEND_OK",)


def _produce(ctx, topic, prefix, count, mode="sync", extra=(), keys=None, timeout=90):
    args = ["produce", "--topic", topic, "--prefix", prefix, "--count", str(count), "--mode", mode] + list(extra)
    return ctx.clients.run("go", "go-produce-%s-%s" % (mode, prefix), _with_keys(args, keys), timeout)


def _consume_args(kind, topic, group, want=None, timeout=60, linger=1.0, expect_file=None, keys=None, extra=()):
    args = [kind, "--topic", topic, "--group", group, "--timeout", str(timeout), "--linger", str(linger)]
    for prefix, count in (want or {}).items():
        args += ["--expect", "%s:%d" % (prefix, count)]
    if expect_file:
        args += ["--expect-file", expect_file]
    return _with_keys(args + list(extra), keys)


def _consume(ctx, kind, topic, group, want=None, timeout=60, linger=1.0, expect_file=None, keys=None, extra=()):
    args = _consume_args(kind, topic, group, want, timeout, linger, expect_file, keys, extra)
    return ctx.clients.run("go", "go-%s-%s" % (kind, group), args, timeout + linger + 30)


def _with_keys(args, keys):
    """ACL credentials (primitive.Credentials on the client) as flags of the action."""
    if keys:
        args = list(args) + ["--access-key", keys[0], "--secret-key", keys[1]]
    return args


def _consumed(result, what):
    check(not result.timed_out, "%s hung: %s" % (what, result.describe()))
    done = result.of_kind("done")
    check(done and done[-1].get("complete"), "%s did not receive everything in time: %s" % (what, result.describe()))
    check(result.of_kind("shutdown"), "%s did not shut down (offsets may be uncommitted): %s"
          % (what, result.describe()))


def _deliveries(result, prefix):
    """{seq: [((shard, queue id), queue offset, broker)] of every delivery of message seq of `prefix` from the
    topic's own queues (redeliveries through %RETRY% sit elsewhere)}."""
    by_seq = collections.defaultdict(list)
    for rec in result.of_kind("recv"):
        props = rec.get("props") or {}
        if props.get("origin") == prefix and rec.get("reconsume_times") == 0:
            by_seq[int(props["seq"])].append((queue_key(rec), rec["queue_offset"], rec.get("broker")))
    return by_seq


def _where_sent(sent):
    """{i: ((shard, queue id), queue offset)} where each send result says message i is stored. A batch's
    result names the queue offset of its first message."""
    return {i: (queue_key(s), s["offset"] + i - s.get("batch_first", i)) for i, s in sent.items()}


def _check_positions(result, prefix, sent, what):
    """Each acknowledged message was consumed from the queue and offset its send result named (a copy stored
    elsewhere by a retry may arrive too), and the send result's broker is the shard-broker of that queue."""
    by_seq = _deliveries(result, prefix)
    where = _where_sent(sent)
    missing = sorted(i for i in sent if i not in by_seq)
    check(not missing, "%s: %s message(s) acknowledged but never delivered from their own queue, first %s"
          % (what, prefix, missing[:5]))
    wrong = [(i, where[i], [d[:2] for d in by_seq[i]]) for i in sorted(sent)
             if where[i] not in [d[:2] for d in by_seq[i]]]
    check(not wrong, "%s: %d %s message(s) not consumed where the send result said (i, sent, consumed): %s"
          % (what, len(wrong), prefix, wrong[:5]))
    brokers = [(i, s.get("broker"), d[2]) for i, s in sorted(sent.items()) for d in by_seq[i]
               if d[:2] == where[i] and d[2] and s.get("broker") != d[2]]
    check(not brokers, "%s: send result broker differs from the consumer's queue (i, sent, consumed): %s"
          % (what, brokers[:5]))


def _expect_file(ctx, name, want):
    """A JSON file {prefix: [indexes]} for the program's --expect-file."""
    path = os.path.join(ctx.workdir, "%s.json" % name)
    with open(path, "w") as f:
        json.dump({p: sorted(s) for p, s in want.items()}, f)
    return path


@case("go_send_sync_async_batch_oneway_push_consume", timeout=240)
def send_modes_push(ctx):
    c = ctx.start_cluster()
    topic = "GoSend"
    c.create_topic(topic)
    sent = {}
    for mode in ("sync", "async", "batch"):
        prefix = "go%s" % mode
        sent[prefix] = require_sent(_produce(ctx, topic, prefix, N, mode), prefix, N, statuses=SEND_OK)
    require_sent(_produce(ctx, topic, "gooneway", 20, "oneway"), "gooneway", 20, statuses=SEND_OK)  # see above
    # ~100 KiB bodies ("big" prefix, messages.py): the client compresses a single message's body over 4 KiB
    # (zlib, the compressed flag in sysFlag), never a batch's.
    sent["biggo"] = require_sent(_produce(ctx, topic, "biggo", 6), "biggo", 6, statuses=SEND_OK)
    sent["biggob"] = require_sent(_produce(ctx, topic, "biggob", 6, "batch", extra=["--batch-size", "3"]), "biggob", 6,
                                  statuses=SEND_OK)
    want = {"gosync": N, "goasync": N, "gobatch": N, "gooneway": 20, "biggo": 6, "biggob": 6}
    res = _consume(ctx, "push", topic, "go-push-group", want, linger=2)
    check_received(ctx, res, want, what="Go push consumer")
    _consumed(res, "Go push consumer")
    for prefix, s in sent.items():
        _check_positions(res, prefix, s, "Go push consumer")
    # The msgId users see (UNIQ_KEY, set by the client) is the same on both sides. The Go client sets none on
    # the messages of a batch: there the consumer sees the offsetMsgId the broker answered.
    recv_ids = {r["msg_id"] for r in res.of_kind("recv")}
    for prefix in ("gosync", "goasync", "biggo"):
        ids = {r["msg_id"] for r in sent[prefix].values()}
        check(ids <= recv_ids, "%s: msgIds of the send results not seen by the consumer: %s"
              % (prefix, sorted(ids - recv_ids)[:3]))
    batch_ids = {r.get("offset_msg_id") for r in sent["gobatch"].values()}
    check(None not in batch_ids and len(batch_ids) == N,
          "batch send results do not carry one offsetMsgId per message: %s" % sorted(map(str, batch_ids))[:3])
    check(batch_ids <= recv_ids, "batch: offsetMsgIds of the send result not seen as the consumer's msgId: %s"
          % sorted(batch_ids - recv_ids)[:3])
    check_queue_order(res, "gobatch", "batch")
    split = collections.defaultdict(set)
    for i, s in sent["gobatch"].items():
        split[s["batch_first"]].add(queue_key(s))
    check(all(len(q) == 1 for q in split.values()), "messages of one batch landed in several queues: %s" % split)

    # The consumer committed its offsets (at shutdown): the same group started again gets only what is new.
    require_sent(_produce(ctx, topic, "gomore", 10), "gomore", 10, statuses=SEND_OK)
    res2 = _consume(ctx, "push", topic, "go-push-group", {"gomore": 10}, linger=3)
    _, again = check_received(ctx, res2, {"gomore": 10}, optional=want, what="restarted Go push consumer")
    _consumed(res2, "restarted Go push consumer")
    redelivered = sum(again.values())
    check(redelivered == 0, "the restarted Go push consumer got %d message(s) its group had consumed and committed "
          "(offsets did not resume): %s" % (redelivered, again))


@case("go_ordered_send_orderly_push_consume", timeout=180)
def ordered(ctx):
    c = ctx.start_cluster()
    topic = "GoOrder"
    c.create_topic(topic)
    n = 60
    sent = require_sent(_produce(ctx, topic, "goord", n, "ordered"), "goord", n, statuses=SEND_OK)
    # The client's hash selector: one queue per sharding key, as its send results say.
    by_key = collections.defaultdict(set)
    for i, s in sent.items():
        by_key[s["sharding_key"]].add(queue_key(s))
    check(all(len(q) == 1 for q in by_key.values()), "send results put one sharding key in several queues: %s"
          % dict(by_key))
    # Per key, the queue offsets the broker gave increase with the send order.
    for key in by_key:
        offsets = [sent[i]["offset"] for i in sorted(sent) if sent[i]["sharding_key"] == key]
        check(offsets == sorted(offsets) and len(set(offsets)) == len(offsets),
              "sharding key %s: queue offsets not increasing in send order: %s" % (key, offsets))
    res = _consume(ctx, "push", topic, "go-orderly-group", {"goord": n}, extra=["--orderly"])
    check_received(ctx, res, {"goord": n}, what="Go orderly push consumer")
    _consumed(res, "Go orderly push consumer")
    _check_positions(res, "goord", sent, "Go orderly push consumer")
    queues = check_sharding(res, "goord", n, "Go orderly push consumer")
    # Consumption order: within each key the messages arrived in send order (the consumer holds each queue's
    # lock and consumes one message at a time).
    arrival = collections.defaultdict(list)
    for rec in res.of_kind("recv"):
        seq = int(rec["props"]["seq"])
        if seq not in arrival[messages.sharding_key(seq)]:
            arrival[messages.sharding_key(seq)].append(seq)
    for key, seqs in arrival.items():
        check(seqs == sorted(seqs), "sharding key %s consumed out of send order: %s" % (key, seqs))
    ctx.note("sharding key -> queue: %s" % {k: sorted(v) for k, v in sorted(queues.items())})


@case("go_transaction_commit_rollback_checkback", timeout=240)
def transaction(ctx):
    # Short transaction timings (cases_tx.TX_TIMINGS): first check-back after 1 s, then every 1.5 s.
    c = start_tx_cluster(ctx)
    topic = "GoTx"
    c.create_topic(topic)
    n = 12
    # Message i: commit (i % 3 == 0), rollback (1), unknown (2), the unknown ones committed on check-back.
    res = ctx.clients.run("go", "go-tx", ["transaction", "--topic", topic, "--group", "go-tx-group", "--prefix",
                                          "gotx", "--count", str(n), "--plan", "commit,rollback,unknown",
                                          "--check-answer", "commit", "--timeout", "60", "--linger", "3"], 110)
    require_ok(res, "Go transaction producer")
    sent = require_sent(res, "gotx", n, statuses=SEND_OK)
    local = {int(r["seq"]): r["answer"] for r in res.of_kind("local")}
    want_local = {i: ("COMMIT", "ROLLBACK", "UNKNOWN")[i % 3] for i in range(n)}
    check(local == want_local, "local transaction answers %s, want %s" % (local, want_local))
    checks = collections.Counter(int(r["seq"]) for r in res.of_kind("check"))
    unknown = {i for i in range(n) if i % 3 == 2}
    check(unknown <= set(checks), "no check-back for the unknown message(s) %s (%s)"
          % (sorted(unknown - set(checks)), res.describe()))
    # A message the producer committed or rolled back at once (END_TRANSACTION right after the half message) is
    # checked only if that answer came later than transactionTimeOut (1 s); asked twice, the broker ignored
    # both the END_TRANSACTION and the answer to its own check-back. The same for an unknown one asked more
    # than twice (its check-back answer was commit).
    repeated = {i: k for i, k in checks.items() if k > 2 or (i not in unknown and k > 1)}
    check(not repeated, "check-backs repeated after the producer's answer: %s" % repeated)
    decided_checked = sorted(set(checks) - unknown)
    if decided_checked:
        ctx.note("check-backs of messages committed or rolled back at once (END_TRANSACTION late?): %s"
                 % decided_checked)
    bad = [r for r in res.of_kind("check") if r.get("origin") != "gotx" or not r.get("transaction_id")]
    check(not bad, "check-back message without its properties or transaction id: %s" % bad[:1])
    committed = {i for i in range(n) if i % 3 != 1}
    wait_for(lambda: visible_count(c, topic) >= len(committed), 20, "%d committed messages" % len(committed))
    time.sleep(3)  # past transactionTimeOut: nothing rolled back comes back later
    check(visible_count(c, topic) == len(committed), "expected exactly %d visible messages, found %d"
          % (len(committed), visible_count(c, topic)))
    # Rolled-back messages would arrive as unexpected records and fail the check.
    got = _consume(ctx, "push", topic, "go-tx-consumer", linger=3,
                   expect_file=_expect_file(ctx, "committed", {"gotx": committed}))
    _consumed(got, "Go push consumer of the transaction topic")
    check_received(ctx, got, {"gotx": committed}, what="Go push consumer of the transaction topic")
    ctx.note("check-backs per unknown message: %s; half messages stored at %s"
             % (dict(sorted(checks.items())), sorted({queue_key(s) for s in sent.values()})))


@case("go_pull_consumer_poll_ack_resume", timeout=200)
def pull_consumer(ctx):
    c = ctx.start_cluster()
    topic = "GoPull"
    c.create_topic(topic)
    sent = require_sent(_produce(ctx, topic, "gopull", N), "gopull", N, statuses=SEND_OK)
    res = _consume(ctx, "pull", topic, "go-pull-group", {"gopull": N}, linger=2)
    check_received(ctx, res, {"gopull": N}, what="Go pull consumer")
    _consumed(res, "Go pull consumer")
    _check_positions(res, "gopull", sent, "Go pull consumer")
    # Offsets ACKed through the pull consumer were committed to the broker: the group resumes after them.
    require_sent(_produce(ctx, topic, "gopull2", 20), "gopull2", 20, statuses=SEND_OK)
    res2 = _consume(ctx, "pull", topic, "go-pull-group", {"gopull2": 20}, linger=3)
    _, again = check_received(ctx, res2, {"gopull2": 20}, optional={"gopull": N}, what="restarted Go pull consumer")
    _consumed(res2, "restarted Go pull consumer")
    check(again["gopull"] == 0, "the restarted Go pull consumer got %d message(s) of the first run again: the "
          "group's ACKed offsets did not resume" % again["gopull"])


def _require_refused(result, what, reason):
    """Every send failed with the broker's NO_PERMISSION (16) answer, its remark saying `reason`."""
    check(not [r for r in result.of_kind("sent") if r.get("status") == "SEND_OK"],
          "%s: a send succeeded: %s" % (what, result.of_kind("sent")[:1]))
    errors = result.of_kind("send_error")
    check(errors, "%s: no send error reported: %s" % (what, result.describe()))
    text = errors[0]["error"]
    check("CODE: 16" in text and reason in text, "%s: the client's error is %r, want NO_PERMISSION (16) saying %r"
          % (what, text, reason))


@case("go_acl_credentials", timeout=300)
def acl(ctx):
    c = start_acl_cluster(ctx)
    resp = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclTopic"),
                          ADMIN)
    check(resp.code == 0, "admin topic creation answered %d %r" % (resp.code, resp.remark))
    c.wait_route("AclTopic")
    n = 20
    sent = require_sent(_produce(ctx, "AclTopic", "goacl", n, keys=USER), "goacl", n, statuses=SEND_OK)
    require_sent(_produce(ctx, "AclTopic", "goaclb", n, "batch", keys=USER), "goaclb", n, statuses=SEND_OK)
    _require_refused(_produce(ctx, "AclTopic", "goaclbad", 2, keys=(USER[0], "not-the-secret")),
                     "wrong secret key", "Check signature failed")
    _require_refused(_produce(ctx, "AclTopic", "goaclnobody", 2, keys=("nobodyAtAll", USER[1])),
                     "unknown access key", "No acl config for nobodyAtAll")
    _require_refused(_produce(ctx, "AclDenied", "goacldenied", 2, keys=USER), "DENY topic", "AclDenied")
    want = {"goacl": n, "goaclb": n}
    res = _consume(ctx, "push", "AclTopic", "AclGoPush", want, keys=USER)
    check_received(ctx, res, want, what="signed Go push consumer")
    _consumed(res, "signed Go push consumer")
    _check_positions(res, "goacl", sent, "signed Go push consumer")
    res = _consume(ctx, "pull", "AclTopic", "AclGoPull", want, keys=USER)
    check_received(ctx, res, want, what="signed Go pull consumer")
    _consumed(res, "signed Go pull consumer")
    # A consumer with the wrong secret gets nothing (its heartbeat and pulls are refused).
    bad = _consume(ctx, "push", "AclTopic", "AclGoBad", want, timeout=8, linger=0, keys=(USER[0], "not-the-secret"))
    check(not bad.of_kind("recv"), "a Go push consumer with a wrong secret received %d message(s)"
          % len(bad.of_kind("recv")))
    check(not bad.timed_out, "the Go push consumer with a wrong secret hung: %s" % bad.describe())


def _acked(path):
    return {r["i"]: r for r in harness.read_records(path) if r.get("kind") == "sent" and r.get("status") == "SEND_OK"}


@case("go_kill9_sync_flush_acked_survive", timeout=300)
def kill9_sync_flush(ctx):
    c = ctx.start_cluster(flush_disk_type="SYNC_FLUSH")
    topic = "GoCrash"
    c.create_topic(topic, queue_nums=8)
    prefixes = ["gocrash-a", "gocrash-b"]
    stop_file = os.path.join(ctx.workdir, "stop-producers")
    producers = [ctx.clients.spawn("go", "go-load-%s" % p, [
        "produce", "--topic", topic, "--prefix", p, "--count", "10000000", "--mode", "sync", "--keep-going",
        "--send-timeout-ms", "3000", "--stop-file", stop_file]) for p in prefixes]
    # A steady load, then kill -9 in the middle of it.
    started = time.monotonic()
    acked = {}
    while time.monotonic() < started + 60:
        time.sleep(0.5)
        acked = {p: _acked(pr.base + ".jsonl") for p, pr in zip(prefixes, producers)}
        if time.monotonic() > started + 4 and all(len(a) >= 300 for a in acked.values()):
            break
    check(all(acked.values()), "producers got no SEND_OK before the kill: %s" % {p: len(a) for p, a in acked.items()})
    check(all(pr.alive() for pr in producers), "a Go producer exited before the kill")
    c.kill_broker()
    killed_at = time.time() * 1000
    before = {p: len(a) for p, a in acked.items()}
    time.sleep(2)
    down_until = time.time() * 1000
    c.start_broker()
    c.wait_route(topic)
    restarted_at = time.time() * 1000
    # The producers keep sending through the kill: each must get acknowledgements again from the restarted
    # broker (same address), and everything it acknowledged, before or after, must be stored.
    end = time.monotonic() + 60
    resumed = {}
    while time.monotonic() < end:
        resumed = {p: [r for r in _acked(pr.base + ".jsonl").values() if r["t_ms"] > restarted_at]
                   for p, pr in zip(prefixes, producers)}
        if all(len(r) >= 50 for r in resumed.values()):
            break
        check(all(pr.alive() for pr in producers), "a Go producer exited after the kill")
        time.sleep(0.5)
    with open(stop_file, "w"):
        pass
    results = [ctx.clients.finish(pr, 30) for pr in producers]
    check(all(len(r) >= 50 for r in resumed.values()),
          "Go producers did not resume within 60 s of the restart: acknowledged since %s" %
          {p: len(r) for p, r in resumed.items()})
    for res in results:
        check(not res.timed_out and res.code == 0, "Go producer did not stop cleanly: %s" % res.describe())
    acked = {p: {r["i"]: r for r in res.of_kind("sent") if r["status"] == "SEND_OK"}
             for p, res in zip(prefixes, results)}
    errors = {p: [r for r in res.of_kind("send_error")] for p, res in zip(prefixes, results)}
    in_kill = {p: sum(1 for r in a.values() if killed_at + 100 <= r["t_ms"] <= down_until) for p, a in acked.items()}
    check(not any(in_kill.values()), "SEND_OK while the broker was dead: %s" % in_kill)
    ctx.note("acknowledged before the kill %s, in all %s; send errors %s; acknowledged while down %s"
             % (before, {p: len(a) for p, a in acked.items()}, {p: len(e) for p, e in errors.items()}, in_kill))
    want_file = _expect_file(ctx, "acked", acked)
    # Drain everything stored with a new group: every acknowledged message is there, where its send result said.
    res = _consume(ctx, "push", topic, "go-crash-audit", expect_file=want_file, timeout=120, linger=2)
    check_received(ctx, res, {p: set(a) for p, a in acked.items()}, allow_extra=True,
                   what="Go push consumer after kill -9 and restart")
    _consumed(res, "Go push consumer after kill -9 and restart")
    for p, a in acked.items():
        _check_positions(res, p, a, "audit after kill -9")

"""Interop cases driving PyPI `rocketmq==0.4.4` (the official C++ client: JSON headers, language CPP)."""

import time

import messages
import remoting
from harness import read_records
from caselib import case, check, check_received, check_sharding, check_queue_order, queue_key, require_sent

N = 60


def _produce(ctx, topic, prefix, count, mode="sync", timeout=90, extra=()):
    args = ["produce", "--topic", topic, "--prefix", prefix, "--count", str(count), "--mode", mode] + list(extra)
    return ctx.clients.run("py", "py-produce-%s-%s" % (mode, prefix), args, timeout)


def _consume(ctx, kind, topic, group, want, timeout=60, linger=1.0, extra=()):
    args = [kind, "--topic", topic, "--group", group, "--timeout", str(timeout)]
    if kind == "push":
        args += ["--linger", str(linger)]
    for prefix, count in want.items():
        args += ["--expect", "%s:%d" % (prefix, count)]
    args += list(extra)
    return ctx.clients.run("py", "py-%s-%s" % (kind, group), args, timeout + linger + 30)


def _consumed(result, what):
    check(not result.timed_out, "%s hung: %s" % (what, result.describe()))
    done = result.of_kind("done")
    check(done and done[-1].get("complete"), "%s did not receive everything in time: %s" % (what, result.describe()))


@case("py_send_sync_push_consume")
def send_sync_push(ctx):
    c = ctx.start_cluster()
    c.create_topic("PySync")
    sent = require_sent(_produce(ctx, "PySync", "pysync", N), "pysync", N)
    offsets = sorted(r["offset"] for r in sent.values())
    check(offsets[0] >= 0, "send_sync returned negative queue offsets: %s" % offsets[:5])
    res = _consume(ctx, "push", "PySync", "py-push-group", {"pysync": N})
    check_received(ctx, res, {"pysync": N}, what="PushConsumer")
    _consumed(res, "PushConsumer")
    # The msgId users see (UNIQ_KEY) must be the same on both sides.
    sent_ids = {r["msg_id"] for r in sent.values()}
    recv_ids = {r["msg_id"] for r in res.of_kind("recv")}
    check(sent_ids <= recv_ids, "msgIds from send_sync not seen by the consumer: %s" % sorted(sent_ids - recv_ids)[:3])


@case("py_send_oneway_pull_consume")
def send_oneway_pull(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyOneway")
    require_sent(_produce(ctx, "PyOneway", "pyoneway", N, mode="oneway"), "pyoneway", N)
    res = _consume(ctx, "pull", "PyOneway", "py-pull-group", {"pyoneway": N})
    check_received(ctx, res, {"pyoneway": N}, what="PullConsumer")
    _consumed(res, "PullConsumer")


@case("py_send_sync_pull_consume")
def send_sync_pull(ctx):
    c = ctx.start_cluster()
    c.create_topic("PySyncPull")
    sent = require_sent(_produce(ctx, "PySyncPull", "pysyncpull", N), "pysyncpull", N)
    res = _consume(ctx, "pull", "PySyncPull", "py-pull-group", {"pysyncpull": N})
    dups, _ = check_received(ctx, res, {"pysyncpull": N}, what="PullConsumer")
    _consumed(res, "PullConsumer")
    # A pull consumer reading from offset 0 with its own offsets sees each stored message once.
    check(dups["pysyncpull"] == 0, "PullConsumer got %d duplicate(s): the broker stored or served messages twice"
          % dups["pysyncpull"])
    # Queue offsets reported by send_sync are the ones the consumer sees.
    by_seq = {int(r["props"]["seq"]): r for r in res.of_kind("recv")}
    wrong = [(i, s["offset"], by_seq[i]["queue_offset"]) for i, s in sent.items() if by_seq[i]["queue_offset"] != s["offset"]]
    check(not wrong, "queue offsets from send_sync differ from the stored ones (i, sent, stored): %s" % wrong[:5])


@case("py_send_batch_push_consume")
def send_batch_push(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyBatch")
    require_sent(_produce(ctx, "PyBatch", "pybatch", N, mode="batch"), "pybatch", N)
    res = _consume(ctx, "push", "PyBatch", "py-batch-group", {"pybatch": N})
    check_received(ctx, res, {"pybatch": N}, what="PushConsumer")
    _consumed(res, "PushConsumer")
    # A batch lands in one queue, contiguous and in order.
    check_queue_order(res, "pybatch", "PushConsumer")


@case("py_send_orderly_pull_consume")
def send_orderly(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyOrderly")
    require_sent(_produce(ctx, "PyOrderly", "pyorderly", N, mode="orderly"), "pyorderly", N)
    res = _consume(ctx, "pull", "PyOrderly", "py-orderly-pull", {"pyorderly": N})
    check_received(ctx, res, {"pyorderly": N}, what="PullConsumer")
    _consumed(res, "PullConsumer")
    queues = check_sharding(res, "pyorderly", N, "send_orderly")
    ctx.note("sharding key -> queue: %s" % {k: sorted(v) for k, v in sorted(queues.items())})


@case("py_orderly_push_consumer")
def orderly_push(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyOrderlyPush")
    require_sent(_produce(ctx, "PyOrderlyPush", "pyordpush", 30, mode="orderly"), "pyordpush", 30)
    res = _consume(ctx, "push", "PyOrderlyPush", "py-orderly-push", {"pyordpush": 30}, extra=["--orderly"])
    check_received(ctx, res, {"pyordpush": 30}, what="orderly PushConsumer")
    _consumed(res, "orderly PushConsumer")
    # Orderly consumption: within a queue (of one shard-broker), delivery order (output order) is send order.
    per_queue = {}
    for rec in res.of_kind("recv"):
        per_queue.setdefault(queue_key(rec), []).append(int(rec["props"]["seq"]))
    for queue_id, seqs in per_queue.items():
        firsts = list(dict.fromkeys(seqs))
        check(firsts == sorted(firsts), "orderly PushConsumer: queue %s delivered out of order: %s" % (queue_id, seqs))


@case("py_autocreate_topic")
def autocreate_topic(ctx):
    c = ctx.start_cluster()
    # No UPDATE_AND_CREATE_TOPIC: the producer's first send creates the topic from TBW102.
    check(remoting.topic_route(c.namesrv_addr, "PyAuto") is None, "topic PyAuto exists before any send")
    require_sent(_produce(ctx, "PyAuto", "pyauto", 20), "pyauto", 20)
    c.wait_route("PyAuto", timeout=40)
    res = _consume(ctx, "push", "PyAuto", "py-auto-group", {"pyauto": 20})
    check_received(ctx, res, {"pyauto": 20}, what="PushConsumer")
    _consumed(res, "PushConsumer")


@case("py_consumer_offset_resume", timeout=180)
def consumer_offset_resume(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyResume")
    require_sent(_produce(ctx, "PyResume", "first", 40), "first", 40)
    # Linger 7 s: the C++ client commits offsets every 5 s, and again at shutdown.
    res1 = _consume(ctx, "push", "PyResume", "py-resume-group", {"first": 40}, linger=7)
    check_received(ctx, res1, {"first": 40}, what="first PushConsumer")
    _consumed(res1, "first PushConsumer")
    require_sent(_produce(ctx, "PyResume", "second", 40), "second", 40)
    res2 = _consume(ctx, "push", "PyResume", "py-resume-group", {"second": 40}, linger=3)
    _, again = check_received(ctx, res2, {"second": 40}, optional={"first": 40}, what="restarted PushConsumer")
    _consumed(res2, "restarted PushConsumer")
    # Offsets were committed (periodic commit during the linger, and at shutdown), so at-least-once allows
    # no redelivery of the first range here.
    check(again["first"] == 0, "restarted PushConsumer got %d message(s) of the first run again, though they "
          "were consumed and committed: offsets did not resume" % again["first"])


@case("py_broker_restart_sigterm", timeout=200)
def broker_restart(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyRestart")
    require_sent(_produce(ctx, "PyRestart", "before", 40), "before", 40)
    res1 = _consume(ctx, "push", "PyRestart", "py-restart-group", {"before": 40}, linger=7)
    check_received(ctx, res1, {"before": 40}, what="PushConsumer before restart")
    _consumed(res1, "PushConsumer before restart")
    c.stop_broker()
    c.start_broker()
    c.wait_route("PyRestart")
    require_sent(_produce(ctx, "PyRestart", "after", 40), "after", 40)
    res2 = _consume(ctx, "push", "PyRestart", "py-restart-group", {"after": 40}, linger=2)
    _, again = check_received(ctx, res2, {"after": 40}, optional={"before": 40}, what="PushConsumer after restart")
    _consumed(res2, "PushConsumer after restart")
    check(again["before"] == 0, "after a graceful broker restart the group got %d already committed message(s) "
          "again: consumer offsets were not persisted across SIGTERM" % again["before"])
    res3 = _consume(ctx, "pull", "PyRestart", "py-restart-audit", {"before": 40, "after": 40})
    check_received(ctx, res3, {"before": 40, "after": 40}, what="PullConsumer audit after restart")
    _consumed(res3, "PullConsumer audit after restart")


@case("py_kill9_sync_flush", timeout=240)
def kill9_sync_flush(ctx):
    c = ctx.start_cluster(flush_disk_type="SYNC_FLUSH")
    c.create_topic("PyCrash", queue_nums=8)
    prefixes = ["crash-a", "crash-b", "crash-c"]
    producers = [
        ctx.clients.spawn("py", "py-load-%s" % p, [
            "produce", "--topic", "PyCrash", "--prefix", p, "--count", "1000000", "--mode", "sync",
            "--keep-going", "--send-timeout-ms", "3000"])
        for p in prefixes
    ]
    # Let them reach a steady load, then kill -9 the broker in the middle of it.
    load_started = time.monotonic()
    acked = {}
    while time.monotonic() < load_started + 60:
        time.sleep(0.5)
        acked = {p: _acked(pr) for p, pr in zip(prefixes, producers)}
        if time.monotonic() > load_started + 4 and all(len(a) >= 500 for a in acked.values()):
            break
    check(all(acked.values()), "producers got no SEND_OK before the kill: %s" % {p: len(a) for p, a in acked.items()})
    check(all(pr.alive() for pr in producers), "a producer exited before the kill")
    c.kill_broker()
    time.sleep(2)
    results = [ctx.clients.finish(pr, 0) for pr in producers]
    acked = {p: {r["i"] for r in res.of_kind("sent") if r["status"] == "OK"} for p, res in zip(prefixes, results)}
    errors_before = {p: [r for r in res.of_kind("send_error") if r["i"] < max(acked[p], default=0)]
                     for p, res in zip(prefixes, results)}
    ctx.note("acknowledged before kill -9: %s" % {p: len(a) for p, a in acked.items()})
    c.start_broker()
    c.wait_route("PyCrash")
    # Drain everything stored (no --expect): then check every acknowledged message is there.
    res = _consume(ctx, "pull", "PyCrash", "py-crash-audit", {}, timeout=90)
    check(not res.timed_out and res.code == 0, "PullConsumer after restart failed: %s" % res.describe())
    check_received(ctx, res, acked, allow_extra=True, what="PullConsumer after kill -9 and restart")
    if any(errors_before.values()):
        ctx.note("send errors before the kill (not counted as acknowledged): %s"
                 % {p: len(e) for p, e in errors_before.items()})


def _acked(proc):
    return {r["i"] for r in read_records(proc.base + ".jsonl") if r.get("kind") == "sent" and r.get("status") == "OK"}


@case("py_tag_filtered_push_consume")
def tag_filtered_push(ctx):
    c = ctx.start_cluster()
    c.create_topic("PyTags")
    require_sent(_produce(ctx, "PyTags", "pytags", N), "pytags", N)
    # Subscribe to Tag1 || Tag2: exactly the messages with those tags arrive, none of Tag0.
    wanted = {i for i in range(N) if messages.tags(i) in ("Tag1", "Tag2")}
    args = ["push", "--topic", "PyTags", "--group", "py-tags-group", "--timeout", "60", "--linger", "2",
            "--expression", "Tag1 || Tag2", "--expect", "pytags:%d:%d" % (N, len(wanted))]
    res = ctx.clients.run("py", "py-push-tags", args, 100)
    check_received(ctx, res, {"pytags": wanted}, what="PushConsumer subscribed to Tag1 || Tag2")
    _consumed(res, "PushConsumer subscribed to Tag1 || Tag2")


@case("py_large_messages")
def large_messages(ctx):
    c = ctx.start_cluster(flush_disk_type="SYNC_FLUSH")
    c.create_topic("PyLarge")
    # ~100 KiB bodies: many 4 KiB blocks per record; the C++ client compresses bodies over 4 KiB.
    require_sent(_produce(ctx, "PyLarge", "bigpy", 12), "bigpy", 12)
    res = _consume(ctx, "pull", "PyLarge", "py-large-pull", {"bigpy": 12})
    check_received(ctx, res, {"bigpy": 12}, what="PullConsumer")
    _consumed(res, "PullConsumer")
    res = _consume(ctx, "push", "PyLarge", "py-large-push", {"bigpy": 12})
    check_received(ctx, res, {"bigpy": 12}, what="PushConsumer")
    _consumed(res, "PushConsumer")

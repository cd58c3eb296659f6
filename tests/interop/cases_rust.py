"""Interop cases driving crates.io `rocketmq-client-rust` 1.0.0, each with JSON and with ROCKETMQ headers."""

from caselib import case, check, check_received, check_queue_order, check_sharding, queue_key, require_sent

N = 40

# The client library reads this itself; absent means JSON headers.
SERIALIZE = {"json": {}, "rocketmq": {"ROCKETMQ_SERIALIZE_TYPE": "ROCKETMQ"}}


def _run(ctx, name, args, env, timeout=90):
    return ctx.clients.run("rust", name, args, timeout, env=env)


def _consume(ctx, env, topic, group, want, timeout=60):
    args = ["consume", "--topic", topic, "--group", group, "--timeout", str(timeout)]
    for prefix, count in want.items():
        args += ["--expect", "%s:%d" % (prefix, count)]
    res = _run(ctx, "rs-consume-%s" % group, args, env, timeout + 40)
    return res


def _consumed(result, what):
    check(not result.timed_out, "%s hung: %s" % (what, result.describe()))
    done = result.of_kind("done")
    check(done and done[-1].get("complete"), "%s did not receive everything in time: %s" % (what, result.describe()))


def _send_case(action, label):
    def body(ctx, serialize):
        env = SERIALIZE[serialize]
        c = ctx.start_cluster()
        topic = "Rs%s%s" % (label, serialize.capitalize())
        prefix = "rs-%s-%s" % (action, serialize)
        c.create_topic(topic)
        sent = require_sent(_run(ctx, "rs-%s" % action, [action, "--topic", topic, "--prefix", prefix,
                                                        "--count", str(N)], env), prefix, N, statuses=("SendOk",))
        res = _consume(ctx, env, topic, "rs-group-%s" % serialize, {prefix: N})
        check_received(ctx, res, {prefix: N}, what="push consumer")
        _consumed(res, "push consumer")
        # First deliveries (reconsume_times 0) come from the topic's own queue: they must be at the queue and
        # offset the send result named. A redelivery through %RETRY% has its own queue/offset.
        by_seq = {}
        for rec in res.of_kind("recv"):
            if rec.get("reconsume_times") == 0:
                by_seq.setdefault(int(rec["props"]["seq"]), rec)
        only_retried = sorted(set(sent) - set(by_seq))
        if only_retried:
            # Seen with rocketmq-client-rust 1.0.0 against any broker: its consume pool refuses a task
            # ("runtime.capacity.exhausted") and the client sends the message back for redelivery.
            ctx.note("received only as a redelivery through %%RETRY%% (the client sent it back; see its stderr): %s"
                     % only_retried)
        # A batch's result names the queue offset of its first message. A queue is (shard that stored it,
        # queue id): with shardRouting = direct each shard is a broker with queues 0..3 of its own.
        where_sent = {i: (queue_key(s), s["offset"] + i - s.get("batch_first", i)) for i, s in sent.items()}
        wrong = [(i, where_sent[i], (queue_key(by_seq[i]), by_seq[i]["queue_offset"]))
                 for i in sorted(sent)
                 if i in by_seq and where_sent[i] != (queue_key(by_seq[i]), by_seq[i]["queue_offset"])]
        check(not wrong, "send results (queue, offset) differ from where the message was consumed "
              "(i, sent, consumed): %s" % wrong[:5])
        if action == "batch":
            check_queue_order(res, prefix, "batch")
            # A batch goes to one queue: all messages of a send_batch call share the queue.
            batches = {}
            for i, s in sent.items():
                if i in by_seq:
                    batches.setdefault(s["batch_first"], set()).add(queue_key(by_seq[i]))
            split = {b: q for b, q in batches.items() if len(q) > 1}
            check(not split, "messages of one send_batch landed in several queues: %s" % split)
        if action == "select":
            queues = check_sharding(res, prefix, N, "send_with_selector")
            ctx.note("sharding key -> queue: %s" % {k: sorted(v) for k, v in sorted(queues.items())})
    return body


for _serialize in ("json", "rocketmq"):
    for _action, _label in (("send", "Sync"), ("batch", "Batch"), ("select", "Select")):
        _func = _send_case(_action, _label)
        case("rust_%s_%s" % ({"send": "send_sync", "batch": "send_batch_320", "select": "send_with_selector"}[_action],
                             _serialize))(lambda ctx, f=_func, s=_serialize: f(ctx, s))


@case("rust_large_messages_rocketmq")
def large_messages(ctx):
    env = SERIALIZE["rocketmq"]
    c = ctx.start_cluster(flush_disk_type="SYNC_FLUSH")
    c.create_topic("RsLarge")
    # ~100 KiB bodies ("big" prefix, see messages.py): many 4 KiB blocks; the client compresses over 4 KiB.
    require_sent(_run(ctx, "rs-send-big", ["send", "--topic", "RsLarge", "--prefix", "bigrs", "--count", "12"], env),
                 "bigrs", 12, statuses=("SendOk",))
    require_sent(_run(ctx, "rs-batch-big", ["batch", "--topic", "RsLarge", "--prefix", "bigrsb", "--count", "10"], env),
                 "bigrsb", 10, statuses=("SendOk",))
    res = _consume(ctx, env, "RsLarge", "rs-large", {"bigrs": 12, "bigrsb": 10})
    check_received(ctx, res, {"bigrs": 12, "bigrsb": 10}, what="push consumer")
    _consumed(res, "push consumer")

"""Checkers over the features' history (features.py: FIFO, transactions, timers) and the final read of
their topics on the final master. Each returns problems (the run fails on any) and facts. Duplicates
are counted, never failed on (at-least-once); a message never acknowledged may or may not arrive.

- fifo_order: per sharding key, the consumer's first sight of each acknowledged message follows its
  send order, and none is skipped: when acknowledged number j is first consumed, every acknowledged
  number below j of that key was consumed before it (each is sent only after the previous one's
  outcome is known, so the broker must have stored them in that order on their queue).
- fifo_queue: a message is consumed from the queue its sharding key selects.
- fifo_missed: once the consumer caught up, every acknowledged message was consumed.
- tx_rollback_delivered: no message of a transaction the producer rolled back (whatever became of
  its END) is ever consumed or on the final master.
- tx_commit_lost: every transaction whose commit END the broker acknowledged is on the final master
  (and consumed, once the consumer caught up).
- tx_not_committed_type: what consumers get is the committed copy (transaction type COMMIT), never
  a half message.
- timer_early: no timer or delay-level message is stored or consumed before its due time (the wall
  clock the broker and the runner share), except while a clock fault could have moved the broker's
  clock (counted apart).
- timer_lost: every acknowledged timer is on the final master and was consumed once they were all
  due and the consumer caught up. Lateness is a fact (a due time passed while no master existed
  delivers late, allowed).
- *_phantom: nothing consumed that its producer never sent.
"""

EARLY_EPS_S = 0.002


def _limit(problems, name, items, fmt, n=10):
    for item in items[:n]:
        problems.append(fmt % item)
    if len(items) > n:
        problems.append("%s: %d more" % (name, len(items) - n))


def _sends(ops):
    """invoke ops by key, ok ops by key, and the counts per outcome."""
    invoked = {}
    acked = {}
    counts = {}
    for op in ops:
        if op["type"] == "invoke":
            invoked[op["key"]] = op
        elif op["type"] in ("ok", "fail", "unknown"):
            counts[op["type"]] = counts.get(op["type"], 0) + 1
            if op["type"] == "ok":
                acked[op["key"]] = op
    return invoked, acked, counts


def _consumed(consumes):
    """consume ops in time order, first consume op per key, duplicates."""
    consumed = sorted((op for op in consumes if op["type"] == "consume"), key=lambda op: op["t"])
    first = {}
    for op in consumed:
        first.setdefault(op["key"], op)
    return consumed, first, len(consumed) - len(first)


def check_fifo(ops, consumes, final, drained):
    import features
    problems = []
    invoked, acked, counts = _sends(ops)
    consumed, first, dups = _consumed(consumes)
    facts = {"sends": counts, "consumed": len(consumed), "duplicates": dups}

    phantoms = sorted(k for k in first if k not in invoked)
    _limit(problems, "fifo_phantom", phantoms, "fifo_phantom: %r consumed but never sent")
    facts["phantom"] = len(phantoms)

    wrong_queue = [(op["key"], op["queue"], features.fifo_queue(invoked[op["key"]]["skey"]))
                   for op in first.values() if op["key"] in invoked
                   and op["queue"] != features.fifo_queue(invoked[op["key"]]["skey"])]
    _limit(problems, "fifo_queue", wrong_queue, "fifo_queue: %s consumed from queue %d, its key selects %d")

    acked_seqs = {}
    for key in acked:
        inv = invoked.get(key)
        if inv is not None:
            acked_seqs.setdefault(inv["skey"], set()).add(inv["seq"])
    seen = {}          # skey -> acked seqs first consumed so far
    top = {}           # skey -> highest seq first consumed so far (acked or not)
    out_of_order = []
    skipped = []
    unacked_late = 0
    for op in sorted(first.values(), key=lambda op: op["t"]):
        inv = invoked.get(op["key"])
        if inv is None:
            continue
        skey, seq = inv["skey"], inv["seq"]
        if op["key"] not in acked:
            if seq < top.get(skey, -1):
                unacked_late += 1   # an unknown send stored after a later one: allowed, not acknowledged
            top[skey] = max(top.get(skey, -1), seq)
            continue
        if seq < top.get(skey, -1) and any(s > seq for s in seen.get(skey, ())):
            out_of_order.append((skey, seq, op["t"], max(s for s in seen[skey])))
        missing = sorted(s for s in acked_seqs.get(skey, ()) if s < seq and s not in seen.get(skey, set()))
        if missing:
            skipped.append((skey, seq, op["t"], missing[:5]))
        seen.setdefault(skey, set()).add(seq)
        top[skey] = max(top.get(skey, -1), seq)
    _limit(problems, "fifo_order", out_of_order,
           "fifo_order: key %s number %d first consumed at %.2f s after acknowledged number %d")
    _limit(problems, "fifo_order", skipped,
           "fifo_order: key %s number %d first consumed at %.2f s before acknowledged numbers %s")
    facts["out_of_order"] = len(out_of_order)
    facts["skipped"] = len(skipped)
    facts["unacked_late"] = unacked_late

    missed = sorted((k for k in acked if k not in first), key=lambda k: acked[k]["t"])
    facts["missed"] = len(missed)
    if missed and drained:
        problems.append("fifo_missed: %d acknowledged messages never consumed, first %s" % (len(missed), missed[:5]))
    lost = sorted(k for k in acked if k not in final)
    facts["not_on_final_master"] = len(lost)
    if lost:
        problems.append("fifo_lost: %d acknowledged messages not on the final master, first %s" % (len(lost), lost[:5]))
    return problems, facts


def check_tx(ops, consumes, final, drained):
    import wire
    problems = []
    decisions = {}
    modes = {}
    half = {"half_ok": 0, "half_fail": 0, "half_unknown": 0}
    committed = {}
    checks = 0
    end_errors = 0
    for op in ops:
        if op["type"] == "invoke":
            decisions[op["key"]] = op["decision"]
            modes[op["key"]] = op["mode"]
        elif op["type"] in half:
            half[op["type"]] += 1
        elif op["type"] == "check":
            checks += 1
        elif op["type"] == "end_error":
            end_errors += 1
        elif op["type"] == "end" and op["outcome"] == "commit" and op["code"] == wire.SUCCESS:
            committed.setdefault(op["key"], op)
    consumed, first, dups = _consumed(consumes)
    delivered = set(first) | set(final)
    facts = {"begun": len(decisions), "decided_commit": sum(1 for d in decisions.values() if d == "commit"),
             "decided_rollback": sum(1 for d in decisions.values() if d == "rollback"),
             "left_to_check": sum(1 for m in modes.values() if m != "explicit"), "half_ok": half["half_ok"],
             "half_fail": half["half_fail"], "half_unknown": half["half_unknown"], "checks": checks,
             "end_errors": end_errors, "committed": len(committed), "delivered": len(delivered),
             "duplicates": dups + sum(len(v) - 1 for v in final.values() if len(v) > 1)}

    phantoms = sorted(k for k in delivered if k not in decisions)
    _limit(problems, "tx_phantom", phantoms, "tx_phantom: %r delivered but never begun")
    facts["phantom"] = len(phantoms)

    rolled = sorted(k for k in delivered if decisions.get(k) == "rollback")
    _limit(problems, "tx_rollback_delivered",
           [(k, "consumed at %.2f s from %s" % (first[k]["t"], first[k]["addr"]) if k in first else "",
             "on the final master" if k in final else "") for k in rolled],
           "tx_rollback_delivered: %s was rolled back but delivered (%s %s)")
    facts["rollback_delivered"] = len(rolled)

    lost = sorted((k for k in committed if k not in final), key=lambda k: committed[k]["t"])
    _limit(problems, "tx_commit_lost",
           [(k, committed[k]["t"], committed[k]["addr"], " (consumed)" if k in first else "") for k in lost],
           "tx_commit_lost: %s committed (END acknowledged at %.2f s by %s) is not on the final master%s")
    facts["commit_lost"] = len(lost)
    not_consumed = sorted(k for k in committed if k not in first)
    facts["commit_not_consumed"] = len(not_consumed)
    if not_consumed and drained:
        problems.append("tx_commit_lost: %d committed transactions never consumed, first %s"
                        % (len(not_consumed), not_consumed[:5]))

    bad_type = sorted({op["key"] for op in consumed
                       if op.get("sys_flag", wire.TRANSACTION_COMMIT) & 0xC != wire.TRANSACTION_COMMIT})
    _limit(problems, "tx_not_committed_type", bad_type,
           "tx_not_committed_type: %s consumed with a transaction type other than COMMIT")
    facts["not_committed_type"] = len(bad_type)
    facts["unresolved"] = sum(1 for k, d in decisions.items() if d == "commit" and k not in committed
                              and k not in delivered)
    return problems, facts


def _clock_fault_overlaps(faults, clock_kinds, a, b):
    return any(f["kind"] in clock_kinds and f["start"] < b and f.get("end", float("inf")) > a for f in faults)


def _forward_clock_s(faults, clock_kinds, a, b):
    """The largest forward offset a clock fault overlapping [a, b] gave any node (faults_clock puts
    {node: seconds} in fault["clock"]): a message stored then is due that much later in real time."""
    return max([0.0] + [float(off) for f in faults if f["kind"] in clock_kinds and f["start"] < b
                        and f.get("end", float("inf")) > a for off in f.get("clock", {}).values()])


def check_timers(ops, consumes, final, drained, faults, clock_kinds=(), now_w=None):
    """`now_w`: the wall time of the final read (default now); a timer due later is not judged lost."""
    import time
    now_w = time.time() if now_w is None else now_w
    problems = []
    invoked, acked, counts = _sends(ops)
    consumed, first, dups = _consumed(consumes)
    facts = {"sends": counts, "acked_timer": sum(1 for k in acked if invoked.get(k, {}).get("kind") == "timer"),
             "acked_delay": sum(1 for k in acked if invoked.get(k, {}).get("kind") == "delay"),
             "delivered": len(first), "duplicates": dups}

    phantoms = sorted(k for k in set(first) | set(final) if k not in invoked)
    _limit(problems, "timer_phantom", phantoms, "timer_phantom: %r delivered but never sent")
    facts["phantom"] = len(phantoms)

    early = []
    early_clock = 0
    late = []
    for op in consumed:
        inv = invoked.get(op["key"])
        if inv is None:
            continue
        due = inv["due_w"]
        stored = op.get("store_ms", 0) / 1000.0
        if op["w"] < due - EARLY_EPS_S or stored < due - EARLY_EPS_S:
            if _clock_fault_overlaps(faults, clock_kinds, inv["t"], op["t"]):
                early_clock += 1
            else:
                early.append((inv["kind"], op["key"], min(op["w"], stored) - due, op["t"], op["addr"],
                              op["queue"], op["offset"]))
        if first.get(op["key"]) is op:
            late.append(op["w"] - due)
    _limit(problems, "timer_early", early,
           "timer_early: %s %s delivered %.3f s before its due time (consumed at %.2f s from %s, queue %d "
           "offset %d)")
    facts["early"] = len(early)
    facts["early_clock_fault"] = early_clock
    late.sort()
    facts["late_p50_s"] = round(late[len(late) // 2], 3) if late else 0.0
    facts["late_max_s"] = round(late[-1], 3) if late else 0.0
    facts["late_over_5s"] = sum(1 for x in late if x > 5.0)

    # A master whose wall clock was ahead when it stored a timer delivers it that much later (the due
    # time is on its clock, as in RocketMQ): not lost while that later time has not passed.
    shifted = {k: _forward_clock_s(faults, clock_kinds, invoked[k]["t"], acked[k]["t"]) for k in acked}
    lost = sorted((k for k in acked if k not in final and invoked[k]["due_w"] + shifted[k] < now_w - 1.5),
                  key=lambda k: acked[k]["t"])
    facts["late_by_clock_fault"] = sum(1 for k in acked if k not in final and shifted[k] > 0
                                       and invoked[k]["due_w"] < now_w - 1.5 <= invoked[k]["due_w"] + shifted[k])
    _limit(problems, "timer_lost",
           [(invoked[k]["kind"], k, acked[k]["t"], invoked[k]["due_w"] - invoked[k]["w"],
             " (consumed)" if k in first else "") for k in lost],
           "timer_lost: %s %s acknowledged at %.2f s, due %.1f s later, is not on the final master%s")
    facts["lost"] = len(lost)
    not_consumed = sorted(k for k in acked if k not in first and invoked[k]["due_w"] + shifted[k] < now_w - 1.5)
    facts["not_consumed"] = len(not_consumed)
    if not_consumed and drained:
        problems.append("timer_lost: %d acknowledged timers never consumed, first %s"
                        % (len(not_consumed), not_consumed[:5]))
    return problems, facts

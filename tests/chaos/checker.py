"""Checkers over a chaos run's history (history.jsonl: invoke / ok / fail / unknown per send) and the
final read of every replica's queues. Each returns problems (the run fails on any) and facts (reported).
Queues are (brokerName, queueId): each send carries its group ("broker"), and `check_groups` judges
each group's acknowledged sends against that group's own final master and in-sync replicas.

- lost: every acknowledged send (SEND_OK) is on the final master of its group.
- at_acked_offset: each acknowledged message is at the queue and offset its SEND_OK named.
- offset_reuse: no two SEND_OKs name the same queue offset for different messages.
- phantom: nothing read that no producer ever invoked.
- divergence: a group's in-sync replicas hold the same message at each queue offset both hold.
- duplicates (a fact): messages stored more than once (at-least-once allows it; counted).
- availability (a fact): the longest stretch without a SEND_OK, overall, per fault kind and per fault
  overlapping it; `outage_in` the longest stretch around one fault (the single-fault mode).

Over the consumers' history (consume / reset / commit, consumer.py), `check_consume`:

- consume_phantom: nothing consumed that no producer ever invoked.
- consume_misplaced: a consumed message that was acknowledged was consumed at the queue offset its
  SEND_OK named (never at another one).
- consume_order: per consumer and queue, between two resets, consumed offsets go up one by one; one
  that goes back fails, one that jumps is a gap (fails when an acknowledged slot was jumped).
- consume_reset (a fact): every reset (rebalance, PULL_OFFSET_MOVED), with the backwards ones
  counted; an offset read back with QUERY_CONSUMER_OFFSET that no member ever committed fails.
- consume_dirty_read: no consumer read, at a queue offset that was acknowledged, another message
  (one never acknowledged: a read of a record that was not on every in-sync replica and was cut
  by a failover). Apache's broker in controller mode with allAckInSyncStateSet dispatches to the
  consume queue only up to the confirm offset (readUnCommitted false), so its consumers never do.
- consume_missed: after the drain, every acknowledged message was consumed (those whose slot a
  dirty read consumed are counted apart: the group's offset had already passed them).
- consume duplicates and consume availability (facts), like the send ones.
"""


def _group_key(groups):
    """How an operation's group is found: its "broker" (brokerName), or with a single group the
    group itself for operations that name none (histories written before there were groups)."""
    default = next(iter(groups)) if len(groups) == 1 else None
    return lambda op: op.get("broker") or default


def _where(group, queue, offset, many):
    return ("%s queue %d offset %d" % (group, queue, offset)) if many else ("queue %d offset %d" % (queue, offset))


def check(history, reads, master, in_sync, faults, t_end):
    """One group: `reads` {replica: {(queue, offset): key}}, its final master and in-sync replicas."""
    return check_groups(history, {None: {"reads": reads, "master": master, "in_sync": in_sync}}, faults, t_end)


def check_groups(history, groups, faults, t_end):
    """Every group on its own: `groups` {brokerName: {"reads": {replica: {(queue, offset): key}},
    "master": final master's node, "in_sync": replicas in the final SyncStateSet}}. A send's group is
    its "broker"; queues are (brokerName, queueId), so a message acknowledged by group b must be on b's
    final master at b's queue and offset (being on group a's does not count)."""
    problems = []
    facts = {}
    group_of = _group_key(groups)
    many = len(groups) > 1
    invoked = set()
    acked = {}
    outcomes = {"ok": 0, "fail": 0, "unknown": 0}
    ack_at = {}
    ok_times = []
    for op in history:
        if op["type"] == "invoke":
            invoked.add(op["key"])
            continue
        outcomes[op["type"]] = outcomes.get(op["type"], 0) + 1
        if op["type"] == "ok":
            acked[op["key"]] = op
            if op.get("proc") != "probe":  # the single-fault mode's probe is no client: not availability
                ok_times.append(op["t"])
            slot = (group_of(op), op["queue"], op["offset"])
            # Queue -1: a gRPC send found on no replica (the proxy answers an offset only), its queue
            # unknown; it is counted lost below, and sharing the -1 slot says nothing of reuse.
            other = ack_at.get(slot) if op["queue"] >= 0 else None
            if other is not None and other["key"] != op["key"]:
                problems.append("offset_reuse: %s acknowledged for %s (at %.2f s) and %s (at %.2f s)"
                                % (_where(slot[0], slot[1], slot[2], many), other["key"], other["t"], op["key"],
                                   op["t"]))
            ack_at[slot] = op
    facts["sends"] = outcomes

    # Where each key is on its group's final master: {key: [(group, queue, offset)]}.
    where = {}
    master_reads = {}
    for group, g in groups.items():
        master_reads[group] = g["reads"].get(g["master"], {})
        for (queue, offset), key in master_reads[group].items():
            where.setdefault(key, []).append((group, queue, offset))
    lost = [k for k in acked if not any(w[0] == group_of(acked[k]) for w in where.get(k, ()))]
    for key in sorted(lost, key=lambda k: acked[k]["t"])[:20]:
        op = acked[key]
        group = group_of(op)
        problems.append("lost: %s acknowledged at %.2f s by %s (%s) is not on the final master %s%s"
                        % (key, op["t"], op["addr"], _where(group, op["queue"], op["offset"], many),
                           groups.get(group, {}).get("master"), (" of %s" % group) if many else ""))
    if len(lost) > 20:
        problems.append("lost: %d more" % (len(lost) - 20))
    facts["lost"] = len(lost)
    if many:
        facts["lost_per_group"] = {group: sum(1 for k in lost if group_of(acked[k]) == group) for group in groups}
    moved = 0
    for key, op in acked.items():
        slot = (group_of(op), op["queue"], op["offset"])
        if key not in lost and slot not in where[key]:
            moved += 1
            if moved <= 10:
                problems.append("at_acked_offset: %s acknowledged at %s, found at %s (holding %s)"
                                % (key, _where(slot[0], slot[1], slot[2], many), where[key],
                                   master_reads.get(slot[0], {}).get((op["queue"], op["offset"]))))
    facts["not_at_acked_offset"] = moved

    phantoms = sorted({key for g in groups.values() for read in g["reads"].values() for key in read.values()
                       if key not in invoked})
    for key in phantoms[:10]:
        problems.append("phantom: %r read but never sent" % key)
    facts["phantom"] = len(phantoms)

    facts["duplicates"] = sum(len(v) - 1 for v in where.values() if len(v) > 1)
    facts["stored_not_acked"] = sum(1 for k in where if k not in acked)

    diverged = 0
    for group, g in groups.items():
        master, master_read, reads = g["master"], master_reads[group], g["reads"]
        group_acked = [k for k in acked if group_of(acked[k]) == group and k not in lost]
        for name in g["in_sync"]:
            if name == master or name not in reads:
                continue
            for slot, key in reads[name].items():
                if slot in master_read and master_read[slot] != key:
                    diverged += 1
                    if diverged <= 10:
                        problems.append("divergence: %s holds %s on %s but %s on master %s"
                                        % (_where(group, slot[0], slot[1], many), key, name, master_read[slot],
                                           master))
            held = set(reads[name].values())
            missing = [k for k in group_acked if k not in held]
            if missing:
                problems.append("in-sync replica %s lacks %d acknowledged messages the master has (first %s)"
                                % (name, len(missing), missing[:3]))
    facts["diverged"] = diverged

    facts["availability"] = availability(sorted(ok_times), faults, t_end)
    if many:
        facts["availability_per_group"] = {
            group: availability(sorted(op["t"] for op in history if op["type"] == "ok" and op.get("proc") != "probe"
                                       and group_of(op) == group), faults, t_end)["longest_gap_s"]
            for group in groups}
    return problems, facts


def availability(ok_times, faults, t_end):
    """Longest gap without a SEND_OK overall, per fault kind the longest gap overlapping such a fault,
    and per fault (`per_fault`: kind, start, end, longest gap overlapping it) for medians."""
    edges = [0.0] + ok_times + [t_end]
    gaps = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    longest = max(gaps, key=lambda g: g[1] - g[0]) if gaps else (0.0, 0.0)
    per_kind = {}
    per_fault = []
    for f in faults:
        end = f.get("end", t_end)
        worst = 0.0
        for a, b in gaps:
            if b > f["start"] and a < end + 0.001:
                worst = max(worst, b - a)
                if b - a > per_kind.get(f["kind"], (0.0,))[0]:
                    per_kind[f["kind"]] = (round(b - a, 2), round(a, 2), round(b, 2))
        per_fault.append({"kind": f["kind"], "start": round(f["start"], 2), "end": round(end, 2),
                          "gap_s": round(worst, 2)})
    return {"longest_gap_s": round(longest[1] - longest[0], 2), "from": round(longest[0], 2),
            "to": round(longest[1], 2), "per_fault_kind": per_kind, "per_fault": per_fault}


def outage_in(times, start, end):
    """The longest stretch without an event (SEND_OK, consume) that overlaps [start, end], counted
    from the last event before `start` (sends flow continuously, so that is the outage a client saw);
    (gap, from, to). `times` sorted."""
    import bisect
    i = bisect.bisect_left(times, start)
    edges = ([times[i - 1]] if i > 0 else [start]) + [t for t in times[i:] if t <= end]
    if not edges or edges[-1] < end:
        # Nothing after the last event until `end`: that stretch counts up to the next event (or `end`).
        j = bisect.bisect_right(times, end)
        edges.append(times[j] if j < len(times) else end)
    best = (0.0, start, start)
    for a, b in zip(edges, edges[1:]):
        if b - a > best[0]:
            best = (b - a, a, b)
    return round(best[0], 3), round(best[1], 3), round(best[2], 3)


def _mq(mq):
    """(broker, queue) as "queue 3" or "chaos-broker-b queue 3"."""
    return ("%s queue %d" % mq) if mq[0] else ("queue %d" % mq[1])


def _slot(slot):
    return "%s offset %d" % (_mq(slot[:2]), slot[2])


def check_consume(consumes, history, faults, t_stop, drained, reads=None):
    """Checks of the consumers' history against the producers'. `t_stop` ends the availability
    window (the producers stopped then); `drained`: the consumers caught up after it. Queues are
    (brokerName, queueId): every operation's "broker" (None in histories without groups). `reads`
    (run.py's read_replicas: {brokerName: {replica: {(queue, offset): key}}}), when given, tells a
    second stored copy of a key from a misplaced read: a client that retries a send on its own
    (the SDKs do) can store a key twice when its first attempt timed out, and a consumer gets both;
    a consume at a slot where a replica holds that same key is that copy (counted, not a problem)."""
    stored = set()
    for group, replicas in (reads or {}).items():
        for table in replicas.values():
            stored.update((group, queue, offset, key) for (queue, offset), key in table.items())
    problems = []
    facts = {}
    invoked = set()
    acked = {}
    ack_at = {}
    for op in history:
        if op["type"] == "invoke":
            invoked.add(op["key"])
        elif op["type"] == "ok":
            acked[op["key"]] = op
            ack_at[(op.get("broker"), op["queue"], op["offset"])] = op
    consumed = [op for op in consumes if op["type"] == "consume"]
    facts["consumed"] = len(consumed)

    phantoms = sorted({op["key"] for op in consumed if op["key"] not in invoked})
    for key in phantoms[:10]:
        problems.append("consume_phantom: %r consumed but never sent" % key)
    facts["consume_phantom"] = len(phantoms)

    misplaced = 0
    copies = 0
    dirty = []
    for op in consumed:
        slot = (op.get("broker"), op["queue"], op["offset"])
        ack = acked.get(op["key"])
        if ack is not None and (ack.get("broker"), ack["queue"], ack["offset"]) != slot:
            if slot + (op["key"],) in stored:
                copies += 1
                continue
            misplaced += 1
            if misplaced <= 10:
                problems.append("consume_misplaced: %s consumed at %s from %s at %.2f s, acknowledged at %s"
                                % (op["key"], _slot(slot), op["addr"], op["t"],
                                   _slot((ack.get("broker"), ack["queue"], ack["offset"]))))
        other = ack_at.get(slot)
        if other is not None and other["key"] != op["key"] and ack is None:
            dirty.append((op, other))
    facts["consume_misplaced"] = misplaced
    facts["consume_stored_copies"] = copies
    for op, other in dirty[:10]:
        problems.append("consume_dirty_read: consumer %s read %s at %s from %s at %.2f s; that "
                        "offset was acknowledged for %s by %s at %.2f s, and %s never was"
                        % (op["consumer"], op["key"], _slot((op.get("broker"), op["queue"], op["offset"])),
                           op["addr"], op["t"],
                           other["key"], other["addr"], other["t"], op["key"]))
    if len(dirty) > 10:
        problems.append("consume_dirty_read: %d more" % (len(dirty) - 10))
    facts["dirty_reads"] = len(dirty)
    facts["dirty_reads_after_ack"] = sum(1 for op, other in dirty if op["t"] > other["t"])
    dirty_slots = {(op.get("broker"), op["queue"], op["offset"]) for op, _ in dirty}

    # Order per consumer and queue, between resets.
    committed = {}  # (broker, queue) -> offsets some member sent as committed before this event
    backwards = 0
    gaps = 0
    resets = {"rebalance": 0, "offset_moved": 0, "backwards": 0}
    expected = {}
    for op in consumes:
        mq = (op.get("broker"), op["queue"])
        key = (op["consumer"], mq)
        if op["type"] == "commit":
            committed.setdefault(mq, set()).add(op["offset"])
        elif op["type"] == "reset":
            resets[op["reason"]] = resets.get(op["reason"], 0) + 1
            if op["from"] is not None and op["to"] <= op["from"]:
                resets["backwards"] += 1
            if op["reason"] == "rebalance" and op["to"] != 0 and op["to"] not in committed.get(mq, ()):
                problems.append("consume_reset: consumer %s read back offset %d for %s at %.2f s, which no "
                                "member committed" % (op["consumer"], op["to"], _mq(mq), op["t"]))
            expected[key] = op["to"]
        elif op["type"] == "consume" and key in expected:
            want = expected[key]
            if op["offset"] < want:
                backwards += 1
                if backwards <= 10:
                    problems.append("consume_order: consumer %s got %s offset %d at %.2f s from %s after "
                                    "offset %d, without a reset" % (op["consumer"], _mq(mq), op["offset"],
                                                                    op["t"], op["addr"], want - 1))
            elif op["offset"] > want:
                gaps += 1
                jumped = [o for o in range(want, op["offset"]) if (mq[0], mq[1], o) in ack_at]
                if jumped:
                    problems.append("consume_order: consumer %s jumped from %s offset %d to %d at %.2f s "
                                    "from %s, past acknowledged offsets %s" % (
                                        op["consumer"], _mq(mq), want, op["offset"], op["t"], op["addr"],
                                        jumped[:5]))
            expected[key] = op["offset"] + 1
    facts["consume_backwards"] = backwards
    facts["consume_gaps"] = gaps
    facts["consume_resets"] = resets

    seen = {op["key"] for op in consumed}
    missed = [k for k in acked if k not in seen]
    explained = [k for k in missed if (acked[k].get("broker"), acked[k]["queue"], acked[k]["offset"]) in dirty_slots]
    facts["consume_missed"] = len(missed)
    facts["consume_missed_after_dirty_read"] = len(explained)
    unexplained = sorted((k for k in missed if k not in set(explained)), key=lambda k: acked[k]["t"])
    if unexplained:
        first = ["%s (%s, acked at %.2f s)" % (k, _slot((acked[k].get("broker"), acked[k]["queue"],
                                                         acked[k]["offset"])), acked[k]["t"])
                 for k in unexplained[:5]]
        if drained:
            problems.append("consume_missed: %d acknowledged messages never consumed, first %s"
                            % (len(unexplained), ", ".join(first)))
        else:
            facts["consume_missed_note"] = "the consumers did not catch up; first not consumed: %s" % ", ".join(first)

    counts = {}
    for op in consumed:
        counts[op["key"]] = counts.get(op["key"], 0) + 1
    facts["consume_duplicates"] = sum(n - 1 for n in counts.values() if n > 1)

    times = sorted(op["t"] for op in consumed if op["t"] <= t_stop)
    facts["consume_availability"] = availability(times, faults, t_stop)
    return problems, facts

"""Checkers over a chaos run's history (history.jsonl: invoke / ok / fail / unknown per send) and the
final read of every replica's queues. Each returns problems (the run fails on any) and facts (reported).

- lost: every acknowledged send (SEND_OK) is on the final master.
- at_acked_offset: each acknowledged message is at the queue and offset its SEND_OK named.
- offset_reuse: no two SEND_OKs name the same queue offset for different messages.
- phantom: nothing read that no producer ever invoked.
- divergence: in-sync replicas hold the same message at each queue offset both hold.
- duplicates (a fact): messages stored more than once (at-least-once allows it; counted).
- availability (a fact): the longest stretch without a SEND_OK, overall and per fault kind overlapping it.
"""


def check(history, reads, master, in_sync, faults, t_end):
    problems = []
    facts = {}
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
            ok_times.append(op["t"])
            slot = (op["queue"], op["offset"])
            other = ack_at.get(slot)
            if other is not None and other["key"] != op["key"]:
                problems.append("offset_reuse: queue %d offset %d acknowledged for %s (at %.2f s) and %s (at %.2f s)"
                                % (slot[0], slot[1], other["key"], other["t"], op["key"], op["t"]))
            ack_at[slot] = op
    facts["sends"] = outcomes

    master_read = reads.get(master, {})
    where = {}
    for (queue, offset), key in master_read.items():
        where.setdefault(key, []).append((queue, offset))
    lost = [k for k in acked if k not in where]
    for key in sorted(lost, key=lambda k: acked[k]["t"])[:20]:
        op = acked[key]
        problems.append("lost: %s acknowledged at %.2f s by %s (queue %d offset %d) is not on the final master %s"
                        % (key, op["t"], op["addr"], op["queue"], op["offset"], master))
    if len(lost) > 20:
        problems.append("lost: %d more" % (len(lost) - 20))
    facts["lost"] = len(lost)
    moved = 0
    for key, op in acked.items():
        if key in where and (op["queue"], op["offset"]) not in where[key]:
            moved += 1
            if moved <= 10:
                problems.append("at_acked_offset: %s acknowledged at queue %d offset %d, found at %s (holding %s)"
                                % (key, op["queue"], op["offset"], where[key],
                                   master_read.get((op["queue"], op["offset"]))))
    facts["not_at_acked_offset"] = moved

    phantoms = sorted({key for read in reads.values() for key in read.values() if key not in invoked})
    for key in phantoms[:10]:
        problems.append("phantom: %r read but never sent" % key)
    facts["phantom"] = len(phantoms)

    facts["duplicates"] = sum(len(v) - 1 for v in where.values() if len(v) > 1)
    facts["stored_not_acked"] = sum(1 for k in where if k not in acked)

    diverged = 0
    for name in in_sync:
        if name == master or name not in reads:
            continue
        for slot, key in reads[name].items():
            if slot in master_read and master_read[slot] != key:
                diverged += 1
                if diverged <= 10:
                    problems.append("divergence: queue %d offset %d holds %s on %s but %s on master %s"
                                    % (slot[0], slot[1], key, name, master_read[slot], master))
        held = set(reads[name].values())
        missing = [k for k in acked if k in where and k not in held]
        if missing:
            problems.append("in-sync replica %s lacks %d acknowledged messages the master has (first %s)"
                            % (name, len(missing), missing[:3]))
    facts["diverged"] = diverged

    facts["availability"] = availability(sorted(ok_times), faults, t_end)
    return problems, facts


def availability(ok_times, faults, t_end):
    """Longest gap without a SEND_OK overall, and per fault kind the longest gap overlapping such a fault."""
    edges = [0.0] + ok_times + [t_end]
    gaps = [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    longest = max(gaps, key=lambda g: g[1] - g[0]) if gaps else (0.0, 0.0)
    per_kind = {}
    for f in faults:
        end = f.get("end", t_end)
        for a, b in gaps:
            if b > f["start"] and a < end + 0.001:
                if b - a > per_kind.get(f["kind"], (0.0,))[0]:
                    per_kind[f["kind"]] = (round(b - a, 2), round(a, 2), round(b, 2))
    return {"longest_gap_s": round(longest[1] - longest[0], 2), "from": round(longest[0], 2),
            "to": round(longest[1], 2), "per_fault_kind": per_kind}

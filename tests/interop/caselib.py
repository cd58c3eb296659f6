"""Case registry and the checks shared by interop cases: what a consumer received against what was sent."""

import collections
import fnmatch
import os

import harness
import messages
from harness import CaseFailure, check

CASES = []

Case = collections.namedtuple("Case", "name func timeout exclusive", defaults=(False,))

# Cases that run alone under `run.py -j N` (after the concurrent ones), by name pattern (fnmatch), besides
# those registered with `exclusive=True`: one with ports outside the runner's port slices
# (deploy/local-cluster.sh's layout), and the long ones that kill and elect masters or run Apache's JVM
# servers beside ours, whose route-refresh and failover windows a loaded machine stretches.
EXCLUSIVE = (
    "cluster_2m_2s_*",          # local-cluster.sh: its own port block, 4 brokers + 2 name servers
    "*failover*",               # controller, 3 replicas, two SIGKILLed masters, route-refresh timing
    "*migration*",              # Apache's namesrv + broker JVMs, sends checked against route refresh times
)


def case(name, timeout=120, exclusive=False):
    """Register `func(ctx)` as an interop case with a hard timeout in seconds; `exclusive` (or a name in
    EXCLUSIVE) runs it alone when the runner runs cases side by side (`-j N`)."""
    def register(func):
        CASES.append(Case(name, func, timeout, exclusive))
        return func
    return register


def is_exclusive(case_):
    """The case must run with no other case beside it (see EXCLUSIVE)."""
    return case_.exclusive or any(fnmatch.fnmatchcase(case_.name, p) for p in EXCLUSIVE)


class Context:
    """What a case gets: its temp dir, its cluster (started by `start_cluster`) and a client launcher."""

    def __init__(self, name, workdir):
        self.name = name
        self.workdir = workdir
        self.cluster = None
        self.clients = None
        self.notes = []

    def start_cluster(self, flush_disk_type="ASYNC_FLUSH", extra_config=None):
        self.cluster = harness.Cluster(os.path.join(self.workdir, "cluster"), flush_disk_type=flush_disk_type,
                                       extra_config=extra_config)
        os.makedirs(self.cluster.workdir, exist_ok=True)
        self.clients = harness.Clients(self.workdir, self.cluster)
        self.cluster.start()
        return self.cluster

    def note(self, text):
        """A fact printed with the result (duplicates seen, counts), pass or fail."""
        self.notes.append(text)

    def cleanup(self):
        if self.cluster is not None:
            self.cluster.stop()

    def failure_logs(self):
        return self.cluster.log_tails() if self.cluster is not None else ""


def require_ok(result, what):
    """The client exited 0 and reported no errors."""
    errors = result.of_kind("send_error") + result.of_kind("error")
    if errors:
        first = errors[0]
        raise CaseFailure("%s: %d error(s), first: %s\n%s" % (what, len(errors), first, result.describe()))
    check(not result.timed_out and result.code == 0, "%s failed: %s" % (what, result.describe()))


def require_sent(result, prefix, count, statuses=("OK", "SendOk")):
    """Every message 0..count-1 was acknowledged with a SEND_OK-equivalent status."""
    require_ok(result, "producer %s" % prefix)
    sent = {r["i"]: r for r in result.of_kind("sent")}
    missing = [i for i in range(count) if i not in sent]
    check(not missing, "producer %s: no send result for %d message(s), first %s" % (prefix, len(missing), missing[:5]))
    bad = [(i, r["status"]) for i, r in sorted(sent.items()) if r["status"] not in statuses + ("ONEWAY",)]
    check(not bad, "producer %s: %d send(s) not SEND_OK, first %s" % (prefix, len(bad), bad[:5]))
    return sent


def _index_sets(spec):
    return {p: set(range(n)) if isinstance(n, int) else set(n) for p, n in (spec or {}).items()}


def check_received(ctx, result, want, allow_extra=False, what="consumer", optional=None):
    """Every expected message arrived with its exact body, tags, keys and user properties.

    `want` maps prefix -> count (messages 0..count-1), or prefix -> set of indexes. `optional` has the same
    shape: those messages may arrive (their fields are checked) but need not. Anything else fails the case,
    except indexes past the expected ones when `allow_extra`. Duplicates are allowed (at-least-once) and
    counted. Returns ({prefix: duplicates}, {optional prefix: messages received}).
    """
    want_sets = _index_sets(want)
    optional_sets = _index_sets(optional)
    got = {p: collections.Counter() for p in want_sets}
    optional_got = {p: 0 for p in optional_sets}
    wrong = []
    strays = []
    for rec in result.of_kind("recv"):
        origin = (rec.get("props") or {}).get("origin")
        seq = (rec.get("props") or {}).get("seq")
        if seq is None or not str(seq).isdigit():
            strays.append(rec)
            continue
        i = int(seq)
        if origin in optional_sets and i in optional_sets[origin]:
            optional_got[origin] += 1
            if rec_fields(rec) != messages.expected(origin, i):
                wrong.append((messages.expected(origin, i), rec_fields(rec)))
            continue
        if origin not in want_sets:
            strays.append(rec)
            continue
        if i not in want_sets[origin]:
            if not allow_extra:
                strays.append(rec)
            continue
        expected = messages.expected(origin, i)
        if rec_fields(rec) != expected:
            wrong.append((expected, rec_fields(rec)))
        got[origin][i] += 1
    check(not wrong, "%s: %d message(s) arrived with wrong fields, first: expected %r, got %r"
          % (what, len(wrong), wrong[0][0], wrong[0][1]) if wrong else "")
    check(not strays, "%s: %d unexpected message(s), first %r" % (what, len(strays), strays[:1]))
    dups = {}
    for prefix, indexes in want_sets.items():
        missing = sorted(indexes - set(got[prefix]))
        check(not missing, "%s: %d of %d message(s) of %s never arrived, first %s (%s)"
              % (what, len(missing), len(indexes), prefix, missing[:8], result.describe()))
        dups[prefix] = sum(c - 1 for c in got[prefix].values())
    ctx.note("%s: received %s, duplicates %s%s" % (
        what, {p: len(s) for p, s in want_sets.items()}, dups,
        ", optional received %s" % optional_got if optional_sets else ""))
    return dups, optional_got


def rec_fields(rec):
    return {"body": rec.get("body"), "tags": rec.get("tags"), "keys": rec.get("keys"), "props": rec.get("props")}


def store_shard(phys_offset):
    """The broker shard that stored a record: bits 48..62 of its physical (CommitLog) offset
    (docs/storage-format.md)."""
    return (int(phys_offset) >> 48) & 0x7FFF


def offset_of_msg_id(offset_msg_id):
    """The physical offset in an offsetMsgId (store host, then the offset as 16 hex digits)."""
    return int(offset_msg_id[-16:], 16)


def queue_key(rec):
    """(shard that stored it, queue id) of a client's record: one queue of the broker process.

    With shardRouting = direct every shard is a broker with queues 0..n-1 of each topic, so the queue id alone
    does not name a queue; the storing shard (in the physical offset) tells the shard-brokers apart. Consumer
    records carry `commit_log_offset` (C++ client) or the offsetMsgId as `msg_id` (Rust client); send results
    carry `offset_msg_id`.
    """
    if rec.get("commit_log_offset") is not None:
        phys = rec["commit_log_offset"]
    elif rec.get("offset_msg_id"):
        phys = offset_of_msg_id(rec["offset_msg_id"])
    else:
        phys = offset_of_msg_id(rec["msg_id"])
    return (store_shard(phys), rec["queue_id"])


def check_queue_order(result, prefix, what):
    """Per queue, messages of `prefix` arrived in send order (queue offsets increase with the index).

    Only first deliveries count: a redelivery through %RETRY% sits in another topic's queue.
    """
    by_queue = collections.defaultdict(list)
    for rec in result.of_kind("recv"):
        props = rec.get("props") or {}
        if props.get("origin") == prefix and rec.get("reconsume_times") == 0:
            by_queue[queue_key(rec)].append((rec["queue_offset"], int(props["seq"])))
    for queue_id, entries in by_queue.items():
        seqs_by_offset = [seq for _, seq in sorted(set(entries))]
        check(seqs_by_offset == sorted(seqs_by_offset),
              "%s: queue %s holds %s out of send order: %s" % (what, queue_id, prefix, seqs_by_offset[:20]))
    return by_queue


def check_sharding(result, prefix, count, what):
    """All messages with the same sharding key went to one queue (of one shard-broker), in send order."""
    by_queue = check_queue_order(result, prefix, what)
    queue_of_key = {}
    for queue_id, entries in by_queue.items():
        for _, seq in entries:
            key = messages.sharding_key(seq)
            queue_of_key.setdefault(key, set()).add(queue_id)
    split = {k: sorted(q) for k, q in queue_of_key.items() if len(q) > 1}
    check(not split, "%s: sharding keys spread over several queues: %s" % (what, split))
    return queue_of_key

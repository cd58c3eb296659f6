#!/usr/bin/env python3
"""The chaos runner: for each seed, a cluster in network namespaces (cluster.py, net.py), producers
and a consumer group (consumer.py) keeping a history, the nemesis applying the seed's fault schedule,
then every fault healed, the cluster left to recover, the consumers left to catch up, every
replica's queues read, and the checkers run (checker.py).

    tests/chaos/run.py --seeds 2 --seconds 60     # two random seeds (printed)
    tests/chaos/run.py --seed 1234 --seconds 60   # replay one seed's schedule
    tests/chaos/run.py --minutes 60 --report docs/benchmarks/chaos-DATE.md

Needs root (namespaces, nftables) and debug binaries of broker, namesrv and controller
(CHAOS_BIN_DIR to use others). Exit status 0 only when every seed passed every checker; 2 when the
host cannot run it (not root, tools missing).
"""

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import cluster as cl  # noqa: E402
import consumer as cons  # noqa: E402
import harness  # noqa: E402  (cluster.py put tests/interop on the path)
import java_clients  # noqa: E402
import nemesis  # noqa: E402
import net  # noqa: E402
import wire  # noqa: E402

TOPIC = "ChaosTopic"
QUEUES = 4
# Apache Java client producers per seed (java_clients.py); main() sets it from --java-producers.
JAVA_PRODUCERS = 0


class Producer(threading.Thread):
    """Sends one message at a time to the master the name server names, recording each operation."""

    def __init__(self, index, seed, cluster, t0, out, lock):
        super().__init__(daemon=True)
        self.index = index
        self.seed = seed
        self.cluster = cluster
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.stop_flag = threading.Event()
        self.history = []
        self.addr = None

    def record(self, op):
        op["t"] = round(time.monotonic() - self.t0, 4)
        op["proc"] = self.index
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def route(self):
        try:
            self.addr = wire.master_of(self.cluster.namesrv_addr, TOPIC, timeout=1.0)
        except (wire.NotSent, wire.Unknown, ValueError):
            self.addr = None

    def run(self):
        n = 0
        while not self.stop_flag.is_set():
            if self.addr is None:
                self.route()
                if self.addr is None:
                    self.stop_flag.wait(0.2)
                    continue
            key = "s%d-p%d-%d" % (self.seed, self.index, n)
            queue = (n + self.index) % QUEUES
            n += 1
            self.record({"type": "invoke", "key": key, "queue": queue, "addr": self.addr})
            try:
                reply = wire.send(self.addr, TOPIC, queue, key, ("chaos " + key).encode(), timeout=2.0)
            except wire.NotSent as err:
                self.record({"type": "fail", "key": key, "error": str(err)})
                self.route()
                continue
            except wire.Unknown as err:
                self.record({"type": "unknown", "key": key, "error": str(err)})
                self.route()
                continue
            if reply.code == wire.SUCCESS:
                self.record({"type": "ok", "key": key, "addr": self.addr, "queue": int(reply.ext.get("queueId", -1)),
                             "offset": int(reply.ext.get("queueOffset", -1)), "msgId": reply.ext.get("msgId")})
            else:
                # An error code may still leave the message stored (a replica timeout): not an ack.
                self.record({"type": "fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.route()
                self.stop_flag.wait(0.05)


def read_replicas(cluster):
    """{broker: {(queue, offset): key}} for every replica that answers."""
    reads = {}
    notes = []
    for name, addr in sorted(cluster.broker_addrs.items()):
        table = {}
        ok = True
        for queue in range(QUEUES):
            try:
                records, _, code = wire.pull_all(addr, TOPIC, queue)
            except (wire.NotSent, wire.Unknown, ValueError) as err:
                notes.append("read of %s queue %d failed: %s" % (name, queue, err))
                ok = False
                break
            if code not in (wire.SUCCESS, wire.PULL_NOT_FOUND, wire.PULL_OFFSET_MOVED):
                notes.append("read of %s queue %d ended with code %d" % (name, queue, code))
            for _, offset, _, props in records:
                table[(queue, offset)] = props.get("KEYS", "")
        if ok:
            reads[name] = table
    return reads, notes


def drain(consumers, quiet_s=3.0, limit_s=20.0):
    """Let the consumers catch up after the producers stopped: until none consumed for `quiet_s`
    (True), or `limit_s` passed (False)."""
    for c in consumers:
        c.freeze.set()
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        last = max([c.last_consume or 0.0 for c in consumers] + [start])
        if time.monotonic() - last >= quiet_s:
            return True
        time.sleep(0.2)
    return False


def run_seed(seed, seconds, producers, base, kinds=None, layout="controller", consumers=2):
    workdir = os.path.join(base, "seed-%d" % seed)
    os.makedirs(workdir, exist_ok=True)
    network = net.Network(cl.layout_nodes(layout))
    cluster = cl.Cluster(workdir, network, layout)
    result = {"seed": seed, "problems": [], "facts": {}, "workdir": workdir}
    events = nemesis.schedule(seed, seconds, kinds or (nemesis.CLASSIC_KINDS if layout == "classic" else None))
    with open(os.path.join(workdir, "schedule.json"), "w") as f:
        json.dump(events, f, indent=1)
    try:
        network.setup()
        cluster.start_all(TOPIC, QUEUES)
        t0 = time.monotonic()
        lock = threading.Lock()
        with open(os.path.join(workdir, "history.jsonl"), "w") as hist, \
                open(os.path.join(workdir, "faults.jsonl"), "w") as flog:
            prods = [Producer(i, seed, cluster, t0, hist, lock) for i in range(producers)]
            for p in prods:
                p.start()
            java = [java_clients.JavaProducer(i, seed, cluster, TOPIC, t0, hist, lock, workdir)
                    for i in range(JAVA_PRODUCERS)]
            for j in java:
                j.start()
            cons_ = [cons.Consumer(i, consumers, cluster, TOPIC, QUEUES, t0, hist, lock) for i in range(consumers)]
            for c in cons_:
                c.start()
            nem = nemesis.Nemesis(cluster, network, events, t0, flog)
            nem.start()
            # Short sleeps: a SIGTERM the kernel gave to another thread is acted on by this one only
            # when it runs, so a long sleep would delay the clean-up by the whole run.
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(0.2)
            nem.heal_everything()
            healed_at = time.monotonic() - t0
            # Recovery: a master with every replica in sync, and a send acknowledged after the heal.
            full_sync = True
            try:
                cluster.wait_group(cluster.full, "full SyncStateSet after the heal", 60)
            except RuntimeError as err:
                full_sync = False
                result["problems"].append("recovery: %s" % err)
            end = time.monotonic() + 30
            while time.monotonic() < end and not any(
                    op["type"] == "ok" and op["t"] > healed_at for p in prods for op in p.history[-50:]):
                time.sleep(0.2)
            result["facts"]["recovery_wait_s"] = round(time.monotonic() - t0 - healed_at, 1)
            for p in prods:
                p.stop_flag.set()
            for j in java:
                j.stop()
            for p in prods:
                p.join(10)
            t_end = time.monotonic() - t0
            drained = drain(cons_) if cons_ else True
            for c in cons_:
                c.stop_flag.set()
            for c in cons_:
                c.join(10)
            result["facts"]["drain_s"] = round(time.monotonic() - t0 - t_end, 1)
        history = sorted((op for p in prods + java for op in p.history), key=lambda op: op["t"])
        after = [op["t"] for op in history if op["type"] == "ok" and op["t"] > healed_at]
        recovered_at = after[0] if after else t_end
        if not after:
            result["problems"].append("recovery: no send acknowledged in %.0f s after every fault was healed"
                                      % (t_end - healed_at))
        info = cluster.info()
        master = cluster.broker_at(info["masterAddress"]) if info else None
        # Every replica once the SyncStateSet is full again (producers stopped, so nothing is in flight).
        in_sync = list(cluster.brokers) if full_sync and info and cluster.full(info) else []
        if layout == "classic" and in_sync:
            # The slave copies asynchronously what it has not acknowledged: let it catch up first.
            time.sleep(3)
        read_from = time.monotonic()
        reads, notes = read_replicas(cluster)
        result["facts"]["read_s"] = round(time.monotonic() - read_from, 1)
        if master is None or master not in reads:
            result["problems"].append("final read: no master to read (controllers say %s; %s)" % (info, notes))
        else:
            problems, facts = checker.check(history, reads, master, in_sync, nem.applied, t_end)
            result["problems"].extend(problems)
            result["facts"].update(facts)
        if cons_:
            consumes = sorted((op for c in cons_ for op in c.history), key=lambda op: op["t"])
            problems, facts = checker.check_consume(consumes, history, nem.applied, t_end, drained)
            result["problems"].extend(problems)
            result["facts"].update(facts)
            result["facts"]["consumer_errors"] = [c.errors for c in cons_]
        result["facts"]["java_producer_errors"] = [e for j in java for e in j.errors]
        result["facts"].update({"healed_at_s": round(healed_at, 2),
                                "first_ok_after_heal_s": round(recovered_at - healed_at, 2),
                                "faults": [(round(f["start"], 1), f["kind"], f.get("target")) for f in nem.applied],
                                "nemesis_errors": nem.errors, "read_notes": notes, "final": info,
                                "in_sync": in_sync, "starts": cluster.starts})
    except Exception as err:
        result["problems"].append("harness: %s: %s" % (type(err).__name__, err))
    finally:
        stop_from = time.monotonic()
        cluster.stop_all()
        harness.stop_everything()
        network.teardown()
        result["facts"]["stop_s"] = round(time.monotonic() - stop_from, 1)
    return result


def print_result(r):
    f = r["facts"]
    status = "PASS" if not r["problems"] else "FAIL"
    print("== seed %d: %s  (replay: tests/chaos/run.py --seed %d --seconds %s%s)"
          % (r["seed"], status, r["seed"], r["seconds"], (" --kinds " + ",".join(r["kinds"]) if r["kinds"] else "")
             + (" --layout classic" if r["layout"] == "classic" else "")))
    if f.get("sends"):
        av = f["availability"]
        print("   sends %s; lost %d, phantom %d, duplicates %d, stored-not-acked %d, diverged %d"
              % (f["sends"], f["lost"], f["phantom"], f["duplicates"], f["stored_not_acked"], f["diverged"]))
        print("   longest send outage %.2f s (%.1f..%.1f); first ack after heal %.2f s"
              % (av["longest_gap_s"], av["from"], av["to"], f["first_ok_after_heal_s"]))
        for kind, (gap, a, b) in sorted(av["per_fault_kind"].items()):
            print("     %-19s longest outage overlapping it %.2f s (%.1f..%.1f)" % (kind, gap, a, b))
    if "consumed" in f:
        cav = f["consume_availability"]
        print("   consumed %d (duplicates %d, missed %d of which after a dirty read %d, dirty reads %d, %d after "
              "the slot's ack); phantom %d, misplaced %d, backwards %d, gaps %d; resets %s; drain %s s%s"
              % (f["consumed"], f["consume_duplicates"], f["consume_missed"], f["consume_missed_after_dirty_read"],
                 f["dirty_reads"], f["dirty_reads_after_ack"], f["consume_phantom"], f["consume_misplaced"],
                 f["consume_backwards"], f["consume_gaps"], f["consume_resets"], f.get("drain_s"),
                 "" if "consume_missed_note" not in f else " (" + f["consume_missed_note"] + ")"))
        print("   longest consume outage %.2f s (%.1f..%.1f)" % (cav["longest_gap_s"], cav["from"], cav["to"]))
        for kind, (gap, a, b) in sorted(cav["per_fault_kind"].items()):
            print("     %-19s longest consume outage overlapping it %.2f s (%.1f..%.1f)" % (kind, gap, a, b))
    print("   phases: recovery wait %s s, read %s s, stop %s s" % (f.get("recovery_wait_s"), f.get("read_s"), f.get("stop_s")))
    for fault in f.get("faults", []):
        print("   fault %6.1f s %-19s %s" % fault)
    for note in f.get("nemesis_errors", []) + f.get("read_notes", []) + f.get("java_producer_errors", []):
        print("   note: %s" % note)
    for p in r["problems"]:
        print("   PROBLEM %s" % p)
    print("   files: %s" % r["workdir"])
    sys.stdout.flush()


def write_report(path, results, seconds):
    lines = ["# Chaos run, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "tests/chaos/run.py, %d seeds of %d s each (3 controllers, 1 name server, a broker group of 3 "
             "replicas in controller mode, each in its own network namespace)." % (len(results), seconds), "",
             "| seed | verdict | ok | fail | unknown | lost | duplicates | longest send outage (s) | consumed | "
             "consume duplicates | consume missed | longest consume outage (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    kinds = {}
    for r in results:
        f = r["facts"]
        s = f.get("sends", {})
        av = f.get("availability", {})
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["seed"], "pass" if not r["problems"] else "FAIL", s.get("ok"), s.get("fail"), s.get("unknown"),
            f.get("lost"), f.get("duplicates"), av.get("longest_gap_s"), f.get("consumed"),
            f.get("consume_duplicates"), f.get("consume_missed"),
            f.get("consume_availability", {}).get("longest_gap_s")))
        for kind, (gap, _, _) in av.get("per_fault_kind", {}).items():
            kinds[kind] = max(kinds.get(kind, 0), gap)
    lines += ["", "Longest send outage overlapping each fault kind, over all seeds:", "",
              "| fault kind | longest outage (s) |", "| --- | --- |"]
    lines += ["| %s | %.2f |" % kv for kv in sorted(kinds.items())]
    problems = [(r["seed"], p) for r in results for p in r["problems"]]
    lines += ["", "Problems:" if problems else "No problems found.", ""]
    lines += ["- seed %d: %s" % sp for sp in problems]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _terminate(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main():
    signal.signal(signal.SIGTERM, _terminate)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", help="replay this seed (repeatable)")
    ap.add_argument("--seeds", type=int, default=2, help="random seeds to run when no --seed is given")
    ap.add_argument("--seconds", type=int, default=60, help="fault time per seed")
    ap.add_argument("--minutes", type=float, help="long mode: seeds of --seconds each until this many minutes")
    ap.add_argument("--producers", type=int, default=3)
    ap.add_argument("--java-producers", type=int, default=1,
                    help="producers on Apache's Java client (0: none; skipped with a note when it cannot be built)")
    ap.add_argument("--consumers", type=int, default=2, help="members of the consumer group (0: none)")
    ap.add_argument("--layout", choices=sorted(cl.LAYOUTS), default="controller",
                    help="controller: 3 controllers + 3 replicas; classic: SYNC_MASTER + SLAVE")
    ap.add_argument("--kinds", help="comma-separated fault kinds to draw from (default all: %s)"
                    % ",".join(nemesis.KINDS))
    ap.add_argument("--report", help="write a markdown report here")
    ap.add_argument("--workdir", help="put the run's directory here (scripts/chaos.sh cleans up after it)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory even when every seed passed")
    args = ap.parse_args()
    kinds = [k for k in (args.kinds or "").split(",") if k]
    unknown = [k for k in kinds if k not in nemesis.KINDS]
    if unknown:
        ap.error("unknown fault kinds %s (known: %s)" % (unknown, ", ".join(nemesis.KINDS)))
    why = net.available()
    if why:
        print("chaos: cannot run here: %s" % why)
        return 2
    global JAVA_PRODUCERS
    if args.java_producers:
        why = java_clients.build()
        if why:
            print("chaos: no Java client producers: %s" % why)
        else:
            JAVA_PRODUCERS = args.java_producers
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        base = args.workdir
    else:
        base = tempfile.mkdtemp(prefix="rmq-chaos-")
    results = []
    seeds = list(args.seed or [])
    started = time.monotonic()
    rng = random.Random()
    while True:
        if args.seed:
            if not seeds:
                break
            seed = seeds.pop(0)
        elif args.minutes is not None:
            if time.monotonic() - started > args.minutes * 60:
                break
            seed = rng.randrange(1, 1 << 31)
        else:
            if len(results) >= args.seeds:
                break
            seed = rng.randrange(1, 1 << 31)
        print("== seed %d starting (%d s of faults)" % (seed, args.seconds))
        sys.stdout.flush()
        r = run_seed(seed, args.seconds, args.producers, base, kinds or None, args.layout, args.consumers)
        r["seconds"] = args.seconds
        r["kinds"] = kinds
        r["layout"] = args.layout
        results.append(r)
        print_result(r)
    failed = [r["seed"] for r in results if r["problems"]]
    if args.report:
        write_report(args.report, results, args.seconds)
    print("chaos: %d seeds, %d failed%s; seeds run: %s" % (
        len(results), len(failed), (" (%s)" % failed) if failed else "", [r["seed"] for r in results]))
    if failed or args.keep:
        print("chaos: run directory kept: %s" % base)
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

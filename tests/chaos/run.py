#!/usr/bin/env python3
"""The chaos runner: for each seed, a cluster in network namespaces (cluster.py, net.py), producers
and a consumer group (consumer.py) keeping a history, the nemesis applying the seed's fault schedule,
then every fault healed, the cluster left to recover, the consumers left to catch up, every
replica's queues read, and the checkers run (checker.py).

    tests/chaos/run.py --seeds 2 --seconds 60     # two random seeds (printed)
    tests/chaos/run.py --seed 1234 --seconds 60   # replay one seed's schedule
    tests/chaos/run.py --minutes 60 --report docs/benchmarks/chaos-DATE.md
    tests/chaos/run.py --single --kinds kill_master,isolate_master   # each kind alone, twice, timed

Needs root (namespaces, nftables) and debug binaries of broker, namesrv, controller and proxy
(CHAOS_BIN_DIR to use others). `--groups N` (default 2) broker groups in the controller layout. Exit status 0 only when every seed passed every checker; 2 when the
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
import go_clients  # noqa: E402
import java_clients  # noqa: E402
import nemesis  # noqa: E402
import report  # noqa: E402
import sdk_clients  # noqa: E402
import net  # noqa: E402
import features  # noqa: E402
import wire  # noqa: E402

TOPIC = "ChaosTopic"
QUEUES = 4
# The message kinds of features.py that run beside the plain producers (main() sets it from --features).
FEATURES = ("fifo", "tx", "timer")
# Apache Java client producers and consumers per seed (java_clients.py); main() sets them from
# --java-producers and --java-consumers.
JAVA_PRODUCERS = 0
JAVA_CONSUMERS = 0
# The Java gRPC SDK through the proxy (sdk_clients.py: a producer, a SimpleConsumer group, a FIFO producer
# and an orderly group) and the Go client's producers and consumers (go_clients.py); main() sets them.
GRPC_CLIENTS = False
# How long the gRPC consumer group may go without a message before the drain judges it stopped (s).
GRPC_QUIET_S = 20.0
GO_PRODUCERS = 0
GO_CONSUMERS = 0


class Producer(threading.Thread):
    """Sends one message at a time over the topic's queues of every group in turn, each to its
    group's master as the name servers route it, recording each operation (with the group as
    "broker": queues are (brokerName, queueId))."""

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
        self.groups = cluster.group_names()
        self.addrs = {}  # group -> its master's address as last routed

    def record(self, op):
        op["t"] = round(time.monotonic() - self.t0, 4)
        op["proc"] = self.index
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def route(self):
        """Asks the name servers (the first that answers) for the masters. When none can be reached
        the producer keeps the route it had, as RocketMQ's clients keep their cached route when a
        route query fails; a route that lists a group without a master takes that group away."""
        route = cl.topic_route(self.cluster.namesrv_addrs, TOPIC, timeout=1.0)
        if route is not None:
            self.addrs = {g: route.get(g) for g in self.groups}

    def run(self):
        n = 0
        slot = self.index
        while not self.stop_flag.is_set():
            # The next queue of the topic, over every group's queues in turn; a group without a
            # known master is passed over (as a client's queue selection skips a broker it cannot
            # reach), so one group's outage does not hold up the other's sends.
            slot += 1
            group = self.groups[(slot // QUEUES) % len(self.groups)]
            queue = slot % QUEUES
            addr = self.addrs.get(group)
            if addr is None:
                self.route()
                addr = self.addrs.get(group)
                if addr is None:
                    if not any(self.addrs.values()):
                        self.stop_flag.wait(0.2)
                    continue
            key = "s%d-p%d-%d" % (self.seed, self.index, n)
            n += 1
            self.record({"type": "invoke", "key": key, "broker": group, "queue": queue, "addr": addr})
            try:
                reply = wire.send(addr, TOPIC, queue, key, ("chaos " + key).encode(), timeout=2.0)
            except wire.NotSent as err:
                self.record({"type": "fail", "key": key, "error": str(err)})
                self.route()
                slot = self._next_group(slot)
                continue
            except wire.Unknown as err:
                self.record({"type": "unknown", "key": key, "error": str(err)})
                self.route()
                slot = self._next_group(slot)
                continue
            if reply.code == wire.SUCCESS:
                self.record({"type": "ok", "key": key, "addr": addr, "broker": group,
                             "queue": int(reply.ext.get("queueId", -1)),
                             "offset": int(reply.ext.get("queueOffset", -1)), "msgId": reply.ext.get("msgId")})
            else:
                # An error code may still leave the message stored (a replica timeout): not an ack.
                self.record({"type": "fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.route()
                slot = self._next_group(slot)
                self.stop_flag.wait(0.05)

    @staticmethod
    def _next_group(slot):
        """After a failed send the next one goes to the next group's queues (RocketMQ's producer
        retries on another broker too)."""
        return slot + QUEUES - 1 - slot % QUEUES


def read_replicas(cluster):
    """{group: {replica: {(queue, offset): key}}} for every replica that answers."""
    reads = {g: {} for g in cluster.group_names()}
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
            reads[cluster.group_of[name]][name] = table
    return reads, notes


def drain(groups, acked, quiet_s, limit_s=30.0):
    """Let the consumer groups (lists of members) catch up after the producers stopped: until every
    group consumed every key of `acked`, or `limit_s` passed. Per group, in order: True when it got
    every key, or when none of its members consumed in the last `quiet_s` (that group's entry: they
    stopped short, what they missed is missed); False when it was still consuming (not caught up: what
    it has not got yet is a note, not a loss). A group that stalls on one broker group while consuming
    the other (a client's pull hung on a cut master until its own timeout) gets the whole limit."""
    for c in (c for g in groups for c in g):
        c.freeze.set()

    def caught_up(g):
        return not g or acked <= {op["key"] for c in g for op in list(getattr(c, "consumes", c.history))
                         if op["type"] == "consume"}

    start = time.monotonic()
    while time.monotonic() - start < limit_s and not all(caught_up(g) for g in groups):
        time.sleep(0.2)
    now = time.monotonic()
    return [caught_up(g) or now - max([c.last_consume or 0.0 for c in g] + [start]) >= quiet
            for g, quiet in zip(groups, quiet_s)]


class Monitor:
    """Who the controllers name master of each group, polled every 0.1 s from each controller on its
    own thread per group (a partitioned or paused controller holds back only its own poll; a
    follower answers nothing, so every answer is the committed state). `observations`: (t, epoch,
    master address, SyncStateSet size, group). A probe thread per group sends to each newly elected
    master directly until one SEND_OK (recorded in its own history, checked with the producers'),
    which times "the new master accepts sends" apart from the producers' route refresh and
    timeouts."""

    def __init__(self, seed, cluster, t0, out, lock, period=0.1):
        self.seed = seed
        self.cluster = cluster
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.period = period
        self.stop_flag = threading.Event()
        self.observations = []
        self.history = []
        self.best = {g: (0, None) for g in cluster.group_names()}  # (epoch, address) of the newest master seen
        self.obs_lock = threading.Lock()
        self.threads = [threading.Thread(target=self._poll, args=(addr, g), daemon=True)
                        for g in cluster.group_names() for addr in cluster.controller_addrs]
        self.threads += [threading.Thread(target=self._probe, args=(g,), daemon=True) for g in cluster.group_names()]

    def now(self):
        return round(time.monotonic() - self.t0, 4)

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(5)

    def _poll(self, addr, group):
        while not self.stop_flag.is_set():
            try:
                info = wire.replica_info(addr, group, timeout=0.5)
            except (wire.NotSent, wire.Unknown, ValueError):
                info = None
            if info is not None and info["masterBrokerId"] is not None:
                with self.obs_lock:
                    self.observations.append((self.now(), info["masterEpoch"], info["masterAddress"],
                                              len(info["syncStateSet"]), group))
                    if info["masterEpoch"] > self.best[group][0]:
                        self.best[group] = (info["masterEpoch"], info["masterAddress"])
            self.stop_flag.wait(self.period)

    def _probe(self, group):
        probed = 0  # the epoch whose master the probe already got a SEND_OK from
        n = 0
        while not self.stop_flag.is_set():
            with self.obs_lock:
                epoch, addr = self.best[group]
            if epoch <= probed or not addr:
                self.stop_flag.wait(0.02)
                continue
            if probed == 0:
                probed = epoch  # the first master (the cluster's start) is not a failover
                continue
            key = "s%d-probe-%s-%d" % (self.seed, group, n)
            queue = n % QUEUES
            n += 1
            self._record({"type": "invoke", "key": key, "broker": group, "queue": queue, "addr": addr,
                          "epoch": epoch})
            try:
                reply = wire.send(addr, TOPIC, queue, key, ("chaos " + key).encode(), timeout=0.5)
            except wire.NotSent as err:
                self._record({"type": "fail", "key": key, "error": str(err)})
                self.stop_flag.wait(0.05)
                continue
            except wire.Unknown as err:
                self._record({"type": "unknown", "key": key, "error": str(err)})
                continue
            if reply.code == wire.SUCCESS:
                self._record({"type": "ok", "key": key, "addr": addr, "broker": group,
                              "queue": int(reply.ext.get("queueId", -1)),
                              "offset": int(reply.ext.get("queueOffset", -1)), "msgId": reply.ext.get("msgId"),
                              "epoch": epoch})
                probed = epoch
            else:
                self._record({"type": "fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.stop_flag.wait(0.05)

    def _record(self, op):
        op["t"] = self.now()
        op["proc"] = "probe"
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def master_at(self, t, group):
        """(epoch, address) of the newest master of `group` the controllers named at or before `t`."""
        best = (0, None)
        with self.obs_lock:
            for ot, epoch, addr, _, g in self.observations:
                if g == group and ot <= t and epoch > best[0]:
                    best = (epoch, addr)
        return best

    def first_newer(self, t, epoch, group):
        """The first observation of `group` after `t` naming a master of a newer epoch than `epoch`."""
        with self.obs_lock:
            for obs in self.observations:
                if obs[4] == group and obs[0] >= t and obs[1] > epoch:
                    return obs
        return None


class SingleFaults:
    """The single-fault mode: each kind alone, in turn, `repeats` times, each started on a healthy
    cluster (full SyncStateSet, sends acknowledged and messages consumed in the last second or two,
    nothing paused or dead), held for the duration the nemesis draws for it, healed, and followed
    by a wait for full recovery before the next. Faults go through the nemesis' own start and heal,
    so any kind in nemesis.KINDS works."""

    def __init__(self, seed, kinds, repeats, cluster, network, t0, flog, prods, cons_, monitor):
        self.seed = seed
        self.kinds = kinds
        self.repeats = repeats
        self.cluster = cluster
        self.network = network
        self.t0 = t0
        self.flog = flog
        self.prods = prods
        self.cons = cons_
        self.monitor = monitor
        self.applied = []
        self.errors = []
        self.events = []
        self.measures = []
        self.problems = []
        self._seq = 0

    def now(self):
        return time.monotonic() - self.t0

    def _last_ok(self, group):
        return max([op["t"] for p in self.prods for op in p.history[-24:]
                    if op["type"] == "ok" and op.get("broker") == group] + [-1.0])

    def _last_consume(self, group):
        return max([op["t"] for c in self.cons for op in c.history[-24:]
                    if op["type"] == "consume" and op.get("broker") == group] + [-1.0])

    def _healthy(self, after):
        """Every group's SyncStateSet full, every process up, and per group a SEND_OK and (with
        consumers) a consume in the last second or two, both after `after`."""
        if self.cluster.paused or not all(self.cluster.alive(n) for n in self.cluster.nodes):
            return False
        if not self.cluster.all_full():
            return False
        now = self.now()
        for group in self.cluster.group_names():
            if self._last_ok(group) < max(after, now - 1.0):
                return False
            if self.cons and self._last_consume(group) < max(after, now - 2.0):
                return False
        return True

    def wait_healthy(self, after, limit_s=60.0):
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            if self._healthy(after):
                return True
            time.sleep(0.1)
        return False

    def run(self):
        n = 0
        for rnd in range(self.repeats):
            for kind in self.kinds:
                if not self.wait_healthy(self.now() - 1.0):
                    self.problems.append("single: the cluster was not healthy within 60 s before %s (round %d)"
                                         % (kind, rnd + 1))
                    return
                n += 1
                # The nemesis draws this kind's duration and choices, as in a random schedule.
                event = dict(nemesis.schedule(self.seed * 1000 + n, 60, [kind])[0])
                event["at"] = round(self.now(), 2)
                self.events.append(event)
                self.one(event)

    def one(self, event):
        now = self.now()
        befores = {g: self.monitor.master_at(now, g) for g in self.cluster.group_names()}
        nem = nemesis.Nemesis(self.cluster, self.network, [event], self.t0, self.flog)
        nem._seq = self._seq  # fault ids stay unique over the run (the network rules are named by them)
        nem.start()
        limit = time.monotonic() + event["duration"] + 20
        applied_at = None
        while time.monotonic() < limit and not nem.errors and not (nem.applied and "end" in nem.applied[0]):
            if applied_at is None and nem.applied:
                applied_at = self.now()  # in effect (resolving the target and the rules take a while)
            time.sleep(0.01 if applied_at is None else 0.05)
        nem.stop_flag.set()
        nem.join(10)
        self._seq = nem._seq
        self.errors.extend(nem.errors)
        if not nem.applied:
            self.problems.append("single: %s was not applied: %s" % (event["kind"], nem.errors))
            return
        fault = nem.applied[0]
        before = befores.get(fault.get("group"), (0, None))
        if "end" not in fault:
            nem._heal(fault)
        self.applied.append(fault)
        healed = fault["end"]
        recovered = self.wait_healthy(healed)
        if not recovered:
            self.problems.append("single: %s (%s) at %.1f s: not recovered within 60 s of its heal"
                                 % (fault["kind"], fault.get("target"), fault["start"]))
        self.measures.append({"kind": fault["kind"], "target": fault.get("target"), "group": fault.get("group"),
                              "start": applied_at if applied_at is not None else fault["start"],
                              "asked": fault["start"], "end": healed, "recovered": self.now() if recovered else None,
                              "epoch_before": before[0], "master_before": before[1]})

    def measure(self, history, consumes):
        """Fills each fault's figures from the histories, in seconds from the moment the fault took
        effect (`effect`): the start of the send outage when one began while the fault was being
        applied (the nemesis resolves the target and loads nftables rules first, which took 0.2-3 s
        on the loaded machine; the cut is in force before that returns), else when it returned."""
        for m in self.measures:
            # The fault's group's sends and consumes (the other group's go on through it).
            oks = sorted(op["t"] for op in history if op["type"] == "ok" and op.get("proc") != "probe"
                         and op.get("broker") == m["group"])
            consumed = sorted(op["t"] for op in consumes if op["type"] == "consume" and op.get("broker") == m["group"])
            asked = m.get("asked", m["start"])
            until = m["recovered"] if m["recovered"] is not None else m["end"] + 60
            m["recovery_s"] = round(until - m["end"], 2) if m["recovered"] is not None else None
            gap, gap_from, _ = checker.outage_in(oks, asked, until)
            effect = gap_from if asked - 0.05 <= gap_from <= m["start"] and gap > 0.2 else m["start"]
            m["effect"] = round(effect, 3)
            new = self.monitor.first_newer(asked, m["epoch_before"], m["group"])
            new = new if new is not None and new[0] <= until else None
            m["elected"] = bool(new)
            m["elected_s"] = round(new[0] - effect, 3) if new else None
            m["master_after"] = new[2] if new else None
            m["accepting_s"] = None
            m["first_ok_new_s"] = None
            if new:
                probe = [op["t"] for op in self.monitor.history
                         if op["type"] == "ok" and op.get("epoch") == new[1] and asked <= op["t"] <= until]
                m["accepting_s"] = round(min(probe) - effect, 3) if probe else None
                firsts = [op["t"] for op in history if op["type"] == "ok" and op.get("proc") != "probe"
                          and op.get("addr") == new[2] and asked <= op["t"] <= until]
                m["first_ok_new_s"] = round(min(firsts) - effect, 3) if firsts else None
            m["send_outage_s"] = round(gap, 3)
            m["consume_outage_s"] = checker.outage_in(consumed, asked, until)[0] if self.cons else None


def print_single(table):
    cols = [k for k, _ in report.SINGLE_MEASURES]
    print("   single faults (seconds from the fault taking effect; median / max):")
    print("     %-19s %5s %5s  %s" % ("kind", "count", "elect", "  ".join("%-13s" % c[:-2] for c in cols)))
    for kind in sorted(table):
        row = table[kind]
        cells = ["%-13s" % ("-" if row[c] is None else "%.2f / %.2f" % row[c][:2]) for c in cols]
        print("     %-19s %5d %5d  %s" % (kind, row["count"], row["elections"], "  ".join(cells)))


def timeline(history, consumes, faults, t_end):
    """Per second: sends acknowledged and messages consumed; the faults as (start, end, kind, target)."""
    n = int(t_end) + 1
    ok = [0] * n
    cons_ = [0] * n
    for op in history:
        if op["type"] == "ok" and 0 <= op["t"] < n:
            ok[int(op["t"])] += 1
    for op in consumes:
        if op["type"] == "consume" and 0 <= op["t"] < n:
            cons_[int(op["t"])] += 1
    return {"ok_per_s": ok, "consumed_per_s": cons_, "t_end": round(t_end, 2),
            "faults": [(round(f["start"], 2), round(f.get("end", t_end), 2), f["kind"], f.get("target"))
                       for f in faults]}


def check_client_group(name, consumes, history, applied, t_end, drained, reads, result):
    """A client's consumer group on its own: phantom, misplaced, dirty reads, missed, duplicates,
    availability (its rebalances and commits are the client's own, so no order or reset checks)."""
    problems, facts = checker.check_consume(consumes, history, applied, t_end, drained, reads)
    result["problems"].extend("%s consumer group: %s" % (name, p) for p in problems)
    kept = {k: facts[k] for k in ("consumed", "consume_phantom", "consume_misplaced", "consume_stored_copies",
                                  "dirty_reads", "consume_missed", "consume_duplicates") if k in facts}
    kept["longest_gap_s"] = facts["consume_availability"]["longest_gap_s"]
    if "consume_missed_note" in facts:
        kept["not_caught_up"] = facts["consume_missed_note"]
    result["facts"]["%s_consumer" % name] = kept


def run_seed(seed, seconds, producers, base, kinds=None, layout="controller", consumers=2, single=0, groups=2):
    """One seed: a random overlapping schedule of `seconds`, or with `single` (repeats) the
    single-fault mode over `kinds` (default every kind of the layout); `groups` broker groups
    (controller layout)."""
    workdir = os.path.join(base, "seed-%d%s" % (seed, "-single" if single else ""))
    os.makedirs(workdir, exist_ok=True)
    network = net.Network(cl.layout_nodes(layout, groups))
    cluster = cl.Cluster(workdir, network, layout, groups)
    result = {"seed": seed, "problems": [], "facts": {}, "workdir": workdir}
    feats = None
    layout_kinds = nemesis.CLASSIC_KINDS if layout == "classic" else nemesis.KINDS
    events = [] if single else nemesis.schedule(seed, seconds, kinds or (
        nemesis.CLASSIC_KINDS if layout == "classic" else None))
    monitor = driver = None
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
            if FEATURES:
                feats = features.Features(seed, cluster, workdir, t0, FEATURES)
                feats.start()
            jcons = [java_clients.JavaConsumer(i, cluster, TOPIC, t0, hist, lock, workdir)
                     for i in range(JAVA_CONSUMERS)]
            for c in jcons:
                c.start()
            grpc = sdk_clients.start(cluster, TOPIC, seed, t0, hist, lock, workdir, invisible_ms=3000) \
                if GRPC_CLIENTS else []
            gop, goc = go_clients.start(cluster, TOPIC, seed, t0, hist, lock, workdir, GO_PRODUCERS, GO_CONSUMERS)
            nem = nemesis.Nemesis(cluster, network, events, t0, flog)
            nem.start()
            if single:
                monitor = Monitor(seed, cluster, t0, hist, lock)
                monitor.start()
                driver = SingleFaults(seed, [k for k in (kinds or layout_kinds) if k in layout_kinds] or kinds,
                                      single, cluster, network, t0, flog, prods, cons_, monitor)
                driver.run()
                result["problems"].extend(driver.problems)
            else:
                # Short sleeps: a SIGTERM the kernel gave to another thread is acted on by this one only
                # when it runs, so a long sleep would delay the clean-up by the whole run.
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    time.sleep(0.2)
            nem.heal_everything()
            healed_at = time.monotonic() - t0
            # Recovery: every group a master with every replica in sync, and a send acknowledged by
            # every group after the heal.
            full_sync = True
            try:
                cluster.wait_groups(cluster.full, "full SyncStateSet in every group after the heal", 60)
            except RuntimeError as err:
                full_sync = False
                result["problems"].append("recovery: %s" % err)
            end = time.monotonic() + 30
            while time.monotonic() < end and not all(
                    any(op["type"] == "ok" and op["t"] > healed_at and op.get("broker") == g
                        for p in prods for op in p.history[-50:]) for g in cluster.group_names()):
                time.sleep(0.2)
            result["facts"]["recovery_wait_s"] = round(time.monotonic() - t0 - healed_at, 1)
            for p in prods:
                p.stop_flag.set()
            for j in java + gop:
                j.stop()
            for g in grpc:
                g.stop_producers()
            for p in prods:
                p.join(10)
            if feats is not None:
                feats.stop_producers()
            if monitor is not None:
                monitor.stop()
            t_end = time.monotonic() - t0
            acked = {op["key"] for p in prods + java + gop + grpc for op in list(p.history) if op["type"] == "ok"}
            # Each consumer group on its own: every one must get every acknowledged message.
            # The gRPC SimpleConsumer's quiet window is longer: its receives rotate over every queue of the
            # route (1 s on each empty one) and one that fails waits out the SDK's 3 s request timeout;
            # with 3 s it was judged drained in a 15 s pause while still catching up (seed 258376010).
            drained = dict(zip(("python", "java", "grpc", "go"),
                               drain([cons_, jcons, grpc, goc], acked, quiet_s=(3.0, 3.0, GRPC_QUIET_S, 3.0))))
            for g in grpc:
                g.wait_fifo()
            for c in jcons + grpc + goc:
                c.stop()
            for c in cons_:
                c.stop_flag.set()
            for c in cons_:
                c.join(10)
            if feats is not None:
                feats.drain()
                feats.stop()
            result["facts"]["drain_s"] = round(time.monotonic() - t0 - t_end, 1)
        applied = driver.applied if driver is not None else nem.applied
        history = sorted((op for p in prods + java + gop + grpc + ([monitor] if monitor else []) for op in p.history),
                         key=lambda op: op["t"])
        # The first SEND_OK after the heal by the group that took longest to give one.
        firsts = []
        for g in cluster.group_names():
            after = [op["t"] for op in history if op["type"] == "ok" and op["t"] > healed_at and op.get("broker") == g]
            firsts.append(after[0] if after else None)
            if not after:
                result["problems"].append("recovery: no send acknowledged by %s in %.0f s after every fault was healed"
                                          % (g, t_end - healed_at))
        recovered_at = max(firsts) if None not in firsts else t_end
        infos = cluster.infos()
        final = {}
        for g, info in infos.items():
            master = cluster.broker_at(info["masterAddress"]) if info else None
            # Every replica once the SyncStateSet is full again (producers stopped, so nothing is in flight).
            in_sync = list(cluster.groups[g]) if full_sync and info and cluster.full(info) else []
            final[g] = {"master": master, "in_sync": in_sync}
        if layout == "classic" and final[cl.CLASSIC_GROUP]["in_sync"]:
            # The slave copies asynchronously what it has not acknowledged: let it catch up first.
            time.sleep(3)
        read_from = time.monotonic()
        reads, notes = read_replicas(cluster)
        result["facts"]["read_s"] = round(time.monotonic() - read_from, 1)
        # The proxy answers a gRPC send with its offset alone: where it went comes from the reads.
        for g in grpc:
            g.resolve(reads)
        missing = [g for g, v in final.items() if v["master"] is None or v["master"] not in reads[g]]
        if missing:
            result["problems"].append("final read: no master to read for %s (controllers say %s; %s)"
                                      % (missing, infos, notes))
        else:
            for g in final:
                final[g]["reads"] = reads[g]
            problems, facts = checker.check_groups(history, final, applied, t_end)
            result["problems"].extend(problems)
            result["facts"].update(facts)
        consumes = sorted((op for c in cons_ for op in c.history), key=lambda op: op["t"])
        result["timeline"] = timeline(history, consumes, applied, t_end)
        if driver is not None:
            driver.measure(history, consumes)
            result["single"] = driver.measures
            with open(os.path.join(workdir, "single.json"), "w") as f:
                json.dump(driver.measures, f, indent=1)
        if cons_:
            problems, facts = checker.check_consume(consumes, history, applied, t_end, drained["python"], reads)
            result["problems"].extend(problems)
            result["facts"].update(facts)
            result["facts"]["consumer_errors"] = [c.errors for c in cons_]
        if jcons:
            # The Java group on its own: phantom, misplaced, dirty reads, missed, duplicates, availability
            # (its rebalances and commits are the client's own, so no order or reset checks).
            jconsumes = sorted((op for c in jcons for op in c.history), key=lambda op: op["t"])
            check_client_group("java", jconsumes, history, applied, t_end, drained["java"], reads, result)
        if goc:
            gconsumes = sorted((op for c in goc for op in c.history), key=lambda op: op["t"])
            check_client_group("go", gconsumes, history, applied, t_end, drained["go"], reads, result)
        for g in grpc:
            # The SimpleConsumer group (POP through the proxy) as the other client groups; the orderly
            # group's order per message group (sdk_clients.check_fifo).
            check_client_group("grpc", g.consume_ops(history), history, applied, t_end, drained["grpc"], reads, result)
            problems, ffacts = sdk_clients.check_fifo(g.fifo_sends, g.fifo_deliveries, applied, drained=g.fifo_drained)
            result["problems"].extend("grpc fifo group: " + p for p in problems)
            result["facts"]["grpc_fifo"] = ffacts
            result["facts"]["grpc_notes"] = g.notes
        result["facts"]["java_errors"] = [e for j in java + jcons + grpc + gop + goc for e in j.errors]
        if feats is not None:
            # The features run on the home group alone (features.py).
            problems, facts = feats.check(applied, cluster.broker_addrs.get(final[cluster.home]["master"]),
                                          nemesis.faults_clock.KINDS)
            result["problems"].extend(problems)
            result["facts"]["features"] = facts
        result["facts"].update({"healed_at_s": round(healed_at, 2),
                                "first_ok_after_heal_s": round(recovered_at - healed_at, 2),
                                "faults": [(round(f["start"], 1), f["kind"], f.get("target")) for f in applied],
                                "nemesis_errors": nem.errors + (driver.errors if driver else []),
                                "read_notes": notes, "final": infos,
                                "in_sync": {g: v["in_sync"] for g, v in final.items()}, "starts": cluster.starts})
    except Exception as err:
        result["problems"].append("harness: %s: %s" % (type(err).__name__, err))
    finally:
        stop_from = time.monotonic()
        if feats is not None:
            feats.stop()
        cluster.stop_all()
        harness.stop_everything()
        network.teardown()
        result["facts"]["stop_s"] = round(time.monotonic() - stop_from, 1)
    return result


def print_result(r):
    f = r["facts"]
    status = "PASS" if not r["problems"] else "FAIL"
    print("== seed %d: %s  (replay: tests/chaos/run.py --seed %d %s%s)"
          % (r["seed"], status, r["seed"],
             "--single %d" % r["single_repeats"] if r.get("single_repeats") else "--seconds %s" % r["seconds"],
             (" --kinds " + ",".join(r["kinds"]) if r["kinds"] else "")
             + (" --layout classic" if r["layout"] == "classic" else "")
             + (" --groups %d" % r["groups"] if r["layout"] != "classic" and r.get("groups", 2) != 2 else "")))
    if r.get("single"):
        print_single(report.single_table(r["single"]))
    if f.get("sends"):
        av = f["availability"]
        print("   sends %s; lost %d, phantom %d, duplicates %d, stored-not-acked %d, diverged %d"
              % (f["sends"], f["lost"], f["phantom"], f["duplicates"], f["stored_not_acked"], f["diverged"]))
        print("   longest send outage %.2f s (%.1f..%.1f); first ack after heal %.2f s"
              % (av["longest_gap_s"], av["from"], av["to"], f["first_ok_after_heal_s"]))
        if "availability_per_group" in f:
            print("   per group: longest send outage %s; lost %s"
                  % (", ".join("%s %.2f s" % kv for kv in sorted(f["availability_per_group"].items())),
                     ", ".join("%s %d" % kv for kv in sorted(f["lost_per_group"].items()))))
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
    for name in ("java", "go", "grpc"):
        if "%s_consumer" % name in f:
            print("   %s consumer group: %s" % (name, ", ".join("%s %s" % kv for kv in f["%s_consumer" % name].items())))
    if f.get("grpc_notes"):
        print("   grpc client notes: %s" % f["grpc_notes"])
    if "grpc_fifo" in f:
        print("   grpc fifo group: %s" % ", ".join("%s %s" % kv for kv in f["grpc_fifo"].items()))
    print("   phases: recovery wait %s s, read %s s, stop %s s" % (f.get("recovery_wait_s"), f.get("read_s"), f.get("stop_s")))
    for fault in f.get("faults", []):
        print("   fault %6.1f s %-19s %s" % fault)
    for note in f.get("nemesis_errors", []) + f.get("read_notes", []) + f.get("java_errors", []):
        print("   note: %s" % note)
    for line in features.summary(f.get("features") or {}):
        print("   " + line)
    for p in r["problems"]:
        print("   PROBLEM %s" % p)
    print("   files: %s" % r["workdir"])
    sys.stdout.flush()


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
    ap.add_argument("--java-consumers", type=int, default=1,
                    help="members of a consumer group on Apache's Java client (0: none)")
    ap.add_argument("--grpc-clients", type=int, default=1, choices=(0, 1),
                    help="the Java gRPC SDK through the proxy: a producer, a SimpleConsumer group, FIFO sends and an "
                         "orderly group, in one JVM (0: none)")
    ap.add_argument("--go-producers", type=int, default=1, help="producers on the Go client (0: none)")
    ap.add_argument("--go-consumers", type=int, default=1, help="members of a consumer group on the Go client (0: none)")
    ap.add_argument("--consumers", type=int, default=2, help="members of the consumer group (0: none)")
    ap.add_argument("--features", default="fifo,tx,timer",
                    help="message kinds beside plain sends, each with its producer, consumer and checkers (features.py): fifo, tx, timer, comma-separated, or none")
    ap.add_argument("--layout", choices=sorted(cl.LAYOUTS), default="controller",
                    help="controller: 3 controllers, 2 name servers, --groups groups of 3 replicas, the proxy; "
                         "classic: 1 name server, SYNC_MASTER + SLAVE, the proxy")
    ap.add_argument("--groups", type=int, default=2, choices=(1, 2, 3),
                    help="broker groups of 3 replicas (controller layout; default 2, a RocketMQ 5 user's topology)")
    ap.add_argument("--kinds", help="comma-separated fault kinds to draw from (default all: %s)"
                    % ",".join(nemesis.KINDS))
    ap.add_argument("--single", type=int, nargs="?", const=2, default=0, metavar="N",
                    help="single-fault mode: each kind (of --kinds, default all) alone, in turn, N times (default "
                         "2), on a healthy cluster, timed; with --minutes it runs first, then the random seeds")
    ap.add_argument("--report", help="write a markdown report here (and a timeline SVG per seed next to it)")
    ap.add_argument("--workdir", help="put the run's directory here (scripts/chaos.sh cleans up after it)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory even when every seed passed")
    args = ap.parse_args()
    kinds = [k for k in (args.kinds or "").split(",") if k]
    unknown = [k for k in kinds if k not in nemesis.KINDS]
    if unknown:
        ap.error("unknown fault kinds %s (known: %s)" % (unknown, ", ".join(nemesis.KINDS)))
    global FEATURES
    FEATURES = tuple(k for k in args.features.split(",") if k and k != "none")
    if [k for k in FEATURES if k not in features.TOPICS]:
        ap.error("unknown features %s (known: %s)" % (args.features, ", ".join(features.TOPICS)))
    why = net.available()
    if why:
        print("chaos: cannot run here: %s" % why)
        return 2
    global JAVA_PRODUCERS, JAVA_CONSUMERS
    if args.java_producers or args.java_consumers:
        why = java_clients.build()
        if why:
            print("chaos: no Java clients: %s" % why)
        else:
            JAVA_PRODUCERS = args.java_producers
            JAVA_CONSUMERS = args.java_consumers
    global GRPC_CLIENTS, GO_PRODUCERS, GO_CONSUMERS
    if args.grpc_clients:
        why = sdk_clients.build()
        if why:
            print("chaos: no gRPC SDK clients: %s" % why)
        else:
            GRPC_CLIENTS = True
    if args.go_producers or args.go_consumers:
        why = go_clients.build()
        if why:
            print("chaos: no Go clients: %s" % why)
        else:
            GO_PRODUCERS = args.go_producers
            GO_CONSUMERS = args.go_consumers
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        base = args.workdir
    else:
        base = tempfile.mkdtemp(prefix="rmq-chaos-")
    results = []
    seeds = list(args.seed or [])
    started = time.monotonic()
    rng = random.Random()
    single_pending = args.single > 0
    while True:
        single = 0
        if single_pending:
            single_pending = False
            single = args.single
            seed = seeds.pop(0) if seeds else rng.randrange(1, 1 << 31)
        elif args.single and args.minutes is None:
            break
        elif args.seed:
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
        if single:
            print("== seed %d starting (single faults, each kind %d times)" % (seed, single))
        else:
            print("== seed %d starting (%d s of faults)" % (seed, args.seconds))
        sys.stdout.flush()
        r = run_seed(seed, args.seconds, args.producers, base, kinds or None, args.layout, args.consumers,
                     single, args.groups)
        r["single_repeats"] = single
        r["seconds"] = args.seconds
        r["kinds"] = kinds
        r["layout"] = args.layout
        r["groups"] = args.groups
        results.append(r)
        print_result(r)
    failed = [r["seed"] for r in results if r["problems"]]
    if args.report:
        argv = sys.argv[1:]
        shown = [a for i, a in enumerate(argv) if a != "--workdir" and (i == 0 or argv[i - 1] != "--workdir")]
        if args.layout == "classic":
            topology = "a name server, a SYNC_MASTER and its SLAVE, the proxy"
        else:
            topology = ("3 controllers, 2 name servers, %d broker group%s of 3 replicas in controller mode, the "
                        "proxy" % (args.groups, "" if args.groups == 1 else "s"))
        clients = ["Python producers and consumers"] + [c for c, on in (
            ("Apache's Java client (4.9.8 producer, 5.5.0 push consumer)", JAVA_PRODUCERS or JAVA_CONSUMERS),
            ("the Java gRPC SDK through the proxy", GRPC_CLIENTS), ("the Go client", GO_PRODUCERS or GO_CONSUMERS),
            ("FIFO, transaction and timer producers", FEATURES)) if on]
        topology += "; clients: " + ", ".join(clients)
        for svg in report.write(args.report, results, args.seconds, "tests/chaos/run.py " + " ".join(shown),
                                topology):
            print("chaos: timeline %s" % svg)
    print("chaos: %d seeds, %d failed%s; seeds run: %s" % (
        len(results), len(failed), (" (%s)" % failed) if failed else "", [r["seed"] for r in results]))
    if failed or args.keep:
        print("chaos: run directory kept: %s" % base)
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The nemesis: a fault schedule drawn from a seed, and the thread that applies it to a cluster.

The schedule (when, which kind, how long, the random choices) is a pure function of the seed and
the run's length, so `--seed N` replays it; a target named by role ("the master") is resolved when
the fault starts, from what the controllers say then. With several broker groups each fault first
draws its group from its own seeded choices (`fault["group"]`): "the master" and "a slave" are that
group's; faults overlap, so both groups can be hit at once. Faults overlap: a new one starts every
2-7 s and lasts 3-10 s.
"""

import heapq
import random
import threading
import time

import faults_clock
import faults_disk
import faults_net

# Modules that bring more fault kinds: each has KINDS, CLASSIC_KINDS, start(nemesis, fault, event, rng)
# (sets fault["target"] and applies it) and heal(nemesis, fault).
EXTENSIONS = (faults_net, faults_clock, faults_disk)


KINDS = [
    "kill_master",         # SIGKILL the master; restart it at the end of the fault
    "kill_replica",        # SIGKILL a slave; restart it later
    "pause_master",        # SIGSTOP the master longer than the controllers' 3 s heartbeat timeout
    "pause_controller",    # SIGSTOP one controller
    "kill_controller",     # SIGKILL one controller; restart it later
    "isolate_master",      # the master cut off from every node and from the clients
    "split_master",        # the master cut off from controllers and replicas, still reached by clients
    "partition_minority",  # one controller and one broker cut off from the rest (clients on the majority side)
    "oneway_replica",      # the master stops hearing one slave (its packets to the master dropped)
    "loss",                # 10-40% packet loss at one broker or controller
    "kill_namesrv",        # SIGKILL one of the two name servers; restart it at the end (clients route through the other)
    "isolate_namesrv",     # one of the two name servers cut off from every node and from the clients
    "kill_proxy",          # SIGKILL the gRPC proxy (stateless); restart it at the end
] + [kind for ext in EXTENSIONS for kind in ext.KINDS]


# What a classic SYNC_MASTER pair without controllers can be given.
CLASSIC_KINDS = ["kill_master", "kill_replica", "pause_master", "isolate_master", "split_master",
                 "oneway_replica", "loss"] + [kind for ext in EXTENSIONS for kind in ext.CLASSIC_KINDS]


def extension_of(kind):
    """The module that brings `kind`, or None for the kinds above."""
    return next((ext for ext in EXTENSIONS if kind in ext.KINDS), None)


def schedule(seed, seconds, kinds=None):
    """The seed's faults; `kinds` narrows the draw to some of KINDS (the same seed then gives another
    schedule)."""
    rng = random.Random(seed)
    events = []
    t = 2.0
    while t < seconds - 4:
        kind = rng.choice(kinds or KINDS)
        duration = rng.uniform(3.0, 10.0)
        if kind.startswith("pause"):
            duration = rng.uniform(4.0, 9.0)
        events.append({"at": round(t, 2), "kind": kind, "duration": round(duration, 2),
                       "pick": rng.randrange(1 << 30), "percent": rng.randrange(10, 41)})
        t += rng.uniform(2.0, 7.0)
    return events


class Nemesis(threading.Thread):
    def __init__(self, cluster, net, events, t0, log):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.net = net
        self.events = events
        self.t0 = t0
        self.log = log
        self.stop_flag = threading.Event()
        self.heals = []
        self.applied = []
        self.errors = []
        self.lock = threading.Lock()
        self._seq = 0

    def now(self):
        return time.monotonic() - self.t0

    def run(self):
        pending = list(self.events)
        while not self.stop_flag.is_set():
            now = self.now()
            while self.heals and self.heals[0][0] <= now:
                _, _, fault = heapq.heappop(self.heals)
                self._heal(fault)
            if pending and pending[0]["at"] <= now:
                event = pending.pop(0)
                try:
                    self._start(event)
                except Exception as err:  # a failed injection is reported, the run goes on
                    self.errors.append("%s at %.1f s: %s" % (event["kind"], now, err))
            self.stop_flag.wait(0.05)

    def heal_everything(self):
        """End every fault now (the run's end), in start order."""
        self.stop_flag.set()
        self.join(10)
        while self.heals:
            _, _, fault = heapq.heappop(self.heals)
            self._heal(fault)
        self.net.heal_all()
        for name in self.cluster.nodes:
            if name in self.cluster.paused:
                self.cluster.resume(name)
            if not self.cluster.alive(name):
                self.cluster.start(name)

    def _record(self, fault, what):
        entry = {"t": round(self.now(), 3), "what": what, "kind": fault["kind"], "target": fault.get("target"),
                 "id": fault["id"]}
        self.log.write(__import__("json").dumps(entry) + "\n")
        self.log.flush()

    def _start(self, event):
        rng = random.Random(event["pick"])
        kind = event["kind"]
        # The group first, from the fault's own choices (no draw with one group: a one-group seed
        # replays as before).
        group = self.cluster.pick_group(rng)
        brokers, controllers, nodes = self.cluster.groups[group], self.cluster.controllers, self.cluster.nodes
        master = self.cluster.master(group) or ("b0" if self.cluster.layout == "classic" else rng.choice(brokers))
        slaves = [b for b in brokers if b != master]
        self._seq += 1
        fault = {"id": self._seq, "kind": kind, "start": self.now(), "group": group}
        if kind == "kill_master":
            fault["target"] = master
            self.cluster.kill(master)
        elif kind == "kill_replica":
            fault["target"] = rng.choice(slaves)
            self.cluster.kill(fault["target"])
        elif kind == "pause_master":
            fault["target"] = master
            self.cluster.pause(master)
        elif kind == "pause_controller":
            fault["target"] = rng.choice(controllers)
            self.cluster.pause(fault["target"])
        elif kind == "kill_controller":
            fault["target"] = rng.choice(controllers)
            self.cluster.kill(fault["target"])
        elif kind in ("isolate_master", "split_master"):
            fault["target"] = master
            others = [self.net.ip(n) for n in nodes if n != master]
            if kind == "isolate_master":
                others.append(self.net.host_ip)
            self.net.cut(fault["id"], master, others)
        elif kind == "partition_minority":
            minority = [rng.choice(controllers), rng.choice(brokers)]  # a broker of the drawn group
            fault["target"] = "+".join(minority)
            majority = [self.net.ip(n) for n in nodes if n not in minority] + [self.net.host_ip]
            for name in minority:
                self.net.cut(fault["id"], name, majority)
        elif kind == "oneway_replica":
            slave = rng.choice(slaves)
            fault["target"] = "%s-/->%s" % (slave, master)
            self.net.cut(fault["id"], master, [self.net.ip(slave)], both_ways=False)
        elif kind == "loss":
            name = rng.choice(brokers + controllers)  # the drawn group's brokers
            fault["target"] = "%s@%d%%" % (name, event["percent"])
            fault["node"] = name
            self.net.loss(fault["id"], name, event["percent"])
        elif kind == "kill_namesrv":
            fault["target"] = rng.choice(self.cluster.namesrvs)
            self.cluster.kill(fault["target"])
        elif kind == "isolate_namesrv":
            fault["target"] = rng.choice(self.cluster.namesrvs)
            others = [self.net.ip(n) for n in nodes if n != fault["target"]] + [self.net.host_ip]
            self.net.cut(fault["id"], fault["target"], others)
        elif kind == "kill_proxy":
            fault["target"] = self.cluster.proxy
            self.cluster.kill(fault["target"])
        elif extension_of(kind) is not None:
            extension_of(kind).start(self, fault, event, rng)
        else:
            raise ValueError("unknown fault kind %s" % kind)
        with self.lock:
            self.applied.append(fault)
        self._record(fault, "start")
        heapq.heappush(self.heals, (fault["start"] + event["duration"], fault["id"], fault))

    def _heal(self, fault):
        kind = fault["kind"]
        try:
            if extension_of(kind) is not None:
                extension_of(kind).heal(self, fault)
            elif kind.startswith("kill_"):
                if not self.cluster.alive(fault["target"]):
                    self.cluster.start(fault["target"])
            elif kind.startswith("pause"):
                self.cluster.resume(fault["target"])
            else:
                self.net.heal(fault["id"])
        except Exception as err:
            self.errors.append("healing %s: %s" % (kind, err))
        fault["end"] = self.now()
        self._record(fault, "end")

"""The chaos cluster's network: one namespace per node, each joined by a veth pair to a bridge in the
runner's namespace (which holds the clients), on a /24 of the run's own. Faults are nftables rules in a
node's namespace (table `chaos`): drop everything to and from a set of peers (partitions, one-way or
both ways, or a whole topology: `partition`) or a random share of packets (loss). A slow link is a
token-bucket qdisc (tc tbf) on both ends of a node's veth pair, so what the node sends and what it is
sent queue behind the rate limit. This kernel has no netem (nor fq or etf, which could hold packets
until a set time), so no fixed delay and no reordering. Needs root and `ip`/`nft`/`tc`
(scripts/setup-test-host.sh). `teardown` removes everything.
"""

import os
import subprocess

TABLE = "chaos"
# The member of a partition that stands for the runner's namespace (producers and consumers).
CLIENTS = "clients"
# A slow link's queue: packets that would wait longer than this for the rate limit are dropped.
SLOW_QUEUE_MS = 400


def run(*args, check=True, input=None):
    out = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, input=input)
    if check and out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), out.stderr.strip()))
    return out.stdout


def available():
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "not root: network namespaces and nftables need root"
    for cmd in (["ip", "-V"], ["nft", "--version"], ["tc", "-V"]):
        try:
            run(*cmd)
        except (OSError, RuntimeError) as err:
            return "%s (run scripts/setup-test-host.sh)" % err
    return None


class Network:
    def __init__(self, names):
        pid = os.getpid()
        self.tag = "%x" % (pid & 0xFFFFF)
        # 10.200.0.0/13 .. by pid, clear of the fault tests' 10.64.0.0/10.
        self.subnet = "10.%d.%d" % (200 + (pid >> 8) % 50, pid & 0xFF)
        self.bridge = "chb%s" % self.tag
        self.host_ip = self.subnet + ".1"
        self.nodes = {}
        for i, name in enumerate(names):
            self.nodes[name] = {"ns": "ch%s%s" % (self.tag, name), "ip": "%s.%d" % (self.subnet, 10 + i),
                                "if": "ch%s%d" % (self.tag, i)}
        self.faults = {name: {} for name in names}
        # Slow links: node -> {fault id: rate in kbit/s}; the slowest active one is applied.
        self.slow = {name: {} for name in names}

    def setup(self):
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", self.host_ip + "/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for node in self.nodes.values():
            ns, host_if = node["ns"], node["if"]
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", host_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
            run("ip", "link", "set", host_if, "master", self.bridge)
            run("ip", "link", "set", host_if, "up")
            run("ip", "netns", "exec", ns, "ip", "addr", "add", node["ip"] + "/24", "dev", "eth0")
            run("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            run("ip", "netns", "exec", ns, "nft", "add table inet %s" % TABLE)
            for hook in ("input", "output"):
                run("ip", "netns", "exec", ns, "nft",
                    "add chain inet %s %s { type filter hook %s priority 0; policy accept; }" % (TABLE, hook, hook))

    def teardown(self):
        for node in self.nodes.values():
            run("ip", "netns", "del", node["ns"], check=False)
            run("ip", "link", "del", node["if"], check=False)
        run("ip", "link", "del", self.bridge, check=False)

    def exec_prefix(self, name):
        return ["ip", "netns", "exec", self.nodes[name]["ns"]]

    def ip(self, name):
        return self.nodes[name]["ip"]

    def _apply(self, name):
        """Rewrite node `name`'s rules from its fault table (a dict of fault id -> rules)."""
        ns = self.nodes[name]["ns"]
        # One nft run per node, its rules applied at once (one process per rule took about 10 s for
        # a partition of the 13-node cluster on the loaded machine, the cut coming in piece by piece).
        script = ["flush chain inet %s %s" % (TABLE, hook) for hook in ("input", "output")]
        for rules in self.faults[name].values():
            for hook, rule in rules:
                script.append("add rule inet %s %s %s" % (TABLE, hook, rule))
        run("ip", "netns", "exec", ns, "nft", "-f", "-", input="\n".join(script) + "\n")

    def cut(self, fault_id, name, peers, both_ways=True):
        """Drop what `name` receives from `peers` (IPs); with both_ways also what it sends them."""
        rules = []
        for peer in peers:
            rules.append(("input", "ip saddr %s drop" % peer))
            if both_ways:
                rules.append(("output", "ip daddr %s drop" % peer))
        self.faults[name][fault_id] = rules
        self._apply(name)

    def loss(self, fault_id, name, percent):
        self.faults[name][fault_id] = [
            ("input", "ip saddr != 127.0.0.0/8 numgen random mod 100 < %d drop" % percent),
            ("output", "ip daddr != 127.0.0.0/8 numgen random mod 100 < %d drop" % percent)]
        self._apply(name)

    def partition(self, fault_id, sees):
        """A whole topology at once: `sees` maps every node, and CLIENTS for the runner's namespace, to
        the members it still reaches; each node drops what it sends to and receives from the others.
        The runner's namespace has no rules of its own: the nodes drop the clients' packets."""
        members = list(self.nodes) + [CLIENTS]
        for name in self.nodes:
            cut = [self.host_ip if m == CLIENTS else self.ip(m)
                   for m in members if m != name and m not in sees[name]]
            if cut:
                self.cut(fault_id, name, cut)

    def slow_link(self, fault_id, name, kbit):
        """Rate-limit node `name`'s link to `kbit` kbit/s both ways (tbf on its eth0 and on the bridge
        side of its veth pair); packets past `SLOW_QUEUE_MS` of queue are dropped."""
        self.slow[name][fault_id] = kbit
        self._shape(name)

    def _shape(self, name):
        ends = [(self.exec_prefix(name), "eth0"), ([], self.nodes[name]["if"])]
        if not self.slow[name]:
            for prefix, dev in ends:
                run(*(prefix + ["tc", "qdisc", "del", "dev", dev, "root"]), check=False)
            return
        rate = min(self.slow[name].values())
        for prefix, dev in ends:
            run(*(prefix + ["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "%dkbit" % rate,
                            "burst", "4kb", "latency", "%dms" % SLOW_QUEUE_MS]))

    def heal(self, fault_id):
        for name, table in self.faults.items():
            if fault_id in table:
                del table[fault_id]
                self._apply(name)
        for name, table in self.slow.items():
            if fault_id in table:
                del table[fault_id]
                self._shape(name)

    def heal_all(self):
        for name in self.faults:
            if self.faults[name]:
                self.faults[name] = {}
                self._apply(name)
        for name in self.slow:
            if self.slow[name]:
                self.slow[name] = {}
                self._shape(name)

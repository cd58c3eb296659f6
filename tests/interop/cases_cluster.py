"""Interop on the 2m-2s-sync layout as `deploy/local-cluster.sh` brings it up (two name servers, two broker
groups of SYNC_MASTER + SLAVE): the Python (C++) client, given both name servers, produces over both groups
and a PushConsumer receives every message; both masters stored part of it and each slave holds what its
master holds.

local-cluster.sh gets the harness's shard routing (SHARD_ROUTING, from INTEROP_SHARD_ROUTING, default direct):
in direct mode each broker process is one broker per shard to clients (`broker-a-0`, `broker-a-1` on its
listenPort and listenPort + 4; the slave's the same names as brokerId 1)."""

import os
import random
import subprocess
import time

import harness
import remoting
from caselib import case, check, check_received, require_sent
from cases_ha import runtime_info
from cases_python import _consume, _consumed, _produce

SCRIPT = os.path.join(harness.REPO, "deploy", "local-cluster.sh")
GET_MAX_OFFSET = 30
N = 200
SHARDS = 2


def _broker_port(base, n):
    """The listenPort local-cluster.sh gives the n-th broker process of the layout."""
    return base + 300 + 40 * n


def _free_block(base, routing):
    """Every port local-cluster.sh uses from `base` is free: per broker process its listenPort - 2 up to its
    last shard-broker's port (listenPort + 4 * (SHARDS - 1)) and HA port (listenPort + 1)."""
    below, above = harness.broker_port_block(SHARDS, routing)
    ports = [base, base + 1] + [p for n in range(4)
                                for p in range(_broker_port(base, n) - below, _broker_port(base, n) + above + 1)]
    ports += [base + 200 + n for n in range(4)]
    return all(harness._port_free(p) for p in ports)


class LocalCluster:
    """deploy/local-cluster.sh with its own directory and ports; the harness's binaries."""

    def __init__(self, workdir, layout):
        self.workdir = workdir
        self.layout = layout
        self.routing = harness.default_shard_routing()
        for _ in range(100):
            base = random.randrange(20000, 40000)
            if _free_block(base, self.routing):
                break
        else:
            raise harness.CaseFailure("no free block of ports for the local cluster")
        self.base = base
        self.namesrv_addr = "127.0.0.1:%d;127.0.0.1:%d" % (base, base + 1)
        namesrv, _ = harness.binaries()
        self.env = dict(os.environ, CLUSTER_DIR=os.path.join(workdir, "local-cluster"), PORT_BASE=str(base),
                        BIN_DIR=os.path.dirname(namesrv), SHARDS=str(SHARDS), SHARD_ROUTING=self.routing,
                        SEGMENT_BYTES=str(16 * 1024 * 1024), START_TIMEOUT="90")

    def broker_addr(self, n):
        """The address of the n-th broker process of the layout (its shard-broker 0)."""
        return "127.0.0.1:%d" % _broker_port(self.base, n)

    def shard_brokers(self, n, group):
        """{brokerName: address} of the shard-brokers of the n-th broker process, of broker group `group`."""
        names = harness.shard_broker_names(group, SHARDS, self.routing)
        ports = harness.shard_broker_ports(_broker_port(self.base, n), SHARDS, self.routing)
        return {name: "127.0.0.1:%d" % port for name, port in zip(names, ports)}

    def _run(self, command, timeout):
        return subprocess.run([SCRIPT, command, self.layout], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def start(self):
        res = self._run("up", 240)
        check(res.returncode == 0, "local-cluster.sh up failed (%d): %s %s" % (res.returncode, res.stdout[-2000:],
                                                                             res.stderr[-2000:]))

    def stop(self):
        try:
            self._run("down", 120)
        except subprocess.TimeoutExpired:
            pass

    def log_tails(self, lines=30):
        out = []
        logs = os.path.join(self.env["CLUSTER_DIR"], "logs")
        for root, _, files in os.walk(self.env["CLUSTER_DIR"]):
            for name in sorted(files):
                if name.endswith(".log"):
                    out.append("---- %s\n%s" % (name, harness.tail(os.path.join(root, name), lines)))
        return "\n".join(out) or "(no logs under %s)" % logs


def _stored(addr, topic, queues=4):
    """Messages in `topic` on one shard-broker: its queues' max offsets added up."""
    total = 0
    for q in range(queues):
        resp = remoting.request(addr, GET_MAX_OFFSET, {"topic": topic, "queueId": q})
        check(resp.code == 0, "GET_MAX_OFFSET on %s queue %d: code %d %s" % (addr, q, resp.code, resp.remark))
        total += int(resp.ext_fields.get("offset", "0"))
    return total


@case("cluster_2m_2s_sync_python_clients_across_both_groups", timeout=420)
def two_groups(ctx):
    cluster = LocalCluster(ctx.workdir, "2m-2s-sync")
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    topic = "PyCluster"
    # Per broker group: {shard-broker name: address} of its master process and of its slave process.
    groups = {"broker-a": (cluster.shard_brokers(0, "broker-a"), cluster.shard_brokers(1, "broker-a")),
              "broker-b": (cluster.shard_brokers(2, "broker-b"), cluster.shard_brokers(3, "broker-b"))}
    # Every shard-broker of every process registered with both name servers, masters as brokerId 0 and
    # slaves as brokerId 1.
    want = {name: {"0": addr, "1": slaves[name]} for masters, slaves in groups.values()
            for name, addr in masters.items()}
    for ns in cluster.namesrv_addr.split(";"):
        end = time.monotonic() + 60
        while True:
            listed = remoting.cluster_brokers(ns)
            if all(listed.get(name) == ids for name, ids in want.items()):
                break
            check(time.monotonic() < end, "name server %s lists %s, want %s" % (ns, listed, want))
            time.sleep(0.3)
    # Topic creation is process-wide: on one shard-broker of each master process.
    for n in (0, 2):
        remoting.create_topic(cluster.broker_addr(n), topic, 4)
    # Both groups, every shard-broker, routed by both name servers.
    for ns in cluster.namesrv_addr.split(";"):
        end = time.monotonic() + 60
        while True:
            route = remoting.topic_route(ns, topic) or {}
            routed = sorted(q.get("brokerName") for q in route.get("queueDatas") or [])
            if routed == sorted(want):
                break
            check(time.monotonic() < end, "name server %s routes %s to %s, not to %s" % (ns, topic, routed,
                                                                                        sorted(want)))
            time.sleep(0.3)
    # A SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave replicates every shard.
    for masters, _ in groups.values():
        for name, addr in masters.items():
            end = time.monotonic() + 60
            while int(runtime_info(addr).get("haSlaveConnections", "0")) < 1:
                check(time.monotonic() < end, "the slave of %s (%s) never connected to every shard" % (name, addr))
                time.sleep(0.3)
    sent = require_sent(_produce(ctx, topic, "pycluster", N), "pycluster", N)
    check(len(sent) == N, "%d of %d sends acknowledged" % (len(sent), N))
    res = _consume(ctx, "push", topic, "py-cluster-group", {"pycluster": N}, timeout=90)
    check_received(ctx, res, {"pycluster": N}, what="PushConsumer")
    _consumed(res, "PushConsumer")
    per_shard_broker = {name: _stored(addr, topic) for masters, _ in groups.values() for name, addr in masters.items()}
    per_master = {group: sum(per_shard_broker[name] for name in masters) for group, (masters, _) in groups.items()}
    ctx.note("messages per group: %s, per shard-broker: %s" % (per_master, per_shard_broker))
    check(all(n > 0 for n in per_master.values()), "a group stored nothing: %s" % per_master)
    check(sum(per_master.values()) >= N, "masters hold %d messages, %d were acknowledged"
          % (sum(per_master.values()), N))
    for masters, slaves in groups.values():
        for name, master in masters.items():
            slave = slaves[name]
            end = time.monotonic() + 30
            while _stored(slave, topic) != _stored(master, topic):
                check(time.monotonic() < end, "slave %s of %s holds %d messages, its master %d"
                      % (slave, name, _stored(slave, topic), _stored(master, topic)))
                time.sleep(0.3)

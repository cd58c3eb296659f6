"""Interop on the 2m-2s-sync layout as `deploy/local-cluster.sh` brings it up (two name servers, two broker
groups of SYNC_MASTER + SLAVE): the Python (C++) client, given both name servers, produces over both groups
and a PushConsumer receives every message; both masters stored part of it and each slave holds what its
master holds."""

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


def _free_block(base):
    """Every port local-cluster.sh uses from `base` is free."""
    ports = [base, base + 1] + [p for n in range(4) for p in range(base + 98 + 10 * n, base + 102 + 10 * n)]
    ports += [base + 200 + n for n in range(4)]
    return all(harness._port_free(p) for p in ports)


class LocalCluster:
    """deploy/local-cluster.sh with its own directory and ports; the harness's binaries."""

    def __init__(self, workdir, layout):
        self.workdir = workdir
        self.layout = layout
        for _ in range(100):
            base = random.randrange(20000, 40000)
            if _free_block(base):
                break
        else:
            raise harness.CaseFailure("no free block of ports for the local cluster")
        self.base = base
        self.namesrv_addr = "127.0.0.1:%d;127.0.0.1:%d" % (base, base + 1)
        namesrv, _ = harness.binaries()
        self.env = dict(os.environ, CLUSTER_DIR=os.path.join(workdir, "local-cluster"), PORT_BASE=str(base),
                        BIN_DIR=os.path.dirname(namesrv), SHARDS="2", SEGMENT_BYTES=str(16 * 1024 * 1024),
                        START_TIMEOUT="90")

    def broker_addr(self, n):
        return "127.0.0.1:%d" % (self.base + 100 + 10 * n)

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
    masters = [cluster.broker_addr(0), cluster.broker_addr(2)]
    slaves = [cluster.broker_addr(1), cluster.broker_addr(3)]
    for addr in masters:
        remoting.create_topic(addr, topic, 4)
    # Both groups routed by both name servers.
    for ns in cluster.namesrv_addr.split(";"):
        end = time.monotonic() + 60
        while True:
            route = remoting.topic_route(ns, topic) or {}
            if len(route.get("queueDatas") or []) == 2:
                break
            check(time.monotonic() < end, "name server %s routes %s to %s, not both groups" % (ns, topic, route))
            time.sleep(0.3)
    # A SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave replicates every shard.
    for addr in masters:
        end = time.monotonic() + 60
        while int(runtime_info(addr).get("haSlaveConnections", "0")) < 1:
            check(time.monotonic() < end, "the slave of %s never connected to every shard" % addr)
            time.sleep(0.3)
    sent = require_sent(_produce(ctx, topic, "pycluster", N), "pycluster", N)
    check(len(sent) == N, "%d of %d sends acknowledged" % (len(sent), N))
    res = _consume(ctx, "push", topic, "py-cluster-group", {"pycluster": N}, timeout=90)
    check_received(ctx, res, {"pycluster": N}, what="PushConsumer")
    _consumed(res, "PushConsumer")
    per_master = [_stored(addr, topic) for addr in masters]
    ctx.note("messages per group: %s" % per_master)
    check(all(n > 0 for n in per_master), "a group stored nothing: %s" % per_master)
    check(sum(per_master) >= N, "masters hold %d messages, %d were acknowledged" % (sum(per_master), N))
    for master, slave in zip(masters, slaves):
        end = time.monotonic() + 30
        while _stored(slave, topic) != _stored(master, topic):
            check(time.monotonic() < end, "slave %s holds %d messages, its master %d"
                  % (slave, _stored(slave, topic), _stored(master, topic)))
            time.sleep(0.3)

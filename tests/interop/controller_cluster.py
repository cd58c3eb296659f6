"""A broker group in controller mode (RocketMQ 5's automatic failover) for the interop cases: one `controller`
process, the name server, and three broker processes of one brokerName (SYNC_FLUSH, allAckInSyncStateSet)
whose roles and brokerIds come from the controller (docs/failover.md).

The replicas are numbered 0..2 by start order; which one is master is what the controller says
(CONTROLLER_GET_REPLICA_INFO), never assumed. Each replica process is, with shardRouting = direct, one broker
per shard to clients (`broker-interop-<shard>`, shard i on listenPort + 4i), as in the harness's Cluster.
"""

import os
import signal
import time

import harness
import remoting
from harness import CaseFailure, check


def controller_binary():
    """The controller binary beside the name server and broker under test (tests/interop/setup.sh builds it)."""
    namesrv, _ = harness.binaries()
    return os.path.join(os.path.dirname(namesrv), "controller")


class Replica:
    """One broker process of the group: its ports, store, config and log."""

    def __init__(self, index, port, cluster):
        self.index = index
        self.port = port
        self.addr = "127.0.0.1:%d" % port
        self.shard_addrs = ["127.0.0.1:%d" % p for p in
                            harness.shard_broker_ports(port, cluster.shard_count, cluster.shard_routing)]
        self.store = os.path.join(cluster.workdir, "store-%d" % index)
        self.config = os.path.join(cluster.workdir, "broker-%d.toml" % index)
        self.log = os.path.join(cluster.workdir, "broker-%d.log" % index)
        self.proc = None
        self.starts = 0


class ControllerCluster(harness.Cluster):
    """The harness's name server plus a controller and `replicas` broker processes of one group.

    `broker_addr` / `broker_addrs` follow the master the controller names (`refresh_master`), so the
    harness's topic creation and queue checks go to the master.
    """

    def __init__(self, workdir, replicas=3, shard_count=2):
        super().__init__(workdir, flush_disk_type="SYNC_FLUSH", shard_count=shard_count)
        check(self.impl == "ours", "controller mode runs only against our binaries")
        self.controller_bin = controller_binary()
        self.controller_port = harness.free_port()
        self.controller_addr = "127.0.0.1:%d" % self.controller_port
        self.controller = None
        below, above = harness.broker_port_block(shard_count, self.shard_routing)
        taken = {self.namesrv_port, self.controller_port}
        self.replicas = []
        while len(self.replicas) < replicas:
            port = harness.free_port(below=below, above=above)
            block = set(range(port - below, port + above + 1))
            if block & taken:
                continue
            taken |= block
            self.replicas.append(Replica(len(self.replicas), port, self))

    # ---- processes -------------------------------------------------------------------------------

    def start(self, timeout=60):
        for path in (self.namesrv_bin, self.broker_bin, self.controller_bin):
            check(os.path.isfile(path), "binary missing: %s (run tests/interop/setup.sh)" % path)
        self.start_namesrv(timeout)
        self.start_controller(timeout)
        for replica in self.replicas:
            self.start_replica(replica)
        self.wait_group(lambda info: len(info["syncStateSet"]) == len(self.replicas),
                        "a master and all %d replicas in its SyncStateSet" % len(self.replicas), timeout)
        master = self.refresh_master()
        self.wait_master_registered(master, timeout)

    def start_controller(self, timeout):
        conf = os.path.join(self.workdir, "controller.conf")
        with open(conf, "w") as f:
            f.write("controllerDLegerGroup = interop\ncontrollerDLegerPeers = n0-%s\ncontrollerDLegerSelfId = n0\n"
                    "controllerStorePath = %s\n"
                    % (self.controller_addr, os.path.join(self.workdir, "controller-store")))
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir)
        self.controller = harness.Proc("controller", [self.controller_bin, "-c", conf],
                                       os.path.join(self.workdir, "controller.log"), env=env, cwd=self.workdir)
        end = time.monotonic() + timeout
        while not harness.wait_port(self.controller_port, 0.5):
            check(self.controller.alive(), "controller exited with code %s during start"
                  % self.controller.popen.returncode)
            check(time.monotonic() < end, "controller did not listen on %s within %ss"
                  % (self.controller_addr, timeout))

    def _replica_config(self, replica):
        text = "".join("%s = %s\n" % kv for kv in [
            ("brokerClusterName", '"DefaultCluster"'),
            ("brokerName", '"%s"' % self.broker_name),
            ("brokerIP1", '"127.0.0.1"'),
            ("bindAddress", '"127.0.0.1"'),
            ("namesrvAddr", '"%s"' % self.namesrv_addr),
            ("listenPort", str(replica.port)),
            ("storePathRootDir", '"%s"' % replica.store),
            ("flushDiskType", '"SYNC_FLUSH"'),
            ("autoCreateTopicEnable", "true"),
            ("mappedFileSizeCommitLog", str(64 * 1024 * 1024)),
            ("shardCount", str(self.shard_count)),
            ("shardRouting", '"%s"' % self.shard_routing),
            # The controller gives the role and brokerId; a send is acknowledged once every in-sync replica
            # has it.
            ("enableControllerMode", "true"),
            ("controllerAddr", '"%s"' % self.controller_addr),
            ("allAckInSyncStateSet", "true"),
            # A new master is at the name server within a second of its election.
            ("registerNameServerPeriod", "1000"),
            ("syncFlushTimeout", "3000"),
            # The checks read every replica's queues, which RocketMQ 5 refuses without it.
            ("slaveReadEnable", "true"),
        ])
        with open(replica.config, "w") as f:
            f.write(text)

    def start_replica(self, replica):
        """Start (or restart, same store and ports) one replica; it serves once its port accepts."""
        self._replica_config(replica)
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir,
                   ROCKETMQ_HOME=self.workdir)
        argv = [self.broker_bin, "--config", replica.config]
        replica.starts += 1
        with open(replica.log, "ab") as f:
            f.write(("\n===== broker start #%d: %s\n" % (replica.starts, " ".join(argv))).encode())
        replica.proc = harness.Proc("broker-%d" % replica.index, argv, replica.log, env=env, cwd=self.workdir)
        end = time.monotonic() + 60
        while not harness.wait_port(replica.port, 0.5):
            check(replica.proc.alive(), "broker %d exited with code %s during start"
                  % (replica.index, replica.proc.popen.returncode))
            check(time.monotonic() < end, "broker %d did not listen on %s within 60 s" % (replica.index, replica.addr))

    def kill_replica(self, replica):
        replica.proc.kill9()

    def stop(self):
        for replica in self.replicas:
            if replica.proc is not None and replica.proc.alive():
                replica.proc.stop(signal.SIGTERM, grace=10)
        if self.controller is not None and self.controller.alive():
            self.controller.stop(signal.SIGTERM, grace=10)
        if self.namesrv is not None and self.namesrv.alive():
            self.namesrv.stop(signal.SIGTERM, grace=10)

    # ---- what the controller and the name server say ---------------------------------------------

    def info(self):
        """CONTROLLER_GET_REPLICA_INFO of the group, or None (no answer, no group yet)."""
        try:
            return remoting.replica_info(self.controller_addr, self.broker_name)
        except (OSError, remoting.RemotingError, ValueError):
            return None

    def wait_group(self, accept, what, timeout):
        """Poll the controller until `accept(info)`; answers that info."""
        end = time.monotonic() + timeout
        info = None
        while time.monotonic() < end:
            info = self.info()
            if info is not None and info["masterBrokerId"] is not None and accept(info):
                return info
            time.sleep(0.1)
        raise CaseFailure("%s: not within %ss (controller says %s)" % (what, timeout, info))

    def replica_at(self, addr):
        for replica in self.replicas:
            if replica.addr == addr:
                return replica
        raise CaseFailure("the controller names %s, none of the group's replicas %s"
                          % (addr, [r.addr for r in self.replicas]))

    def refresh_master(self):
        """The replica the controller names master; requests for the group's queues go to it from now on."""
        info = self.info()
        check(info is not None and info["masterBrokerId"] is not None, "the controller names no master: %s" % info)
        master = self.replica_at(info["masterAddress"])
        self.broker = master.proc
        self.broker_addrs = list(master.shard_addrs)
        self.broker_addr = self.broker_addrs[0]
        return master

    def wait_master_registered(self, master, timeout):
        """Wait until the name server lists every shard-broker of `master` as brokerId 0."""
        harness.wait_brokers_registered(self.namesrv_addr, master.proc,
                                        dict(zip(self.broker_names, master.shard_addrs)), "0", timeout)

    def log_tails(self, lines=30):
        out = []
        logs = [("controller.log", os.path.join(self.workdir, "controller.log")),
                ("namesrv.log", os.path.join(self.workdir, "namesrv.log"))]
        logs += [("broker-%d.log" % r.index, r.log) for r in self.replicas]
        for name, path in logs:
            problems = harness.problem_lines(path)
            if problems:
                out.append("---- %s: WARN/ERROR lines (first %d)\n%s" % (name, len(problems), "\n".join(problems)))
            out.append("---- %s (last %d lines)\n%s" % (name, lines, harness.tail(path, lines)))
        return "\n".join(out)

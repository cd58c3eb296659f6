"""The chaos targets, each process in its own network namespace. `controller`: 3 controllers (one raft
group), 1 name server and a broker group of 3 replicas in controller mode (SYNC_FLUSH,
allAckInSyncStateSet). `classic`: 1 name server, a SYNC_MASTER (brokerId 0) and its SLAVE (brokerId
1), SYNC_FLUSH, no failover (the master is always b0). Every process runs in its own network namespace
(net.py), started through the interop harness's process handling (own process group, log file,
stopped on exit). Binaries are linked (or copied) into the run's directory first, so a rebuild during
a run does not swap them.
"""

import os
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

import faults_clock  # noqa: E402
import faults_disk  # noqa: E402
import harness  # noqa: E402
import wire  # noqa: E402

CONTROLLERS = ["c0", "c1", "c2"]
BROKERS = ["b0", "b1", "b2"]
NAMESRV = "n0"
NODES = CONTROLLERS + [NAMESRV] + BROKERS
LAYOUTS = {"controller": (CONTROLLERS, BROKERS), "classic": ([], ["b0", "b1"])}


def layout_nodes(layout):
    controllers, brokers = LAYOUTS[layout]
    return controllers + [NAMESRV] + brokers
CONTROLLER_PORT = 9878
NAMESRV_PORT = 9876
BROKER_PORT = 10911
BROKER_NAME = "chaos-broker"


def bin_dir():
    return os.environ.get("CHAOS_BIN_DIR") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR") or os.path.join(harness.REPO, "target"), "debug")


class Cluster:
    def __init__(self, workdir, net, layout="controller"):
        self.workdir = workdir
        self.net = net
        self.layout = layout
        self.controllers, self.brokers = LAYOUTS[layout]
        self.nodes = layout_nodes(layout)
        self.procs = {}
        self.paused = set()
        self.starts = {name: 0 for name in self.nodes}
        self.bins = {}
        self.controller_addrs = ["%s:%d" % (net.ip(c), CONTROLLER_PORT) for c in self.controllers]
        self.namesrv_addr = "%s:%d" % (net.ip(NAMESRV), NAMESRV_PORT)
        self.broker_addrs = {b: "%s:%d" % (net.ip(b), BROKER_PORT) for b in self.brokers}

    def copy_binaries(self):
        os.makedirs(os.path.join(self.workdir, "bin"), exist_ok=True)
        for name in ("controller", "namesrv", "broker"):
            src = os.path.join(bin_dir(), name)
            if not os.path.isfile(src):
                raise RuntimeError("binary missing: %s (cargo build -p broker -p namesrv -p controller)" % src)
            dst = os.path.join(self.workdir, "bin", name)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
            self.bins[name] = dst

    def _argv(self, name):
        node_dir = os.path.join(self.workdir, name)
        os.makedirs(node_dir, exist_ok=True)
        ip = self.net.ip(name)
        if name in self.controllers:
            conf = os.path.join(node_dir, "controller.conf")
            peers = ";".join("n%d-%s" % (i, a) for i, a in enumerate(self.controller_addrs))
            with open(conf, "w") as f:
                f.write("controllerDLegerGroup = chaos\ncontrollerDLegerPeers = %s\ncontrollerDLegerSelfId = n%d\n"
                        "controllerStorePath = %s\ncontrollerHeartBeatTimeoutMills = 1500\n"
                        "scanNotActiveBrokerInterval = 1000\n"
                        % (peers, CONTROLLERS.index(name), os.path.join(node_dir, "store")))
            return [self.bins["controller"], "-c", conf]
        if name == NAMESRV:
            return [self.bins["namesrv"], "--listen", self.namesrv_addr]
        conf = os.path.join(node_dir, "broker.toml")
        lines = [
            ("brokerClusterName", '"ChaosCluster"'), ("brokerName", '"%s"' % BROKER_NAME),
            ("brokerIP1", '"%s"' % ip), ("bindAddress", '"%s"' % ip),
            ("namesrvAddr", '"%s"' % self.namesrv_addr), ("listenPort", str(BROKER_PORT)),
            ("storePathRootDir", '"%s"' % os.path.join(node_dir, "store")),
            ("flushDiskType", '"SYNC_FLUSH"'), ("autoCreateTopicEnable", "true"),
            # Small segments: a full disk (faults_disk) is hit by the next segment's preallocation
            # within seconds, not after 16 MiB. No forcible cleaning of a nearly full disk: it
            # deletes unexpired segments, acknowledged messages the checkers would count as lost.
            ("mappedFileSizeCommitLog", str(1024 * 1024)), ("maxMessageSize", str(256 * 1024)),
            ("cleanFileForciblyEnable", "false"),
            ("shardCount", "1"),
            ("registerNameServerPeriod", "1000"), ("syncFlushTimeout", "3000"), ("slaveReadEnable", "true"),
        ]
        if self.layout == "classic":
            lines += [("brokerId", "0" if name == "b0" else "1"),
                      ("brokerRole", '"SYNC_MASTER"' if name == "b0" else '"SLAVE"')]
        else:
            lines += [("enableControllerMode", "true"), ("controllerAddr", '"%s"' % ";".join(self.controller_addrs)),
                      ("allAckInSyncStateSet", "true"), ("controllerHeartBeatTimeoutMills", "1500"),
                      ("brokerHeartbeatInterval", "300"), ("haMaxTimeSlaveNotCatchup", "2000")]  # docs/failover.md
        with open(conf, "w") as f:
            f.write("".join("%s = %s\n" % kv for kv in lines))
        return [self.bins["broker"], "--config", conf]

    def start(self, name):
        argv = self.net.exec_prefix(name) + self._argv(name)
        self.starts[name] += 1
        log = os.path.join(self.workdir, name + ".log")
        with open(log, "ab") as f:
            f.write(("\n===== start #%d\n" % self.starts[name]).encode())
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir,
                   ROCKETMQ_HOME=self.workdir)
        # The node's own wall clock (libfaketime, when present): the clock faults move it.
        env.update(faults_clock.node_env(os.path.join(self.workdir, name)))
        # The fail point file the disk faults write (a failpoints build of the broker).
        env.update(faults_disk.node_env(self, name))
        self.procs[name] = harness.Proc(name, argv, log, env=env, cwd=os.path.join(self.workdir, name))
        self.paused.discard(name)

    def alive(self, name):
        proc = self.procs.get(name)
        return proc is not None and proc.alive()

    def kill(self, name):
        proc = self.procs.get(name)
        if proc is not None:
            proc.kill9()
        self.paused.discard(name)

    def pause(self, name):
        proc = self.procs.get(name)
        if proc is not None and proc.alive():
            os.killpg(proc.pid, signal.SIGSTOP)
            self.paused.add(name)

    def resume(self, name):
        proc = self.procs.get(name)
        if proc is not None and proc.alive():
            try:
                os.killpg(proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused.discard(name)

    def start_all(self, topic, queues, timeout=90):
        self.copy_binaries()
        # Each broker's store on a file system of its own (the disk_full faults fill one).
        faults_disk.prepare(self)
        for name in self.nodes:
            self.start(name)
        info = self.wait_group(self.full, "a master with every replica in sync", timeout)
        master = self.broker_at(info["masterAddress"])
        end = time.monotonic() + timeout
        while True:
            try:
                wire.create_topic(self.broker_addrs[master], topic, queues)
                if wire.master_of(self.namesrv_addr, topic) == self.broker_addrs[master]:
                    return
            except (wire.NotSent, wire.Unknown):
                pass
            if time.monotonic() > end:
                raise RuntimeError("topic %s not routed to the master %s within %ss" % (topic, master, timeout))
            time.sleep(0.3)

    def full(self, info):
        return len(info["syncStateSet"]) == len(self.brokers)

    def info(self):
        """The group as the first controller that answers names it, or None. Classic: b0 is the master
        while its port answers, and the slave counts as in sync once its HA link to b0 is up."""
        if self.layout == "classic":
            return self._classic_info()
        for addr in self.controller_addrs:
            try:
                info = wire.replica_info(addr, BROKER_NAME)
            except (wire.NotSent, wire.Unknown, ValueError):
                continue
            if info is not None and info["masterBrokerId"] is not None:
                return info
        return None

    def _classic_info(self):
        if not self.alive("b0") or "b0" in self.paused:
            return None
        try:
            wire.request(self.broker_addrs["b0"], 28, timeout=1.0)  # GET_BROKER_RUNTIME_INFO
        except (wire.NotSent, wire.Unknown):
            return None
        sset = [0]
        if self.alive("b1") and "b1" not in self.paused:
            try:
                reply = wire.request(self.broker_addrs["b0"], 28, timeout=1.0)
                table = reply.json_body().get("table") or {} if reply.code == wire.SUCCESS else {}
                if str(table.get("haSlaveConnections", "0")) not in ("0", ""):
                    sset.append(1)
            except (wire.NotSent, wire.Unknown, ValueError):
                pass
        return {"masterBrokerId": 0, "masterAddress": self.broker_addrs["b0"], "masterEpoch": 0, "syncStateSet": sset}

    def wait_group(self, accept, what, timeout):
        end = time.monotonic() + timeout
        info = None
        while time.monotonic() < end:
            info = self.info()
            if info is not None and accept(info):
                return info
            time.sleep(0.2)
        raise RuntimeError("%s: not within %ss (controllers say %s)" % (what, timeout, info))

    def broker_at(self, addr):
        for name, a in self.broker_addrs.items():
            if a == addr:
                return name
        return None

    def master(self):
        info = self.info()
        return self.broker_at(info["masterAddress"]) if info else None

    def stop_all(self):
        for name in list(self.procs):
            self.resume(name)
            proc = self.procs[name]
            if proc.alive():
                proc.stop(signal.SIGTERM, grace=5)
        faults_disk.teardown(self)

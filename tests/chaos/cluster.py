"""The chaos targets, each process in its own network namespace. `controller` (a RocketMQ 5 user's
topology): 3 controllers (one raft group), 2 name servers, broker groups of 3 replicas each in
controller mode (SYNC_FLUSH, allAckInSyncStateSet; `groups`, default 2: chaos-broker-a with replicas
a0-a2, chaos-broker-b with b0-b2, one brokerClusterName) registering with both name servers, and the
gRPC proxy (proxy crate) pointed at both name servers. `classic`: 1 name server, a SYNC_MASTER
(brokerId 0) and its SLAVE (brokerId 1) of one group, SYNC_FLUSH, no failover (the master is always
b0), and the proxy. Every process runs in its own network namespace (net.py), started through the
interop harness's process handling (own process group, log file, stopped on exit). Binaries are
linked (or copied) into the run's directory first, so a rebuild during a run does not swap them.

Clients use `namesrv_addr` (both name servers, `;`-joined, as RocketMQ clients take them) and
`proxy_addr` (host:port of the proxy's gRPC endpoint).
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
NAMESRVS = ["n0", "n1"]
NAMESRV = NAMESRVS[0]
PROXY = "px"
# Broker groups of the controller layout, in order; `groups` takes the first ones.
GROUPS = [("chaos-broker-a", ["a0", "a1", "a2"]), ("chaos-broker-b", ["b0", "b1", "b2"]),
          ("chaos-broker-c", ["d0", "d1", "d2"])]
CLASSIC_GROUP = "chaos-broker"
LAYOUTS = ("controller", "classic")
CONTROLLER_PORT = 9878
NAMESRV_PORT = 9876
BROKER_PORT = 10911
PROXY_PORT = 8081
CLUSTER_NAME = "ChaosCluster"


def layout_groups(layout, groups=2):
    """{brokerName: [replica node names]}, in order."""
    if layout == "classic":
        return {CLASSIC_GROUP: ["b0", "b1"]}
    return dict(GROUPS[:max(1, min(groups, len(GROUPS)))])


def layout_parts(layout, groups=2):
    """(controllers, name servers, {brokerName: replicas}) of a layout."""
    if layout == "classic":
        return [], [NAMESRV], layout_groups(layout)
    return list(CONTROLLERS), list(NAMESRVS), layout_groups(layout, groups)


def layout_nodes(layout, groups=2):
    controllers, namesrvs, grps = layout_parts(layout, groups)
    return controllers + namesrvs + [b for reps in grps.values() for b in reps] + [PROXY]


# The name server that answered last, per list: asked first next time, as RocketMQ's clients stay on
# the name server they use until it fails (so a cut one costs one timeout, not one per query).
_last_good = {}


def topic_route(namesrv_addrs, topic, timeout=1.0):
    """The topic's route as the first name server that answers gives it: {brokerName: master
    address or None}; {} when the topic has no route; None when no name server answered. A name
    server that cannot be reached is skipped (clients fall through to the next one the same way)."""
    key = tuple(namesrv_addrs)
    first = _last_good.get(key)
    order = ([first] if first in namesrv_addrs else []) + [ns for ns in namesrv_addrs if ns != first]
    for ns in order:
        try:
            reply = wire.request(ns, wire.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=timeout)
        except (wire.NotSent, wire.Unknown):
            continue
        _last_good[key] = ns
        if reply.code != wire.SUCCESS:
            return {}
        try:
            datas = reply.json_body().get("brokerDatas") or []
        except ValueError:
            continue
        route = {}
        for data in datas:
            addrs = {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()}
            route[data.get("brokerName")] = addrs.get("0")
        return route
    return None


def master_of(namesrv_addrs, topic, group, timeout=1.0):
    """The master address of `group` in the topic's route, or None."""
    return (topic_route(namesrv_addrs, topic, timeout) or {}).get(group)


def bin_dir():
    return os.environ.get("CHAOS_BIN_DIR") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR") or os.path.join(harness.REPO, "target"), "debug")


class Cluster:
    def __init__(self, workdir, net, layout="controller", groups=2):
        self.workdir = workdir
        self.net = net
        self.layout = layout
        self.controllers, self.namesrvs, self.groups = layout_parts(layout, groups)
        self.brokers = [b for reps in self.groups.values() for b in reps]
        self.home = next(iter(self.groups))
        self.group_of = {b: g for g, reps in self.groups.items() for b in reps}
        self.proxy = PROXY
        self.nodes = layout_nodes(layout, groups)
        self.procs = {}
        self.paused = set()
        self.starts = {name: 0 for name in self.nodes}
        self.bins = {}
        self.controller_addrs = ["%s:%d" % (net.ip(c), CONTROLLER_PORT) for c in self.controllers]
        self.namesrv_addrs = ["%s:%d" % (net.ip(n), NAMESRV_PORT) for n in self.namesrvs]
        # Both name servers, as RocketMQ clients take them (`-n "a;b"`).
        self.namesrv_addr = ";".join(self.namesrv_addrs)
        self.proxy_addr = "%s:%d" % (net.ip(PROXY), PROXY_PORT)
        self.broker_addrs = {b: "%s:%d" % (net.ip(b), BROKER_PORT) for b in self.brokers}

    def copy_binaries(self):
        os.makedirs(os.path.join(self.workdir, "bin"), exist_ok=True)
        for name in ("controller", "namesrv", "broker", "proxy"):
            src = os.path.join(bin_dir(), name)
            if not os.path.isfile(src):
                raise RuntimeError("binary missing: %s (cargo build -p broker -p namesrv -p controller -p proxy)"
                                   % src)
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
        if name in self.namesrvs:
            return [self.bins["namesrv"], "--listen", self.namesrv_addrs[self.namesrvs.index(name)]]
        if name == PROXY:
            conf = os.path.join(node_dir, "proxy.toml")
            with open(conf, "w") as f:
                # One worker thread: the proxy shares the machine's cores with every other node.
                f.write('grpcServerPort = %d\nbindAddress = "%s"\nnamesrvAddr = "%s"\nmetricsPromExporterPort = 0\n'
                        'grpcThreadPoolNums = 1\nremotingTimeoutMillis = 3000\n'
                        # The gRPC SimpleConsumers pop with a 3 s invisible time (sdk_clients.py), under
                        # the proxy's 10 s minimum by default: a redelivery after a fault comes sooner.
                        'minInvisibleTimeMillis = 1000\n'
                        % (PROXY_PORT, ip, self.namesrv_addr))
            return [self.bins["proxy"], "--config", conf]
        conf = os.path.join(node_dir, "broker.toml")
        lines = [
            ("brokerClusterName", '"%s"' % CLUSTER_NAME), ("brokerName", '"%s"' % self.group_of[name]),
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
        infos = self.wait_groups(self.full, "a master with every replica in sync", timeout)
        self.create_topic(topic, queues, infos, timeout)
        self.wait_proxy(timeout)

    def create_topic(self, topic, queues, infos=None, timeout=90):
        """Creates `topic` with `queues` queues on every group's master and waits until the name
        servers route it to each of them (every name server: a client may ask either)."""
        infos = infos or self.wait_groups(self.full, "a master with every replica in sync", timeout)
        masters = {g: info["masterAddress"] for g, info in infos.items()}
        end = time.monotonic() + timeout
        while True:
            try:
                for addr in masters.values():
                    wire.create_topic(addr, topic, queues)
                if all(topic_route([ns], topic) == masters for ns in self.namesrv_addrs):
                    return
            except (wire.NotSent, wire.Unknown):
                pass
            if time.monotonic() > end:
                raise RuntimeError("topic %s not routed to the masters %s within %ss (name servers say %s)"
                                   % (topic, masters, timeout, [topic_route([ns], topic) for ns in self.namesrv_addrs]))
            time.sleep(0.3)

    def wait_proxy(self, timeout=30):
        """The proxy's gRPC port accepts connections."""
        import socket
        host, port = self.proxy_addr.rsplit(":", 1)
        end = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=1.0).close()
                return
            except OSError as err:
                if time.monotonic() > end:
                    raise RuntimeError("proxy at %s not reachable within %ss: %s" % (self.proxy_addr, timeout, err))
            time.sleep(0.2)

    def full(self, info):
        return len(info["syncStateSet"]) == len(self.groups[info["group"]])

    def group_names(self):
        return list(self.groups)

    def pick_group(self, rng):
        """A group drawn with `rng` (the nemesis' seeded one); no draw with a single group, so a
        one-group layout's seeds replay as before."""
        names = list(self.groups)
        return names[0] if len(names) == 1 else rng.choice(names)

    def info(self, group=None):
        """The group (default the first) as the first controller that answers names it, with its
        name under "group", or None. Classic: b0 is the master while its port answers, and the slave
        counts as in sync once its HA link to b0 is up."""
        group = group or next(iter(self.groups))
        if self.layout == "classic":
            return self._classic_info()
        for addr in self.controller_addrs:
            try:
                info = wire.replica_info(addr, group)
            except (wire.NotSent, wire.Unknown, ValueError):
                continue
            if info is not None and info["masterBrokerId"] is not None:
                info["group"] = group
                return info
        return None

    def infos(self):
        """{group: info or None} for every group."""
        return {g: self.info(g) for g in self.groups}

    def all_full(self):
        return all(info is not None and self.full(info) for info in self.infos().values())

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
        return {"masterBrokerId": 0, "masterAddress": self.broker_addrs["b0"], "masterEpoch": 0, "syncStateSet": sset,
                "group": CLASSIC_GROUP}

    def wait_group(self, accept, what, timeout, group=None):
        group = group or next(iter(self.groups))
        end = time.monotonic() + timeout
        info = None
        while time.monotonic() < end:
            info = self.info(group)
            if info is not None and accept(info):
                return info
            time.sleep(0.2)
        raise RuntimeError("%s: %s not within %ss (controllers say %s)" % (what, group, timeout, info))

    def wait_groups(self, accept, what, timeout):
        """Every group's info once `accept` holds for each (checked together); {group: info}."""
        end = time.monotonic() + timeout
        infos = {}
        while time.monotonic() < end:
            infos = self.infos()
            if all(info is not None and accept(info) for info in infos.values()):
                return infos
            time.sleep(0.2)
        raise RuntimeError("%s: not within %ss (controllers say %s)" % (what, timeout, infos))

    def broker_at(self, addr):
        for name, a in self.broker_addrs.items():
            if a == addr:
                return name
        return None

    def master(self, group=None):
        """The node name of the group's (default the first group's) master, or None."""
        info = self.info(group)
        return self.broker_at(info["masterAddress"]) if info else None

    def home_master_addr(self, topic):
        """The master of the home group (the first: the FIFO, transaction and timer features run on it
        alone) as the name servers route `topic`, or None."""
        return master_of(self.namesrv_addrs, topic, self.home)

    def masters(self):
        """{group: master node name or None}."""
        return {g: self.master(g) for g in self.groups}

    def stop_all(self):
        for name in list(self.procs):
            self.resume(name)
            proc = self.procs[name]
            if proc.alive():
                proc.stop(signal.SIGTERM, grace=5)
        faults_disk.teardown(self)

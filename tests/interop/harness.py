"""Process harness for the interop tests: free ports, a name server + broker per case, client subprocesses.

Every process started here is recorded and stopped at the end of its case, on failure, on timeout and on
ctrl-c (`stop_everything`). Each case has its own temp dir holding the stores, configs, logs and the C++
client's HOME (it writes ~/logs/rocketmq-cpp).
"""

import json
import os
import random
import signal
import socket
import subprocess
import time

import remoting

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PYTHON = os.path.join(HERE, ".venv", "bin", "python")
PY_CLIENT = os.path.join(HERE, "py_client.py")
RUST_CLIENT = os.path.join(HERE, "rust-client", "target", "release", "interop-rust-client")
# Apache RocketMQ's Java clients (tests/apache/, from Maven Central): tests/interop/setup.sh compiles
# java/*.java against each client set into java/build/<set>/ and records the sets it built there.
JAVA_BUILD = os.path.join(HERE, "java", "build")
APACHE_JAVA = os.path.join(REPO, "tests", "apache", "java.sh")
# A case's client language -> the Apache set its Java programs run on: the 4.x client most users run,
# and the 5.x remoting client (same programs, compiled again).
JAVA_SETS = {"java": "rocketmq-4.9.8", "java5": "rocketmq-5.5.0"}
# apache/rocketmq-client-go/v2 from the Go module proxy: a program in go-client/, built by setup.sh.
GO_CLIENT = os.path.join(HERE, "go-client", "build", "interop-go-client")

# Every live process we started, so a failure or ctrl-c never leaves one behind.
_LIVE = []


class CaseFailure(Exception):
    """An assertion of a case failed; the message says what was expected and what happened."""


class CaseTimeout(Exception):
    """The case ran past its hard timeout."""


def check(condition, message):
    if not condition:
        raise CaseFailure(message)


def binaries():
    """(namesrv, broker) paths for the implementation under test."""
    impl = os.environ.get("INTEROP_IMPL", "ours")
    if impl == "ours":
        bin_dir = os.environ.get("INTEROP_BIN_DIR") or os.path.join(
            os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"), "debug")
        return os.path.join(bin_dir, "namesrv"), os.path.join(bin_dir, "broker")
    if impl == "rocketmq-rust":
        # Development scaffold only (a third-party implementation); never what CI tests.
        bin_dir = os.path.join(REPO, "bench", "cache", "rocketmq-rust", "bin")
        return os.path.join(bin_dir, "rocketmq-namesrv-rust"), os.path.join(bin_dir, "rocketmq-broker-rust")
    raise SystemExit("INTEROP_IMPL must be `ours` or `rocketmq-rust`, not %r" % impl)


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_range():
    """The kernel's range of local ports for outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


# A runner running cases side by side (run.py -j N) gives each of its child processes its own slice
# of the port range below, "LOW-HIGH" in this variable: two concurrent cases can then never pick the same
# port between choosing it and binding it.
PORT_RANGE_ENV = "INTEROP_PORT_RANGE"

# Ports this process handed out already: a case picks several before it starts anything (a name server's,
# then a broker's block), and a port not bound yet still looks free.
_HANDED_OUT = set()


def port_range():
    """[low, high) where free_port picks: PORT_RANGE_ENV when set, else 10000 up to the kernel's ephemeral
    range (a free port inside that range can become the local port of some process's outgoing connection
    between the check and the server's bind; CI saw a broker's HA port, listenPort+1, taken that way)."""
    given = os.environ.get(PORT_RANGE_ENV)
    if given:
        try:
            low, high = (int(x) for x in given.split("-"))
        except ValueError:
            raise SystemExit("%s must be LOW-HIGH, not %r" % (PORT_RANGE_ENV, given))
        if not 1024 <= low < high <= 65536:
            raise SystemExit("%s=%r: want 1024 <= LOW < HIGH <= 65536" % (PORT_RANGE_ENV, given))
        return low, high
    low, _ = _ephemeral_range()
    if low > 11024:
        return 10000, low - 1
    return low, 65535


def port_slices(count):
    """`count` disjoint "LOW-HIGH" slices of port_range(), one per concurrent case (PORT_RANGE_ENV)."""
    low, high = port_range()
    size = (high - low) // count
    if size < 200:
        raise SystemExit("port range %d-%d too small for %d concurrent cases" % (low, high, count))
    return ["%d-%d" % (low + i * size, low + (i + 1) * size) for i in range(count)]


def free_port(below=0, above=0):
    """A loopback port P with P-below..P+above all free (the broker also binds listenPort-2 and +1), in
    port_range() and clear of every port this process handed out before."""
    bottom, top = port_range()
    for _ in range(500):
        port = random.randrange(bottom + below, top - above)
        block = range(port - below, port + above + 1)
        if not _HANDED_OUT.intersection(block) and all(_port_free(p) for p in block):
            _HANDED_OUT.update(block)
            return port
    raise RuntimeError("no free port block found in %d-%d" % (bottom, top))


def wait_port(port, timeout):
    """Wait until something accepts on 127.0.0.1:port."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError as err:
        return "(no log: %s)" % err
    return "\n".join(data.splitlines()[-lines:])


class Proc:
    """One child process in its own process group, output to a log file."""

    def __init__(self, name, argv, log_path, env=None, cwd=None, stdout_path=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.stdout_path = stdout_path or log_path
        self._log = open(log_path, "ab")
        self._out = self._log if stdout_path is None else open(stdout_path, "ab")
        self.popen = subprocess.Popen(
            argv, stdout=self._out, stderr=self._log, stdin=subprocess.DEVNULL,
            env=env, cwd=cwd, start_new_session=True)
        _LIVE.append(self)

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def wait(self, timeout):
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _signal_group(self, sig):
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, sig=signal.SIGTERM, grace=10.0):
        """Signal the process group, wait `grace` s, then SIGKILL. Returns the exit code of the first signal."""
        if self.alive():
            self._signal_group(sig)
            if self.wait(grace) is None:
                self._signal_group(signal.SIGKILL)
                self.wait(5)
                code = None
            else:
                code = self.popen.returncode
        else:
            code = self.popen.returncode
        self._close()
        return code

    def kill9(self):
        self._signal_group(signal.SIGKILL)
        self.wait(10)
        self._close()

    def _close(self):
        if self in _LIVE:
            _LIVE.remove(self)
        for f in {self._log, self._out}:
            if not f.closed:
                f.close()


def stop_everything():
    for proc in list(_LIVE):
        proc.stop(signal.SIGKILL, grace=5)


# The broker's port distance between the shard-brokers of one process (broker/src/config/shard_brokers.rs).
SHARD_PORT_STEP = 4


def default_shard_routing():
    """`shardRouting` of a cluster that does not choose: INTEROP_SHARD_ROUTING, else the broker's default."""
    routing = os.environ.get("INTEROP_SHARD_ROUTING", "direct")
    if routing not in ("direct", "forward"):
        raise SystemExit("INTEROP_SHARD_ROUTING must be `direct` or `forward`, not %r" % routing)
    return routing


def shard_broker_ports(listen_port, shards, routing):
    """The client ports of the brokers one broker process presents: one per shard in direct mode."""
    count = shards if routing == "direct" and shards > 1 else 1
    return [listen_port + SHARD_PORT_STEP * i for i in range(count)]


def shard_broker_names(broker_name, shards, routing):
    """Their broker names: `<brokerName>-<shard>` in direct mode, else the configured name."""
    if routing == "direct" and shards > 1:
        return ["%s-%d" % (broker_name, i) for i in range(shards)]
    return [broker_name]


def broker_port_block(shards, routing):
    """(below, above) for free_port: a broker binds listenPort-2 (fast port) and listenPort+1 (HA), and in
    direct mode shard i also listenPort+4i and listenPort+4i-2."""
    ports = shard_broker_ports(0, shards, routing)
    return 2, max(ports[-1], 1)


class Cluster:
    """A name server and one broker process of the implementation under test, on free loopback ports.

    With `shardRouting = direct` (the broker's default) and more than one shard, the process is one broker per
    shard to clients: `broker_names` / `broker_addrs` list them (shard-broker i is `<brokerName>-i` on
    listenPort + 4i). Requests about queues, offsets, statistics or stored messages must go to each of them;
    `broker_addr` (shard-broker 0) is for process-wide requests (topics, config). In `forward` mode, or with
    one shard, both lists have the one broker.
    """

    def __init__(self, workdir, flush_disk_type="ASYNC_FLUSH", shard_count=2, extra_config=None,
                 shard_routing=None):
        self.workdir = workdir
        self.flush_disk_type = flush_disk_type
        self.shard_count = shard_count
        # More broker keys (RocketMQ names, values as strings), e.g. {"enablePropertyFilter": "true"}.
        self.extra_config = dict(extra_config or {})
        self.namesrv_bin, self.broker_bin = binaries()
        self.impl = os.environ.get("INTEROP_IMPL", "ours")
        # rocketmq-rust has no shardRouting: one broker per process.
        self.shard_routing = (shard_routing or default_shard_routing()) if self.impl == "ours" else "forward"
        self.namesrv_port = free_port()
        below, above = broker_port_block(shard_count, self.shard_routing)
        self.broker_port = free_port(below=below, above=above)
        self.namesrv_addr = "127.0.0.1:%d" % self.namesrv_port
        self.broker_name = "broker-interop"
        self.broker_ports = shard_broker_ports(self.broker_port, shard_count, self.shard_routing)
        self.broker_names = shard_broker_names(self.broker_name, shard_count, self.shard_routing)
        self.broker_addrs = ["127.0.0.1:%d" % p for p in self.broker_ports]
        # Shard-broker 0: process-wide requests (topic creation, config, ACL) go here.
        self.broker_addr = self.broker_addrs[0]
        self.store = os.path.join(workdir, "store")
        self.namesrv = None
        self.broker = None
        self.broker_starts = 0

    # ---- processes -------------------------------------------------------------------------------

    def start(self, timeout=60):
        for path in (self.namesrv_bin, self.broker_bin):
            check(os.path.isfile(path), "binary missing: %s (run tests/interop/setup.sh)" % path)
        self.start_namesrv(timeout)
        self.start_broker(timeout)

    def start_namesrv(self, timeout):
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir,
                   ROCKETMQ_HOME=self.workdir)
        if self.impl == "ours":
            argv = [self.namesrv_bin, "--listen", self.namesrv_addr]
        else:
            argv = [self.namesrv_bin, "--listenPort", str(self.namesrv_port), "--bindAddress", "127.0.0.1"]
        self.namesrv = Proc("namesrv", argv, os.path.join(self.workdir, "namesrv.log"), env=env, cwd=self.workdir)
        if not wait_port(self.namesrv_port, timeout):
            raise CaseFailure("name server did not listen on %s within %ss" % (self.namesrv_addr, timeout))

    def _broker_config(self):
        if self.impl == "ours":
            path = os.path.join(self.workdir, "broker.toml")
            lines = {
                "brokerClusterName": '"DefaultCluster"',
                "brokerName": '"%s"' % self.broker_name,
                "brokerId": "0",
                "brokerIP1": '"127.0.0.1"',
                "bindAddress": '"127.0.0.1"',
                "namesrvAddr": '"%s"' % self.namesrv_addr,
                "listenPort": str(self.broker_port),
                "storePathRootDir": '"%s"' % self.store,
                "flushDiskType": '"%s"' % self.flush_disk_type,
                "brokerRole": '"ASYNC_MASTER"',
                "autoCreateTopicEnable": "true",
                # Small segments keep a case's store small; the format is the same.
                "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
                "shardCount": str(self.shard_count),
                "shardRouting": '"%s"' % self.shard_routing,
            }
            for key, value in self.extra_config.items():
                lines[key] = value if value in ("true", "false") or value.lstrip("-").isdigit() else '"%s"' % value
            text = "".join("%s = %s\n" % kv for kv in lines.items())
        else:
            # rocketmq-rust takes a Java broker.properties as it is.
            path = os.path.join(self.workdir, "broker-rocketmq-rust.properties")
            text = "\n".join([
                "brokerClusterName=DefaultCluster",
                "brokerName=%s" % self.broker_name,
                "brokerId=0",
                "brokerIP1=127.0.0.1",
                "namesrvAddr=%s" % self.namesrv_addr,
                "listenPort=%d" % self.broker_port,
                "storePathRootDir=%s" % self.store,
                "flushDiskType=%s" % self.flush_disk_type,
                "autoCreateTopicEnable=true",
            ] + ["%s=%s" % kv for kv in self.extra_config.items()] + [""])
        with open(path, "w") as f:
            f.write(text)
        return path

    def start_broker(self, timeout=60):
        """Start (or restart, same store and ports) the broker and wait until the name server lists it."""
        config = self._broker_config()
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir,
                   ROCKETMQ_HOME=self.workdir)
        if self.impl == "ours":
            argv = [self.broker_bin, "--config", config]
        else:
            argv = [self.broker_bin, "-c", config, "-n", self.namesrv_addr]
        self.broker_starts += 1
        log = os.path.join(self.workdir, "broker.log")
        with open(log, "ab") as f:
            f.write(("\n===== broker start #%d: %s\n" % (self.broker_starts, " ".join(argv))).encode())
        self.broker = Proc("broker", argv, log, env=env, cwd=self.workdir)
        self.wait_registered(timeout)

    def wait_registered(self, timeout):
        """Wait until the name server lists every shard-broker of the process (as brokerId 0, at its
        address) and each of them accepts connections."""
        wait_brokers_registered(self.namesrv_addr, self.broker, dict(zip(self.broker_names, self.broker_addrs)),
                                "0", timeout)

    def shard_brokers(self):
        """[(brokerName, addr)] of every broker this process presents (one per shard in direct mode)."""
        return list(zip(self.broker_names, self.broker_addrs))

    def ask_each(self, code, ext_fields=None):
        """The same request to every shard-broker: [(brokerName, addr, Response)]."""
        return [(name, addr, remoting.request(addr, code, ext_fields)) for name, addr in self.shard_brokers()]

    def max_offsets(self, topic, queues):
        """{(brokerName, queueId): GET_MAX_OFFSET} over every shard-broker's queues 0..queues-1."""
        out = {}
        for name, addr in self.shard_brokers():
            for q in range(queues):
                resp = remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": topic, "queueId": q})
                check(resp.code == remoting.SUCCESS, "GET_MAX_OFFSET %s/%d on %s (%s) answered %d %r"
                      % (topic, q, name, addr, resp.code, resp.remark))
                out[(name, q)] = int(resp.ext_fields.get("offset", 0))
        return out

    def create_topic(self, topic, queue_nums=4, timeout=40, attributes=None):
        """Create `topic` on the broker (with RocketMQ 5 `attributes`, `+k=v,...`) and wait until the name
        server routes it."""
        remoting.create_topic(self.broker_addr, topic, queue_nums, attributes)
        self.wait_route(topic, timeout)

    def wait_route(self, topic, timeout=40):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            route = remoting.topic_route(self.namesrv_addr, topic)
            if route and route.get("queueDatas"):
                return route
            time.sleep(0.2)
        raise CaseFailure("name server has no route for topic %s %ss after creating it" % (topic, timeout))

    def stop_broker(self, grace=30):
        """SIGTERM, the graceful shutdown. Fails the case if the broker needs SIGKILL or exits non-zero."""
        proc = self.broker
        code = proc.stop(signal.SIGTERM, grace=grace)
        check(code is not None, "broker did not exit within %ss of SIGTERM" % grace)
        check(code == 0, "broker exited with code %s after SIGTERM" % code)

    def kill_broker(self):
        self.broker.kill9()

    def stop(self):
        for proc in (self.broker, self.namesrv):
            if proc is not None and proc.alive():
                proc.stop(signal.SIGTERM, grace=10)

    def log_tails(self, lines=30):
        out = []
        for name in ("broker.log", "namesrv.log"):
            path = os.path.join(self.workdir, name)
            problems = problem_lines(path)
            if problems:
                out.append("---- %s: WARN/ERROR lines (first %d)\n%s" % (name, len(problems), "\n".join(problems)))
            out.append("---- %s (last %d lines)\n%s" % (name, lines, tail(path, lines)))
        return "\n".join(out)


def wait_brokers_registered(namesrv_addr, proc, want, broker_id, timeout):
    """Wait until the name server lists each `want` {brokerName: addr} with `broker_id` at that address and
    the address accepts connections; fail if `proc` exits first."""
    end = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < end:
        if not proc.alive():
            raise CaseFailure("%s exited with code %s during start" % (proc.name, proc.popen.returncode))
        try:
            brokers = remoting.cluster_brokers(namesrv_addr)
            missing = [name for name, addr in want.items() if brokers.get(name, {}).get(broker_id) != addr]
            if not missing and all(wait_port(int(addr.rsplit(":", 1)[1]), 0.5) for addr in want.values()):
                return
            last = "not listed yet: %s; cluster info: %s" % (missing, json.dumps(brokers))
        except (OSError, remoting.RemotingError, ValueError) as err:
            last = "%s: %s" % (type(err).__name__, err)
        time.sleep(0.2)
    raise CaseFailure("%s %s not registered with the name server within %ss (%s)"
                      % (proc.name, want, timeout, last))


def problem_lines(path, limit=15, width=600):
    """The first distinct WARN/ERROR/panic lines of a log (repeats of the same message are skipped)."""
    found = []
    seen = set()
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not any(w in line for w in (" WARN ", " ERROR ", "panicked")):
                    continue
                # Same message modulo timestamp: show once.
                key = line.split(" ", 1)[-1][:200]
                if key in seen:
                    continue
                seen.add(key)
                found.append(line.rstrip()[:width])
                if len(found) >= limit:
                    break
    except OSError:
        pass
    return found


class ClientResult:
    def __init__(self, name, code, records, stderr_path, timed_out):
        self.name = name
        self.code = code
        self.records = records
        self.stderr_path = stderr_path
        self.timed_out = timed_out

    def of_kind(self, kind):
        return [r for r in self.records if r.get("kind") == kind]

    def describe(self):
        state = "timed out" if self.timed_out else "exit %s" % self.code
        return "%s (%s); stderr tail:\n%s" % (self.name, state, tail(self.stderr_path, 25))


def read_records(path):
    """JSON lines a client wrote to stdout (other lines are ignored: clients may print their own)."""
    records = []
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return records


class Clients:
    """Runs the real clients as subprocesses (a crash or hang of a client cannot take the runner down)."""

    def __init__(self, workdir, cluster):
        self.workdir = workdir
        self.cluster = cluster
        self.home = os.path.join(workdir, "client-home")
        os.makedirs(self.home, exist_ok=True)
        self.count = 0

    def _env(self, extra):
        env = dict(os.environ, HOME=self.home, PYTHONUNBUFFERED="1", RUST_LOG=os.environ.get("CLIENT_LOG", "warn"))
        env.update(extra or {})
        return env

    def _argv(self, lang, args):
        if lang in JAVA_SETS:
            return java_argv(args, lang)
        if lang == "go":
            check(os.path.isfile(GO_CLIENT), "Go client missing: %s (run tests/interop/setup.sh)" % GO_CLIENT)
            return [GO_CLIENT, "--namesrv", self.cluster.namesrv_addr] + list(args)
        if lang == "py":
            return [VENV_PYTHON, PY_CLIENT, "--namesrv", self.cluster.namesrv_addr] + list(args)
        check(os.path.isfile(RUST_CLIENT), "rust client missing: %s (run tests/interop/setup.sh)" % RUST_CLIENT)
        return [RUST_CLIENT, "--namesrv", self.cluster.namesrv_addr] + list(args)

    def spawn(self, lang, name, args, env=None):
        """Start a client in the background; read its records later with `finish`."""
        self.count += 1
        base = os.path.join(self.workdir, "client-%02d-%s" % (self.count, name))
        if lang in JAVA_SETS:
            env = dict(java_env(os.path.join(self.workdir, "java-client-logs")), **(env or {}))
        proc = Proc(name, self._argv(lang, args), base + ".stderr", env=self._env(env),
                    cwd=self.home, stdout_path=base + ".jsonl")
        proc.base = base
        return proc

    def finish(self, proc, timeout, sig=signal.SIGTERM):
        """Wait up to `timeout` s for a spawned client; stop it if still running."""
        timed_out = proc.wait(timeout) is None
        if timed_out:
            proc.stop(sig, grace=5)
        code = proc.popen.returncode
        proc._close()
        return ClientResult(proc.name, code, read_records(proc.base + ".jsonl"), proc.base + ".stderr", timed_out)

    def run(self, lang, name, args, timeout, env=None):
        return self.finish(self.spawn(lang, name, args, env), timeout)

    def cpp_log(self, pid):
        """The C++ client's own log of process `pid` (it names the broker's answers and its rebalances)."""
        path = os.path.join(self.home, "logs", "rocketmq-cpp", "%d_rocketmq-cpp.log.0" % pid)
        try:
            with open(path, "r", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wait_cpp_pulling(self, proc, topic, queues, timeout=40):
        """Wait until the C++ push consumer `proc` has added every queue in `queues` [(brokerName, queueId)]
        of `topic` to its rebalance. It adds a queue only once it knows where to start; when that lookup
        fails on its side (its log says "get timed_mutex timeout" when two of its threads connect to one
        broker at once) it retries at its next rebalance and, consuming from the last offset, starts
        after whatever arrived in between. Producing after this wait keeps that client race out of a
        delivery check."""
        end = time.monotonic() + timeout
        missing = list(queues)
        while time.monotonic() < end:
            log = self.cpp_log(proc.pid)
            missing = [(b, q) for b, q in queues
                       if "add mq:MessageQueue [topic=%s, brokerName=%s, queueId=%d]" % (topic, b, q) not in log]
            if not missing:
                return
            check(proc.alive(), "consumer %s exited before pulling every queue of %s" % (proc.name, topic))
            time.sleep(0.2)
        raise CaseFailure("consumer %s pulls no queue %s of %s after %ss" % (proc.name, missing, topic, timeout))


def java_argv(args, lang="java"):
    """`args` = [main class, its arguments...] run on the Apache client set of `lang` (JAVA_SETS) with the
    programs of java/ compiled against it on the classpath."""
    set_name = JAVA_SETS[lang]
    classes = os.path.join(JAVA_BUILD, set_name, "classes")
    try:
        with open(os.path.join(JAVA_BUILD, "built.json")) as f:
            built = json.load(f)
    except (OSError, ValueError):
        raise CaseFailure("Java test programs not built: run tests/interop/setup.sh")
    if set_name not in built:
        raise CaseFailure("Java client %s unavailable (tests/interop/setup.sh said why)" % set_name)
    return [APACHE_JAVA, set_name, "-cp", classes] + list(args)


def java_env(log_dir):
    """Where the Java client's own log goes."""
    return {"RMQ_CLIENT_LOG_DIR": log_dir}

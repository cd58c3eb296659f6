"""Clients written by other people in the chaos history: Apache RocketMQ's Java clients (from Maven
Central through tests/apache/: the producer on 4.9.8, the push consumer on 5.5.0) running
java/ChaosProducer.java and java/ChaosConsumer.java, their
lines turned into the operations the Python producers (run.py's Producer) and consumers (consumer.py)
record.

They route, retry, time out, rebalance and commit as the Java client does (retryTimesWhenSendFailed 2,
sendMsgTimeout 2 s; a push consumer of its own group committing offsets every 5 s), with the route
poll set to 1 s where the client's default is 30 s, as a failover-minded user would (with the default a
producer keeps sending to a deposed master until its next poll). `build()` compiles the programs once
per source change; when Apache's jars or a JDK are missing it says why and the run goes on without
them.
"""

import hashlib
import json
import os
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SOURCES = [os.path.join(HERE, "java", name) for name in ("ChaosProducer.java", "ChaosConsumer.java")]
# The producer on the 4.x client users still run; the push consumer on a 5.x one, as a RocketMQ 5 user's:
# 4.9.8 leaves a pull parked on a connection the broker closed (a killed master) until its 30 s
# timeout, 5.1.3 and later fail it at once (docs/testing.md, "Chaos").
PRODUCER_SET = "rocketmq-4.9.8"
CONSUMER_SET = "rocketmq-5.5.0"
APACHE = os.path.join(REPO, "tests", "apache")


def classes(client_set):
    """The programs compiled against one client version."""
    return os.path.join(HERE, "java", "build", client_set)


def build():
    """None when the programs are ready to run (compiled once per source change and client version),
    else why they are not."""
    digest = hashlib.sha256()
    for source in SOURCES:
        with open(source, "rb") as f:
            digest.update(f.read())
    digest = digest.hexdigest()
    for client_set in (PRODUCER_SET, CONSUMER_SET):
        out_dir = classes(client_set)
        stamp = os.path.join(out_dir, "source.sha256")
        try:
            with open(stamp) as f:
                if f.read().strip() == digest:
                    continue
        except OSError:
            pass
        for cmd in ([os.path.join(APACHE, "setup.sh"), client_set],
                    [os.path.join(APACHE, "javac.sh"), client_set, "-nowarn", "-d", out_dir] + SOURCES):
            os.makedirs(out_dir, exist_ok=True)
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if out.returncode != 0:
                return "%s %s failed: %s" % (os.path.basename(cmd[0]), client_set, out.stdout.strip()[-400:])
        with open(stamp, "w") as f:
            f.write(digest + "\n")
    return None


class JavaProgram(threading.Thread):
    """Runs one of java/'s programs; `history` holds its operations with `t` on the runner's clock
    (seconds since t0, time.monotonic()), each also written to `out`."""

    def __init__(self, name, client_set, argv, t0, out, lock, workdir):
        super().__init__(daemon=True)
        self.client_set = client_set
        self.name_ = name
        self.argv = argv
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.stop_file = os.path.join(workdir, "%s.stop" % name)
        self.log = os.path.join(workdir, "%s.log" % name)
        self.history = []
        self.errors = []
        self.proc = None

    def run(self):
        argv = [os.path.join(APACHE, "java.sh"), self.client_set, "-cp", classes(self.client_set)] + self.argv + [
            self.stop_file]
        # A log directory per program: two JVMs appending to one rocketmq_client.log lose lines.
        env = dict(os.environ, RMQ_CLIENT_LOG_DIR=os.path.join(os.path.dirname(self.log), "%s-client-logs" % self.name_))
        with open(self.log, "w") as err:
            # Its standard input stays open until this process ends: its end stops the program.
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         text=True, env=env, start_new_session=True)
            for line in self.proc.stdout:
                self._line(line)
            self.proc.wait()
        if self.proc.returncode != 0:
            self.errors.append("%s exited with %s (%s)" % (self.name_, self.proc.returncode, self.log))

    def _line(self, line):
        try:
            op = json.loads(line)
        except ValueError:
            return
        if op.get("type") == "error":
            self.errors.append("%s: %s" % (self.name_, op.get("error")))
        if op.get("type") not in self.OPS:
            return
        op["t"] = round(op.pop("mono") / 1e9 - self.t0, 4)
        self.tag(op)
        self.history.append(op)
        self.seen(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def tag(self, op):
        pass

    def seen(self, op):
        pass

    def stop(self, timeout=15):
        """Asks the program to stop and waits for it."""
        with open(self.stop_file, "w"):
            pass
        self.join(timeout)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.errors.append("%s did not stop within %s s" % (self.name_, timeout))


class JavaProducer(JavaProgram):
    """ChaosProducer: invoke / ok / fail / unknown, as run.py's Producer records them."""

    OPS = ("invoke", "ok", "fail", "unknown")

    def __init__(self, index, seed, cluster, topic, t0, out, lock, workdir):
        super().__init__("java-producer-%d" % index, PRODUCER_SET, ["ChaosProducer", cluster.namesrv_addr, topic,
                                                       "s%d-j%d" % (seed, index), "1000"], t0, out, lock, workdir)
        self.index = index

    def tag(self, op):
        op["proc"] = "java%d" % self.index


class JavaConsumer(JavaProgram):
    """ChaosConsumer, group `chaos-java-consumer`: `consume` operations as consumer.py records them, with
    consumer numbers from 100 on (no commit or reset operations: the client keeps those to itself)."""

    OPS = ("consume",)
    GROUP = "chaos-java-consumer"

    def __init__(self, index, cluster, topic, t0, out, lock, workdir):
        super().__init__("java-consumer-%d" % index, CONSUMER_SET, ["ChaosConsumer", cluster.namesrv_addr, topic, self.GROUP,
                                                       "1000"], t0, out, lock, workdir)
        self.index = index
        self.freeze = threading.Event()  # what run.py's drain() sets; the client rebalances on its own
        self.last_consume = None

    def tag(self, op):
        op["consumer"] = 100 + self.index

    def seen(self, op):
        self.last_consume = time.monotonic()

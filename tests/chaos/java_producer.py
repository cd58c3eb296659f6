"""A producer written by other people in the chaos history: Apache RocketMQ's Java client (4.9.8, from
Maven Central through tests/apache/) running java/ChaosProducer.java, its lines turned into the same
invoke / ok / fail / unknown operations the Python producers record (run.py's Producer).

Unlike the Python producers it routes, retries and times out as the Java client does
(retryTimesWhenSendFailed 2, sendMsgTimeout 2 s; its route poll set to 1 s, where the client's default
is 30 s, as a failover-minded user would: with the default the client keeps sending to a deposed
master until its next poll). `build()` compiles the program once per source change; when Apache's
jars or a JDK are missing it says why and the run goes on without it.
"""

import hashlib
import json
import os
import subprocess
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(HERE, "java", "ChaosProducer.java")
CLASSES = os.path.join(HERE, "java", "build", "classes")
CLIENT_SET = "rocketmq-4.9.8"
APACHE = os.path.join(REPO, "tests", "apache")


def build():
    """None when the program is ready to run, else why it is not."""
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    stamp = os.path.join(CLASSES, "source.sha256")
    try:
        with open(stamp) as f:
            if f.read().strip() == digest:
                return None
    except OSError:
        pass
    for cmd in ([os.path.join(APACHE, "setup.sh"), CLIENT_SET],
                [os.path.join(APACHE, "javac.sh"), CLIENT_SET, "-nowarn", "-d", CLASSES, SOURCE]):
        os.makedirs(CLASSES, exist_ok=True)
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode != 0:
            return "%s failed: %s" % (os.path.basename(cmd[0]), out.stdout.strip()[-400:])
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return None


class JavaProducer(threading.Thread):
    """Runs ChaosProducer against the cluster's name server; `history` holds its operations with `t` on
    the runner's clock (seconds since t0, time.monotonic())."""

    def __init__(self, index, seed, cluster, topic, t0, out, lock, workdir):
        super().__init__(daemon=True)
        self.index = index
        self.cluster = cluster
        self.topic = topic
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.prefix = "s%d-j%d" % (seed, index)
        self.stop_file = os.path.join(workdir, "java-producer-%d.stop" % index)
        self.log = os.path.join(workdir, "java-producer-%d.log" % index)
        self.stop_flag = threading.Event()
        self.history = []
        self.errors = []
        self.proc = None

    def run(self):
        argv = [os.path.join(APACHE, "java.sh"), CLIENT_SET, "-cp", CLASSES, "ChaosProducer",
                self.cluster.namesrv_addr, self.topic, self.prefix, "1000", self.stop_file]
        env = dict(os.environ, RMQ_CLIENT_LOG_DIR=os.path.join(os.path.dirname(self.log), "java-client-logs"))
        with open(self.log, "w") as err:
            # Its standard input stays open until this process ends: its end stops the program.
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         text=True, env=env, start_new_session=True)
            for line in self.proc.stdout:
                self._line(line)
            self.proc.wait()
        if self.proc.returncode != 0:
            self.errors.append("ChaosProducer exited with %s (%s)" % (self.proc.returncode, self.log))

    def _line(self, line):
        try:
            op = json.loads(line)
        except ValueError:
            return
        kind = op.get("type")
        if kind not in ("invoke", "ok", "fail", "unknown"):
            if kind == "error":
                self.errors.append(op.get("error"))
            return
        op["t"] = round(op.pop("mono") / 1e9 - self.t0, 4)
        op["proc"] = "java%d" % self.index
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def stop(self, timeout=15):
        """Asks the program to stop after its current send and waits for it."""
        with open(self.stop_file, "w"):
            pass
        self.join(timeout)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.errors.append("ChaosProducer did not stop within %s s" % timeout)

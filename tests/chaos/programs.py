"""What the chaos history's client programs share (java_clients.py, sdk_clients.py, go_clients.py): a
thread running one program that prints a JSON object per line, and the compilation of Java programs
against one of Apache's client versions (tests/apache/), once per source change.
"""

import hashlib
import json
import os
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
APACHE = os.path.join(os.path.dirname(HERE), "apache")


def compile_java(sources, client_set, out_dir):
    """None when `sources` are compiled against `client_set` in `out_dir` (again only after a source
    change: a digest of them is kept there), else why they cannot be."""
    digest = hashlib.sha256()
    for source in sources:
        with open(source, "rb") as f:
            digest.update(f.read())
    digest = digest.hexdigest()
    stamp = os.path.join(out_dir, "source.sha256")
    try:
        with open(stamp) as f:
            if f.read().strip() == digest:
                return None
    except OSError:
        pass
    for cmd in ([os.path.join(APACHE, "setup.sh"), client_set],
                [os.path.join(APACHE, "javac.sh"), client_set, "-nowarn", "-d", out_dir] + list(sources)):
        os.makedirs(out_dir, exist_ok=True)
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as err:
            return "%s %s failed: %s" % (os.path.basename(cmd[0]), client_set, err)
        if out.returncode != 0:
            return "%s %s failed: %s" % (os.path.basename(cmd[0]), client_set, out.stdout.strip()[-400:])
    with open(stamp, "w") as f:
        f.write(digest + "\n")
    return None


def java_argv(client_set, classes, argv):
    """The command line running a compiled program with `client_set`'s jars (tests/apache/java.sh)."""
    return [os.path.join(APACHE, "java.sh"), client_set, "-cp", classes] + list(argv)


class LineProgram(threading.Thread):
    """Runs a client program printing one JSON object per line; `handle(op)` files each operation after
    `t` (seconds since t0 on time.monotonic()) was set from its `mono` (CLOCK_MONOTONIC nanoseconds) or,
    without one, from when the line was read. Every operation `handle` keeps is also written to `out`.
    The program's last argument is a file whose creation asks it to stop (`stop()`)."""

    def __init__(self, name, argv, t0, out, lock, workdir, env=None):
        super().__init__(daemon=True)
        self.name_ = name
        self.argv = argv
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.env = env
        self.stop_file = os.path.join(workdir, "%s.stop" % name)
        self.log = os.path.join(workdir, "%s.log" % name)
        self.errors = []
        self.proc = None

    def run(self):
        try:
            with open(self.log, "w") as err:
                # Its standard input stays open until this process ends: its end stops the program.
                self.proc = subprocess.Popen(self.argv + [self.stop_file], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=err, text=True, env=self.env,
                                             start_new_session=True)
                for line in self.proc.stdout:
                    self._line(line)
                self.proc.wait()
        except OSError as err:
            self.errors.append("%s did not start: %s" % (self.name_, err))
            return
        if self.proc.returncode != 0:
            self.errors.append("%s exited with %s (%s)" % (self.name_, self.proc.returncode, self.log))

    def _line(self, line):
        try:
            op = json.loads(line)
        except ValueError:
            return
        if not isinstance(op, dict):
            return
        if op.get("type") == "error":
            self.errors.append("%s: %s" % (self.name_, op.get("error")))
            return
        mono = op.pop("mono", None)
        op["t"] = round((mono / 1e9 if isinstance(mono, (int, float)) else time.monotonic()) - self.t0, 4)
        if self.handle(op):
            with self.lock:
                self.out.write(json.dumps(op) + "\n")

    def handle(self, op):
        """Files one operation; True when it belongs in the history file."""
        return False

    def stop(self, timeout=15):
        """Asks the program to stop and waits for it."""
        with open(self.stop_file, "w"):
            pass
        self.join(timeout)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.errors.append("%s did not stop within %s s" % (self.name_, timeout))


class HistoryProgram(LineProgram):
    """A LineProgram whose operations of the kinds in OPS go to `history`, each marked by `tag` (its
    producer or consumer number) and noted by `seen`."""

    OPS = ()

    def __init__(self, name, argv, t0, out, lock, workdir, env=None):
        super().__init__(name, argv, t0, out, lock, workdir, env)
        self.history = []

    def handle(self, op):
        if op.get("type") not in self.OPS:
            return False
        self.tag(op)
        self.history.append(op)
        self.seen(op)
        return True

    def tag(self, op):
        pass

    def seen(self, op):
        pass

"""The Go client (github.com/apache/rocketmq-client-go/v2, from the Go module proxy, pinned in
go/go.mod and go/go.sum as tests/interop/go-client pins it) in the chaos history, talking remoting to
the name servers and brokers: go/main.go's `produce` (SendSync, one message at a time, key
s<seed>-go<i>-n, the client's own routing, 2 retries, 2 s timeout) and `consume` (a push consumer of
its own group, clustering, from the first offset). Their lines become the operations run.py's
Producer (invoke / ok / fail / unknown) and consumer.py (consume, consumer numbers from 300 on) record;
the runner stamps each with its clock as it reads the line.

Wiring into run.py (the lines to add):

    import go_clients                                    # with the other imports
    GO_PRODUCERS = GO_CONSUMERS = 0                      # main(): from --go-producers / --go-consumers,
                                                         #   when `why = go_clients.build()` is None
    # in run_seed, beside the Java clients (started, each a thread running its program):
    gop, goc = go_clients.start(cluster, TOPIC, seed, t0, hist, lock, workdir, GO_PRODUCERS, GO_CONSUMERS)
    # where the Java producers stop:
    for g in gop: g.stop()
    # drain(cons_ + jcons + goc), then:
    for c in goc: c.stop()
    # merge gop's `.history` into `history` (ok operations name broker, queue, offset); the group on its
    # own, as the Java group:
    gconsumes = sorted((op for c in goc for op in c.history), key=lambda op: op["t"])
    problems, facts = checker.check_consume(gconsumes, history, applied, t_end, drained)
    result["problems"].extend("go consumer group: " + p for p in problems)
    result["facts"]["go_errors"] = [e for g in gop + goc for e in g.errors]

The client polls routes every 30 s (a constant of this version): after a failover its producer keeps
sending to the old master until then (its sends fail or time out meanwhile) and its consumer pulls
from where its route says.
"""

import os
import subprocess
import threading
import time

from programs import HistoryProgram

HERE = os.path.dirname(os.path.abspath(__file__))
GO_DIR = os.path.join(HERE, "go")
BINARY = os.path.join(GO_DIR, "build", "chaos-go")
GROUP = "chaos-go-consumer"


def build():
    """None when go/build/chaos-go is built (again only after a source change), else why not."""
    try:
        out = subprocess.run([os.path.join(GO_DIR, "build.sh")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as err:
        return "go/build.sh failed: %s" % err
    if out.returncode != 0:
        return "go/build.sh failed: %s" % out.stdout.strip()[-400:]
    return None


class GoProgram(HistoryProgram):
    """Runs go/'s program (`produce` or `consume`)."""

    def __init__(self, name, argv, t0, out, lock, workdir):
        # The client logs under $HOME/logs: the run's directory.
        env = dict(os.environ, HOME=os.path.join(workdir, "go-home"))
        super().__init__(name, [BINARY] + argv, t0, out, lock, workdir, env)


class GoProducer(GoProgram):
    """`produce`: invoke / ok / fail / unknown, proc `go<i>`; ok with broker, queue, offset (addr is the
    broker name: the client's result does not name the address)."""

    OPS = ("invoke", "ok", "fail", "unknown")

    def __init__(self, index, seed, cluster, topic, t0, out, lock, workdir):
        super().__init__("go-producer-%d" % index, ["produce", cluster.namesrv_addr, topic, "s%d-go%d" % (seed, index)],
                         t0, out, lock, workdir)
        self.index = index

    def tag(self, op):
        op["proc"] = "go%d" % self.index


class GoConsumer(GoProgram):
    """`consume`, group chaos-go-consumer: consume operations with key, broker, queue, offset and the
    store host as addr; consumer 300 + index. `freeze` / `last_consume` for run.py's drain()."""

    OPS = ("consume",)

    def __init__(self, index, cluster, topic, t0, out, lock, workdir):
        super().__init__("go-consumer-%d" % index, ["consume", cluster.namesrv_addr, topic, GROUP], t0, out, lock,
                         workdir)
        self.index = index
        self.freeze = threading.Event()
        self.last_consume = None

    def tag(self, op):
        op["consumer"] = 300 + self.index
        # The client names the broker that stored the message, not the replica that served the pull.
        op["addr"] = "store host %s" % op.get("addr")
        self.last_consume = time.monotonic()


def start(cluster, topic, seed, t0, out, lock, workdir, producers=1, consumers=1):
    """Starts `producers` GoProducers and `consumers` GoConsumers: (producers, consumers)."""
    prods = [GoProducer(i, seed, cluster, topic, t0, out, lock, workdir) for i in range(producers)]
    cons = [GoConsumer(i, cluster, topic, t0, out, lock, workdir) for i in range(consumers)]
    for c in prods + cons:
        c.start()
    return prods, cons

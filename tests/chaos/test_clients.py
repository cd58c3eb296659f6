"""Tests of sdk_clients.py and go_clients.py: check_fifo on made-up histories (each check passes on a
good one and fails on a bad one), and a live run without network namespaces (skipped, with the reason,
when the binaries, the SDK's jars, a JDK or Go are missing): a name server, one broker process of two
shard-brokers (SYNC_FLUSH) and our proxy on loopback ports, the gRPC SDK's clients and a Go producer
and consumer for about 25 s with the broker killed (SIGKILL) and restarted in the middle; the histories
must parse and pass check_consume (per broker) and check_fifo, and the FIFO log with two deliveries
swapped must fail check_fifo.

    python3 tests/chaos/test_clients.py            # everything (the live run takes about a minute)
    python3 tests/chaos/test_clients.py Fifo       # the made-up histories only
"""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

import checker  # noqa: E402
import go_clients  # noqa: E402
import sdk_clients  # noqa: E402
from sdk_clients import check_fifo  # noqa: E402


def send(key, group, seq, t, queue=0, offset=None, broker="b", kind="ok"):
    op = {"type": kind, "key": key, "group": group, "seq": seq, "t": t}
    if kind == "ok":
        op.update(broker=broker, queue=queue, offset=seq if offset is None else offset)
    return op


def deliver(key, group, offset, t, batch, attempt=1, queue=0, broker="b", inv=3000, skip=False):
    return {"type": "deliver", "key": key, "group": group, "offset": offset, "queue": queue, "broker": broker,
            "t": t, "batch": batch, "attempt": attempt, "invisible_ms": inv, "skip": skip, "retry": False}


def ack(key, t, ok=True):
    return {"type": "ack", "key": key, "t": t, "ok": ok}


class Fifo(unittest.TestCase):
    def sends(self):
        return [send("g-%d" % i, "g", i, i * 0.1) for i in range(4)]

    def test_in_order_with_acks_passes(self):
        log = []
        for i in range(4):
            log += [deliver("g-%d" % i, "g", i, 1 + i, i), ack("g-%d" % i, 1.05 + i)]
        problems, facts = check_fifo(self.sends(), log)
        self.assertEqual(problems, [])
        self.assertEqual(facts["delivered"], 4)

    def test_swapped_first_deliveries_fail(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1), deliver("g-2", "g", 2, 2, 2), ack("g-2", 2.1),
               deliver("g-1", "g", 1, 3, 3), ack("g-1", 3.1), deliver("g-3", "g", 3, 4, 4), ack("g-3", 4.1)]
        problems, facts = check_fifo(self.sends(), log)
        self.assertEqual(facts["fifo_order"], 1)
        self.assertTrue(problems[0].startswith("fifo_order: group g on b queue 0: g-2"), problems)

    def test_later_delivered_earlier_never_is_missed_when_drained(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1), deliver("g-2", "g", 2, 2, 2), ack("g-2", 2.1)]
        problems, _ = check_fifo(self.sends()[:3], log, drained=False)
        self.assertEqual(problems, [])
        problems, _ = check_fifo(self.sends()[:3], log, drained=True)
        self.assertEqual(problems, ["fifo_missed: 1 acknowledged FIFO sends never delivered, first g-1"])

    def test_unacked_send_and_other_queue_impose_no_order(self):
        # g-1's outcome is unknown (it may be stored late); g-3 moved to queue 1 (the route changed).
        sends = [send("g-0", "g", 0, 0), send("g-1", "g", 1, 0.1, kind="unknown"), send("g-2", "g", 2, 0.2),
                 send("g-3", "g", 0, 0.3, queue=1)]
        log = [deliver("g-3", "g", 0, 0.5, 1, queue=1), ack("g-3", 0.6), deliver("g-0", "g", 0, 1, 2),
               deliver("g-2", "g", 2, 1, 2), ack("g-0", 1.1), ack("g-2", 1.1), deliver("g-1", "g", 1, 2, 3),
               ack("g-1", 2.1)]
        problems, facts = check_fifo(sends, log)
        self.assertEqual(problems, [])
        self.assertEqual(facts["groups_moved"], ["g"])

    def test_redelivery_after_skip_and_rewind_pass(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1),
               deliver("g-1", "g", 1, 1.2, 2, skip=True), deliver("g-2", "g", 2, 1.2, 2, skip=True),
               # after the invisible time: the skipped message and the one it held come back
               deliver("g-1", "g", 1, 4.3, 3, attempt=2), deliver("g-2", "g", 2, 4.3, 3, attempt=2),
               ack("g-1", 4.4), ack("g-2", 4.4), deliver("g-3", "g", 3, 4.5, 4), ack("g-3", 4.6),
               # a rewind (a restart from an older committed offset): at-least-once
               deliver("g-2", "g", 2, 9, 5, attempt=1), deliver("g-3", "g", 3, 9, 5), ack("g-2", 9.1),
               ack("g-3", 9.1)]
        problems, facts = check_fifo(self.sends(), log)
        self.assertEqual(problems, [])
        self.assertEqual(facts["redeliveries"], 4)
        self.assertEqual(facts["acked_redelivered"], 2)
        self.assertEqual(facts["skipped_acks"], 2)

    def test_overtake_of_a_message_in_flight_fails(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1), deliver("g-1", "g", 1, 1.2, 2, skip=True),
               deliver("g-2", "g", 2, 1.5, 3), ack("g-2", 1.6), deliver("g-1", "g", 1, 4.3, 4, attempt=2),
               ack("g-1", 4.4)]
        problems, facts = check_fifo(self.sends()[:3], log)
        self.assertEqual(facts["fifo_overtake"], 1)
        self.assertTrue(any(p.startswith("fifo_overtake: g-2") for p in problems), problems)
        # The same inside a fault (a broker restarted at 1.3 s): excused, counted.
        problems, facts = check_fifo(self.sends()[:3], log, faults=[{"start": 1.3, "end": 1.4}])
        self.assertEqual(problems, [])
        self.assertEqual(facts["fifo_overtake_in_fault"], 1)

    def test_failed_ack_keeps_the_message_in_flight(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1, ok=False), deliver("g-1", "g", 1, 2, 2),
               ack("g-1", 2.1)]
        problems, _ = check_fifo(self.sends()[:2], log)
        self.assertTrue(any(p.startswith("fifo_overtake: g-1") for p in problems), problems)
        # After the invisible time (3 s) the next one may come.
        log[2] = deliver("g-1", "g", 1, 4.5, 2)
        problems, _ = check_fifo(self.sends()[:2], log)
        self.assertEqual(problems, [])

    def test_missed_only_when_drained(self):
        log = [deliver("g-0", "g", 0, 1, 1), ack("g-0", 1.1)]
        problems, facts = check_fifo(self.sends()[:2], log, drained=False)
        self.assertEqual(problems, [])
        self.assertEqual(facts["fifo_missed"], 1)
        problems, _ = check_fifo(self.sends()[:2], log, drained=True)
        self.assertTrue(problems[0].startswith("fifo_missed: 1"), problems)


class ConsumeOps(unittest.TestCase):
    def test_retry_topic_redelivery_takes_the_first_position(self):
        g = sdk_clients.GrpcClients.__new__(sdk_clients.GrpcClients)
        g.consumes = [{"type": "consume", "key": "a", "broker": "b0", "queue": 1, "offset": 5, "retry": False},
                      {"type": "consume", "key": "a", "broker": "b0", "queue": 0, "offset": 0, "retry": True},
                      {"type": "consume", "key": "b", "broker": "b0", "queue": 0, "offset": 1, "retry": True},
                      {"type": "consume", "key": "c", "broker": "b0", "queue": 0, "offset": 2, "retry": True}]
        history = [{"type": "ok", "key": "b", "broker": "b1", "queue": 3, "offset": 9}]
        ops = g.consume_ops(history)
        self.assertEqual([(o["broker"], o["queue"], o["offset"]) for o in ops],
                         [("b0", 1, 5), ("b0", 1, 5), ("b1", 3, 9), ("b0", -1, -1)])


def missing_live():
    """Why the live run cannot run here, or None."""
    import harness
    namesrv, broker = harness.binaries()
    proxy = os.path.join(os.path.dirname(namesrv), "proxy")
    for path in (namesrv, broker, proxy):
        if not os.path.isfile(path):
            return "binary missing: %s (cargo build -p namesrv -p broker -p proxy)" % path
    why = sdk_clients.build()
    if why:
        return "gRPC SDK clients: %s" % why
    why = go_clients.build()
    if why:
        return "Go clients: %s" % why
    return None


def read_all(cluster, topic, queues=4):
    """{brokerName: {brokerName: {(queue, offset): key}}} of every shard-broker (run.py's read_replicas
    shape, one replica per group)."""
    import wire
    reads = {}
    for name, addr in cluster.shard_brokers():
        table = {}
        for queue in range(queues):
            records, _, _ = wire.pull_all(addr, topic, queue)
            for _, offset, _, props in records:
                table[(queue, offset)] = props.get("KEYS", "")
        reads[name] = {name: table}
    return reads


def per_broker(consumes, history, reads, t_end, drained):
    """checker.check_consume for each broker apart (it keys slots by queue and offset alone). A message
    the client stored twice (its own retry after a timeout: the first copy stored, its reply lost) is
    consumed at both copies; a consume at a slot that holds the same key in the final read `reads`
    ({brokerName: {replica: {(queue, offset): key}}}) is that copy, passed on at the acknowledged slot."""
    held = {(b, q, o): k for b, reps in reads.items() for t in reps.values() for (q, o), k in t.items()}
    acked = {op["key"]: op for op in history if op["type"] == "ok"}
    copies = 0
    fixed = []
    for op in consumes:
        ack = acked.get(op["key"])
        if ack is not None and (op.get("broker"), op["queue"], op["offset"]) != (ack.get("broker"), ack["queue"],
                                                                              ack["offset"]) \
                and held.get((op.get("broker"), op["queue"], op["offset"])) == op["key"]:
            op = dict(op, broker=ack.get("broker"), queue=ack["queue"], offset=ack["offset"])
            copies += 1
        fixed.append(op)
    invokes = [op for op in history if op["type"] == "invoke"]
    problems, facts = [], {"second_copies_consumed": copies}
    for broker in sorted({op.get("broker") for op in history if op["type"] == "ok"}):
        hist = invokes + [op for op in history if op["type"] == "ok" and op.get("broker") == broker]
        cons = [op for op in fixed if op.get("broker") == broker]
        p, f = checker.check_consume(cons, hist, [], t_end, drained)
        problems += ["%s: %s" % (broker, x) for x in p]
        facts[broker] = {k: f[k] for k in ("consumed", "consume_missed", "consume_duplicates", "dirty_reads")}
    return problems, facts


class Live(unittest.TestCase):
    RUN_S = 24
    maxDiff = None

    def test_clients_through_a_broker_restart(self):
        why = missing_live()
        if why:
            self.skipTest(why)
        import harness
        workdir = tempfile.mkdtemp(prefix="chaos-clients-")
        cluster = proxy = None
        clients = []
        try:
            cluster = harness.Cluster(workdir, flush_disk_type="SYNC_FLUSH", shard_count=2)
            cluster.start()
            cluster.create_topic("ChaosTopic", 4)
            port = harness.free_port()
            conf = os.path.join(workdir, "proxy.toml")
            with open(conf, "w") as f:
                f.write('grpcServerPort = %d\nbindAddress = "127.0.0.1"\nnamesrvAddr = "%s"\n'
                        'metricsPromExporterPort = %d\nminInvisibleTimeMillis = 1000\n'
                        % (port, cluster.namesrv_addr, harness.free_port()))
            proxy_bin = os.path.join(os.path.dirname(harness.binaries()[0]), "proxy")
            proxy = harness.Proc("proxy", [proxy_bin, "--config", conf], os.path.join(workdir, "proxy.log"),
                                 env=dict(os.environ, RUST_LOG="info"), cwd=workdir)
            self.assertTrue(harness.wait_port(port, 30), "proxy did not listen")
            cluster.proxy_addr = "127.0.0.1:%d" % port
            t0 = time.monotonic()
            lock = threading.Lock()
            with open(os.path.join(workdir, "history.jsonl"), "w") as hist:
                grpc = sdk_clients.start(cluster, "ChaosTopic", 1, t0, hist, lock, workdir)[0]
                gop = go_clients.GoProducer(0, 1, cluster, "ChaosTopic", t0, hist, lock, workdir)
                goc = go_clients.GoConsumer(0, cluster, "ChaosTopic", t0, hist, lock, workdir)
                clients = [grpc, gop, goc]
                gop.start()
                goc.start()
                time.sleep(self.RUN_S / 2)
                kill_at = time.monotonic() - t0
                cluster.kill_broker()
                time.sleep(1)
                cluster.start_broker()
                restarted_at = time.monotonic() - t0
                time.sleep(self.RUN_S / 2)
                grpc.stop_producers()
                gop.stop()
                time.sleep(1)
                t_end = time.monotonic() - t0
                # Until both groups consumed every acknowledged send (or 40 s).
                until = time.monotonic() + 40
                while time.monotonic() < until:
                    acked = {op["key"] for op in grpc.history + gop.history if op["type"] == "ok"}
                    if all(acked <= {op["key"] for op in list(c.consumes if c is grpc else c.history)}
                           for c in (grpc, goc)):
                        break
                    time.sleep(0.5)
                drain_s = round(time.monotonic() - t0 - t_end, 1)
                grpc.wait_fifo(20)
                grpc.stop()
                goc.stop()
            faults = [{"kind": "kill", "start": kill_at, "end": restarted_at}]
            reads = read_all(cluster, "ChaosTopic")
            grpc.resolve(reads)
            history = sorted(grpc.history + gop.history, key=lambda op: op["t"])
            oks = {p: sum(1 for op in c.history if op["type"] == "ok") for p, c in (("grpc", grpc), ("go", gop))}
            self.assertEqual(grpc.notes["sends_not_found"], 0, grpc.notes)
            report = {"sends_ok": oks, "grpc_notes": grpc.notes, "drain_s": drain_s,
                      "errors": [e for c in clients for e in c.errors]}
            self.assertTrue(all(oks.values()), report)
            after = [op for op in history if op["type"] == "ok" and op["t"] > restarted_at]
            self.assertTrue(after, "no send acknowledged after the restart: %s" % report)
            for name, c in (("grpc", grpc), ("go", goc)):
                cons = c.consume_ops(history) if c is grpc else c.history
                problems, facts = per_broker(cons, history, reads, t_end, True)
                report[name + "_consumer"] = facts
                self.assertEqual(problems, [], report)
            problems, facts = check_fifo(grpc.fifo_sends, grpc.fifo_deliveries, faults, drained=grpc.fifo_drained)
            report["fifo"] = facts
            self.assertEqual(problems, [], report)
            self.assertGreater(facts["delivered"], 0, report)
            # Two first deliveries of one queue's group swapped: check_fifo must say so.
            log = list(grpc.fifo_deliveries)
            firsts = {}
            for i, op in enumerate(log):
                if op["type"] == "deliver":
                    firsts.setdefault(op["key"], i)
            by_group = {}
            for key, i in sorted(firsts.items(), key=lambda kv: kv[1]):
                by_group.setdefault((log[i]["group"], log[i]["broker"], log[i]["queue"]), []).append(i)
            lane = max(by_group.values(), key=len)
            self.assertGreater(len(lane), 2, report)
            a, b = lane[0], lane[1]
            log[a], log[b] = log[b], log[a]
            problems, _ = check_fifo(grpc.fifo_sends, log, faults, drained=grpc.fifo_drained)
            self.assertTrue(any(p.startswith("fifo_order") for p in problems), problems)
            print("\n    live run:", report, file=sys.stderr)
        finally:
            for c in clients:
                if c.proc is not None and c.proc.poll() is None:
                    os.killpg(c.proc.pid, signal.SIGKILL)
            if proxy is not None and proxy.alive():
                proxy.stop(signal.SIGTERM, grace=5)
            if cluster is not None:
                cluster.stop()
            if os.environ.get("KEEP_WORKDIR"):
                print("    workdir kept: %s" % workdir, file=sys.stderr)
            else:
                shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

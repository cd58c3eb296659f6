"""apache/rocketmq-clients' Java gRPC SDK (Maven Central `rocketmq-client-java` 5.2.0, through
tests/apache/) in the chaos history, talking to our proxy: sdk/ChaosGrpc.java runs, in one JVM
(-Xmx128m), a Producer on the chaos topic, a SimpleConsumer of its own group on it, a Producer of FIFO
messages (8 message groups) on a FIFO topic and a SimpleConsumer of an orderly group on that topic. Its
lines become history operations: the producer's as run.py's Producer records them (invoke / ok / fail /
unknown; the proxy answers a send with its queue offset alone, so ok gets its broker and queue from
the final read, `resolve`), the consumer's as consume operations for checker.check_consume (broker,
queue and offset from the receipt handle), and the FIFO ones for `check_fifo` below.

Wiring into run.py (the lines to add; `cluster.proxy_addr` is the proxy's gRPC host:port):

    import sdk_clients                                   # with the other imports
    GRPC_CLIENTS = False                                 # main(): set from a --grpc-clients flag, after
                                                         #   `why = sdk_clients.build()` is None
    # in run_seed, after the Java consumers were started:
    grpc = sdk_clients.start(cluster, TOPIC, seed, t0, hist, lock, workdir) if GRPC_CLIENTS else []
    # where the Java producers are stopped (before the drain):
    for g in grpc: g.stop_producers()
    # drain: pass them with the other consumers (they have `freeze` and `last_consume`):
    drained = drain(cons_ + jcons + grpc) ...
    for g in grpc: g.wait_fifo()                          # the FIFO consumer catches up (<= 30 s)
    for g in grpc: g.stop()
    # the send history: add `grpc` to the producers whose `.history` is merged into `history`
    # after `reads, notes = read_replicas(cluster)`, before the checks: where each gRPC send went
    for g in grpc: g.resolve(reads)
    # consumer checks, like the Java group's:
    for g in grpc:
        problems, facts = checker.check_consume(g.consume_ops(history), history, applied, t_end, drained)
        result["problems"].extend("grpc consumer group: " + p for p in problems)
        problems, ffacts = sdk_clients.check_fifo(g.fifo_sends, g.fifo_deliveries, applied,
                                                  drained=g.fifo_drained)
        result["problems"].extend(problems)
        result["facts"]["grpc"] = {"consumer": facts, "fifo": ffacts, "notes": g.notes, "errors": g.errors}

Both SDKs retry a send on their own (this one up to 3 attempts, the Go client 2 retries), so a timed-out
first attempt can leave a second stored copy of a key at another queue offset than the acknowledged one;
a consumer then gets both, and check_consume's consume_misplaced names the copy. test_clients.py's
per_broker() shows the remedy (a consume at a slot the final read holds with the same key is that copy).

`start()` creates the FIFO topic (`+message.type=FIFO`, UPDATE_AND_CREATE_TOPIC with `attributes`) and
both subscription groups (the FIFO one with consumeMessageOrderly) on every master in the chaos topic's
route, so it runs after cluster.start_all. The proxy should run with `minInvisibleTimeMillis = 1000` or
less for the 3 s invisible time used here (with its default of 10 s pass `invisible_ms=10000`).
"""

import json
import os
import threading
import time

from programs import LineProgram, compile_java, java_argv

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_SET = "rocketmq-client-java-5.2.0"
SOURCES = [os.path.join(HERE, "sdk", "ChaosGrpc.java")]
CLASSES = os.path.join(HERE, "sdk", "build", "classes")
FIFO_TOPIC = "ChaosGrpcFifo"
GROUP = "chaos-grpc-simple"
FIFO_GROUP = "chaos-grpc-fifo"
QUEUES = 4
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
# Slack of the overtake check (check_fifo): the broker counts a message's invisible time from its pop, a
# little before the consumer prints the delivery.
OVERTAKE_SLACK_S = 1.0


def build():
    """None when ChaosGrpc is compiled (once per source change), else why it cannot run."""
    return compile_java(SOURCES, CLIENT_SET, CLASSES)


def masters(cluster, topic, timeout=30.0):
    """The brokerId-0 addresses of `topic`'s route at the first name server that answers."""
    import wire
    end = time.monotonic() + timeout
    while True:
        for addr in cluster.namesrv_addr.split(";"):
            try:
                reply = wire.request(addr, wire.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=2.0)
            except (wire.NotSent, wire.Unknown):
                continue
            if reply.code != wire.SUCCESS:
                continue
            found = []
            for data in reply.json_body().get("brokerDatas") or []:
                addrs = {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()}
                if "0" in addrs:
                    found.append(addrs["0"])
            if found:
                return sorted(found)
        if time.monotonic() > end:
            raise RuntimeError("no master in the route of %s within %.0f s" % (topic, timeout))
        time.sleep(0.3)


def prepare(cluster, topic, timeout=30.0):
    """The FIFO topic and both groups on every master of `topic` (and, where they answer, on the other
    brokers of cluster.broker_addrs, so a replica that takes over has them too)."""
    import wire
    must = masters(cluster, topic, timeout)
    every = getattr(cluster, "broker_addrs", None) or {}
    others = [a for a in (every.values() if isinstance(every, dict) else every) if a not in must]
    fields = {"topic": FIFO_TOPIC, "defaultTopic": "TBW102", "readQueueNums": QUEUES, "writeQueueNums": QUEUES,
              "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false",
              "attributes": "+message.type=FIFO"}
    groups = [{"groupName": GROUP, "consumeMessageOrderly": False},
              {"groupName": FIFO_GROUP, "consumeMessageOrderly": True, "retryMaxTimes": 1000}]
    for addr in must + others:
        end = time.monotonic() + (timeout if addr in must else 2.0)
        while True:
            try:
                replies = [wire.request(addr, wire.UPDATE_AND_CREATE_TOPIC, fields, timeout=5.0)]
                replies += [wire.request(addr, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, json.dumps(g).encode(),
                                         timeout=5.0) for g in groups]
                bad = [r for r in replies if r.code != wire.SUCCESS]
                if not bad:
                    break
                why = "answered %d %r" % (bad[0].code, bad[0].remark)
            except (wire.NotSent, wire.Unknown) as err:
                why = str(err)
            if time.monotonic() > end:
                if addr in must:
                    raise RuntimeError("grpc clients: creating %s / groups at %s: %s" % (FIFO_TOPIC, addr, why))
                break
            time.sleep(0.3)
    # The name servers learn the topic with the brokers' next registration.
    masters(cluster, FIFO_TOPIC, timeout)


class GrpcClients(LineProgram):
    """sdk/ChaosGrpc in one JVM. `history`: the chaos-topic producer's operations (proc `grpc`);
    `consumes`: its SimpleConsumer's `consume` operations (consumer 200); `fifo_sends` and
    `fifo_deliveries` (deliver and ack operations) for check_fifo; `freeze` / `last_consume` for run.py's
    drain()."""

    CONSUMER = 200

    def __init__(self, cluster, topic, seed, t0, out, lock, workdir, invisible_ms=3000, skip_every=40):
        env = dict(os.environ, HOME=workdir,
                   JAVA_OPT_EXT="-Xmx128m -Xss512k -Duser.home=%s" % os.path.join(workdir, "grpc-home"))
        argv = java_argv(CLIENT_SET, CLASSES, ["ChaosGrpc", cluster.proxy_addr, topic, FIFO_TOPIC, "s%d-g" % seed,
                                               GROUP, FIFO_GROUP, str(invisible_ms), str(skip_every)])
        super().__init__("grpc-clients", argv, t0, out, lock, workdir, env)
        self.history = []
        self.consumes = []
        self.fifo_sends = []
        self.fifo_deliveries = []
        self.notes = {"receive_failed": 0, "start_failed": 0, "ack_failed": 0}
        self.freeze = threading.Event()
        self.last_consume = None
        self.fifo_drained = None
        # Failed receives, starts and acks with their times, kept apart from the history (the checkers
        # do not read them) so that a stall can be traced afterwards.
        self.failures = os.path.join(workdir, "grpc-failures.jsonl")

    def handle(self, op):
        kind, role = op.get("type"), op.get("role")
        if kind in ("receive_failed", "start_failed") or (kind == "ack" and not op.get("ok")):
            with open(self.failures, "a") as f:
                f.write(json.dumps(op) + "\n")
        if kind in ("receive_failed", "start_failed"):
            self.notes[kind] += 1
            # The first few distinct reasons, for the seed's report (the SDK does not log them).
            reasons = self.notes.setdefault(kind + "_reasons", {})
            reason = str(op.get("error"))[:160]
            if reason in reasons or len(reasons) < 5:
                reasons[reason] = reasons.get(reason, 0) + 1
            if "invisible duration" in str(op.get("error")) and not self.notes.get("invisible_refused"):
                # Every receive will fail the same way: say so once.
                self.notes["invisible_refused"] = True
                self.errors.append("grpc-clients: the proxy refuses the invisible time (%s): lower its "
                                   "minInvisibleTimeMillis or pass invisible_ms" % op.get("error"))
            return False
        if kind == "ack" and not op.get("ok"):
            self.notes["ack_failed"] += 1
            reasons = self.notes.setdefault("ack_failed_reasons", {})
            reason = str(op.get("error"))[:160]
            if reason in reasons or len(reasons) < 5:
                reasons[reason] = reasons.get(reason, 0) + 1
        if role == "producer" and kind in ("invoke", "ok", "fail", "unknown"):
            for k in ("role", "group", "seq"):
                op.pop(k, None)
            op["proc"] = "grpc"
            op["addr"] = "proxy"
            self.history.append(op)
            return True
        if role == "consumer" and kind == "consume":
            op["consumer"] = self.CONSUMER
            op["addr"] = op.get("broker")
            self.consumes.append(op)
            self.last_consume = time.monotonic()
            return True
        if role == "fifo-producer" and kind in ("invoke", "ok", "fail", "unknown"):
            self.fifo_sends.append(op)
            return True
        if role == "fifo-consumer" and kind in ("deliver", "ack"):
            self.fifo_deliveries.append(op)
            if kind == "deliver":
                self.last_consume = time.monotonic()
            return True
        return False

    def stop_producers(self):
        with open(self.stop_file + ".producers", "w"):
            pass

    def wait_fifo(self, limit_s=30.0):
        """After stop_producers: until every acknowledged FIFO send was delivered (True) or `limit_s`."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            acked = {op["key"] for op in list(self.fifo_sends) if op["type"] == "ok"}
            seen = {op["key"] for op in list(self.fifo_deliveries) if op["type"] == "deliver"}
            if acked <= seen:
                self.fifo_drained = True
                return True
            time.sleep(0.3)
        self.fifo_drained = False
        return False

    def resolve(self, reads):
        """Gives each acknowledged send its broker and queue from the final read, `reads` {brokerName:
        {replica: {(queue, offset): key}}} (run.py's read_replicas): the proxy answers a send with its
        queue offset only, so the copy of the key at that offset, on any replica, says where it went. A
        send found nowhere keeps the broker the SDK asked for and queue -1 (the lost check reports it).
        Returns how many were found nowhere."""
        where = {}
        for broker, replicas in reads.items():
            for table in replicas.values():
                for (queue, offset), key in table.items():
                    where.setdefault((key, offset), (broker, queue))
        unresolved = 0
        for op in self.history:
            if op["type"] != "ok":
                continue
            found = where.get((op["key"], op["offset"]))
            if found is None:
                unresolved += 1
                op["broker"], op["queue"] = op.get("sdk_broker"), -1
            else:
                op["broker"], op["queue"] = found
        self.notes["sends_not_found"] = unresolved
        return unresolved

    def consume_ops(self, history=()):
        """The consumer's operations for checker.check_consume. A redelivery from the pop retry topic
        (`retry`) carries that topic's queue and offset: it is given its first delivery's position when
        this group saw one (the first one's reply can be lost with a broker), else that of the key's
        acknowledged send in `history` (after resolve), else queue and offset -1; either way it is checked
        only against phantoms and misses."""
        acked = {op["key"]: op for op in history if op["type"] == "ok"}
        first = {}
        out = []
        for op in self.consumes:
            op = dict(op)
            if not op.get("retry"):
                first.setdefault(op["key"], (op.get("broker"), op["queue"], op["offset"]))
            else:
                ack = acked.get(op["key"])
                fallback = (ack.get("broker"), ack["queue"], ack["offset"]) if ack else (op.get("broker"), -1, -1)
                op["broker"], op["queue"], op["offset"] = first.get(op["key"], fallback)
            out.append(op)
        return out


def start(cluster, topic, seed, t0, out, lock, workdir, **kw):
    """Creates the FIFO topic and groups, starts the JVM: [GrpcClients]."""
    prepare(cluster, topic)
    g = GrpcClients(cluster, topic, seed, t0, out, lock, workdir, **kw)
    g.start()
    return [g]


def check_fifo(sends, deliveries, faults=(), drained=True, slack_s=OVERTAKE_SLACK_S):
    """Order of the FIFO topic's message groups as the orderly SimpleConsumer saw them; (problems, facts).

    `sends`: invoke / ok / fail / unknown with key, group, seq (ok: offset); `deliveries`:
    `deliver` (key, group, broker, queue, offset, attempt, retry, batch, invisible_ms, skip, t) and `ack`
    (key, ok, t) in the order the consumer printed them. `faults`: [{start, end}] (nemesis.applied).

    What an orderly group promises, and so what is checked (redelivery semantics):
    - Order is promised per queue: a message group stays on one queue only while the proxy's route does
      not change (it hashes the group over the writable queues), and a send whose outcome is unknown may
      be stored late. So pairs are only compared when both sends were acknowledged and stored in the same
      broker and queue; their queue offsets give their order. The proxy's answer names the offset only,
      so where an acknowledged send went is learnt from a delivery of that key at that offset (its
      receipt handle names broker and queue): a send never delivered is in no comparison, only in
      fifo_missed.
    - fifo_order (problem): of two such messages of one group, the later one's first delivery came before
      the earlier one's first delivery. A
      queue is consumed from its offset onwards and only an ack moves that on, so neither a lost ack, an
      expired invisible time, a broker restart nor a failover (the new master holds every acknowledged
      message at the same offset) allows it.
    - fifo_overtake (problem outside faults): a message was delivered while an earlier message of its group
      and queue was still in flight, i.e. delivered in an earlier batch, not acked (or its ack failed), and
      its invisible time (less `slack_s`) not yet over. A fault from its start to its end plus the
      invisible time excuses it (a restarted or new master may not know the lock; a moved clock ends it
      early): counted as fifo_overtake_in_fault.
    - Redeliveries are allowed: the same message again (attempt > 1, after a skipped or failed ack or a
      lost receive), and so is a rewind (messages delivered again at or below an offset already acked in
      their queue, as a restart from an older committed offset gives): at-least-once, counted as the
      fact acked_redelivered, not a problem.
    - fifo_missed: an acknowledged send never delivered; a problem only when `drained`.
    """
    problems = []
    facts = {}
    acked = {}
    outcomes = {"ok": 0, "fail": 0, "unknown": 0}
    for op in sends:
        if op["type"] in outcomes:
            outcomes[op["type"]] += 1
        if op["type"] == "ok" and op.get("offset") is not None:
            acked[op["key"]] = op
    facts["sends"] = outcomes

    first = {}  # key -> index of its first delivery
    placed = {}  # (key, offset) -> (broker, queue) where a delivery found it
    delivered = [op for op in deliveries if op["type"] == "deliver"]
    for i, op in enumerate(delivered):
        first.setdefault(op["key"], i)
        if not op.get("retry") and op.get("queue") is not None:
            placed.setdefault((op["key"], op.get("offset")), (op.get("broker"), op["queue"]))
    facts["delivered"] = len(delivered)
    facts["redeliveries"] = len(delivered) - len(first)
    facts["skipped_acks"] = sum(1 for op in delivered if op.get("skip"))
    facts["retry_topic_deliveries"] = sum(1 for op in delivered if op.get("retry"))

    lanes = {}  # (group, broker, queue) -> acked sends by offset
    queues_of = {}
    for op in acked.values():
        where = placed.get((op["key"], op["offset"]))
        if where is None:
            continue
        lanes.setdefault((op["group"],) + where, []).append(op)
        queues_of.setdefault(op["group"], set()).add(where)
    facts["groups_moved"] = sorted(g for g, qs in queues_of.items() if len(qs) > 1)
    order = 0
    for (group, broker, queue), ops in sorted(lanes.items(), key=lambda kv: str(kv[0])):
        ops.sort(key=lambda op: op["offset"])
        for a, b in zip(ops, ops[1:]):
            fa, fb = first[a["key"]], first[b["key"]]
            if fa < fb:
                continue
            order += 1
            if order <= 10:
                problems.append("fifo_order: group %s on %s queue %d: %s (offset %d) first delivered at %.2f s, "
                                "before the earlier %s (offset %d) at %.2f s" % (
                                    group, broker, queue, b["key"], b["offset"], delivered[fb]["t"], a["key"],
                                    a["offset"], delivered[fa]["t"]))
    if order > 10:
        problems.append("fifo_order: %d more" % (order - 10))
    facts["fifo_order"] = order

    def in_fault(t0_, t1_, inv):
        return any(f["start"] <= t1_ and t0_ <= f.get("end", float("inf")) + inv for f in faults)

    # Overtakes and rewinds, walking the log: per (group, broker, queue) the messages in flight.
    flight = {}  # lane -> {key: (t, offset, batch, invisible_s)}
    highest = {}  # lane -> highest offset acked
    lane_of = {}
    overtakes = excused = rewinds = 0
    for op in deliveries:
        if op["type"] == "ack":
            lane = lane_of.get(op["key"])
            if op.get("ok") and lane is not None:
                done = flight.get(lane, {}).pop(op["key"], None)
                if done is not None:
                    highest[lane] = max(highest.get(lane, -1), done[1])
            continue
        if op.get("retry") or op.get("queue") is None or op.get("offset") is None:
            continue
        lane = (op["group"], op["broker"], op["queue"])
        lane_of[op["key"]] = lane
        held = flight.setdefault(lane, {})
        inv = (op.get("invisible_ms") or 0) / 1000.0
        for key, (t, offset, batch, inv_i) in held.items():
            if key == op["key"] or offset >= op["offset"] or batch == op.get("batch"):
                continue
            if op["t"] < t + inv_i - slack_s:
                if in_fault(t, op["t"], inv_i):
                    excused += 1
                    continue
                overtakes += 1
                if overtakes <= 10:
                    problems.append("fifo_overtake: %s (offset %d) delivered at %.2f s while %s (offset %d), "
                                    "delivered at %.2f s with %.1f s invisible, was not acked" % (
                                        op["key"], op["offset"], op["t"], key, offset, t, inv_i))
        if op["offset"] <= highest.get(lane, -1):
            rewinds += 1
        held[op["key"]] = (op["t"], op["offset"], op.get("batch"), inv)
    if overtakes > 10:
        problems.append("fifo_overtake: %d more" % (overtakes - 10))
    facts["fifo_overtake"] = overtakes
    facts["fifo_overtake_in_fault"] = excused
    facts["acked_redelivered"] = rewinds

    missed = sorted((k for k in acked if k not in first), key=lambda k: acked[k]["t"])
    facts["fifo_missed"] = len(missed)
    if missed and drained:
        problems.append("fifo_missed: %d acknowledged FIFO sends never delivered, first %s" % (
            len(missed), ", ".join(missed[:5])))
    return problems, facts

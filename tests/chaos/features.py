"""The message kinds beyond plain sends in a chaos run: ordered (FIFO) messages, transactions and
timer / delay-level messages, each on its own topic (ChaosFifo, ChaosTx, ChaosTimer) so the plain
checkers are untouched. Producers and consumers here run beside run.py's under the same faults and
keep their own history (features.jsonl in the seed's directory); checker_features.py judges it.
They run on the cluster's home group (the first broker group, cluster.home): their topics are created
on its master and every producer and consumer finds that master through the name servers' route of
ChaosTopic, as the plain clients do; the other groups carry plain messages only.

- FIFO: a producer sends, one at a time, numbered messages for 8 sharding keys, each to the queue
  its key selects (crc32(key) % queues, as a MessageQueueSelector would); after a failed or unknown
  send it goes on with the next number. The orderly consumer is modelled as one member holding
  every queue of the topic (what LOCK_BATCH_MQ would give a lone member): it pulls each queue in
  order from the master the name server names, keeps its position per queue across master
  changes, and moves it only when the broker says PULL_OFFSET_MOVED. No lock handover between
  members is exercised.
- Transactions: a producer sends half messages (sysFlag PREPARED, TRAN_MSG=true, PGROUP) and decides
  before each one whether it commits (70%) or rolls back; most it ends at once with END_TRANSACTION
  (sent as a request, so its acknowledgement is known), a fifth it leaves to the broker's check-back
  (no END, or END with "unknown"). A kept connection to the master carries its heartbeats, so the
  broker's CHECK_TRANSACTION_STATE arrives on it; each check is answered with the decision, by an
  END_TRANSACTION (fromTransactionCheck) to the broker that asked. A committed transaction is one
  whose commit END the broker acknowledged. The brokers are told at the start to check 3 s after
  the half message and every 2 s after (TX_CHECK_CONFIG), so check-backs happen within a run.
- Timers: a producer alternates TIMER_DELIVER_MS (1-6 s ahead on the wall clock) and DELAY levels 1
  and 2 (1 s, 5 s after the store time, so at least that long after the send began). The consumer
  notes the wall time of each record and its store time.
"""

import json
import os
import queue as queue_mod
import random
import threading
import time
import zlib

import wire

FIFO_TOPIC = "ChaosFifo"
TX_TOPIC = "ChaosTx"
TIMER_TOPIC = "ChaosTimer"
TOPICS = {"fifo": FIFO_TOPIC, "tx": TX_TOPIC, "timer": TIMER_TOPIC}
QUEUES = 4
FIFO_KEYS = 8
TX_GROUP = "chaos-tx-producer"
DELAY_LEVEL_S = {1: 1.0, 2: 5.0}
# The brokers' check-back policy for the run (UPDATE_BROKER_CONFIG, kept across restarts in the
# store's overlay): the first check 3 s after the half message, then every 2 s (the defaults, 6 s and
# 60 s, would check each transaction left open once in a run, and a renewed copy, not due for 60 s,
# holds back the scan of every younger half message behind it).
TX_CHECK_CONFIG = "transactionTimeOut=3000\ntransactionCheckInterval=2000\n"
# Pauses between operations of each producer (modest rates: the plain producers are the load).
PACE_S = {"fifo": 0.03, "tx": 0.05, "timer": 0.1}


def fifo_queue(sharding_key):
    return zlib.crc32(sharding_key.encode()) % QUEUES


# The drain's reason for acknowledged timers not consumed yet (waited for, not a failure to drain).
NOT_CONSUMED_YET = "not consumed yet"


class _Recorder(threading.Thread):
    """A thread that writes its operations to the shared features history."""

    def __init__(self, feature, index, cluster, t0, out, lock):
        super().__init__(daemon=True)
        self.feature = feature
        self.index = index
        self.cluster = cluster
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.stop_flag = threading.Event()
        self.history = []
        self.addr = None
        self.hist_lock = threading.Lock()

    def record(self, op):
        op["t"] = round(time.monotonic() - self.t0, 4)
        op["w"] = round(time.time(), 4)
        op["feature"] = self.feature
        with self.hist_lock:
            self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def route(self):
        try:
            self.addr = self.cluster.home_master_addr("ChaosTopic")
        except (wire.NotSent, wire.Unknown, ValueError):
            self.addr = None

    def routed(self):
        """The master's address, asking the name server when none is known (None: wait)."""
        if self.addr is None:
            self.route()
            if self.addr is None:
                self.stop_flag.wait(0.2)
        return self.addr

    def ops(self):
        with self.hist_lock:
            return list(self.history)


class FifoProducer(_Recorder):
    def __init__(self, seed, *args):
        super().__init__("fifo", *args)
        self.seed = seed

    def run(self):
        seqs = {}
        n = 0
        while not self.stop_flag.is_set():
            if self.routed() is None:
                continue
            skey = "s%d-f%d" % (self.seed, n % FIFO_KEYS)
            n += 1
            seq = seqs.get(skey, 0)
            seqs[skey] = seq + 1
            key = "%s-%d" % (skey, seq)
            q = fifo_queue(skey)
            self.record({"type": "invoke", "key": key, "skey": skey, "seq": seq, "queue": q})
            try:
                reply = wire.send_message(self.addr, FIFO_TOPIC, q, key, key.encode(), {"SHARDING_KEY": skey})
            except wire.NotSent as err:
                self.record({"type": "fail", "key": key, "error": str(err)})
                self.route()
                continue
            except wire.Unknown as err:
                self.record({"type": "unknown", "key": key, "error": str(err)})
                self.route()
                continue
            if reply.code == wire.SUCCESS:
                self.record({"type": "ok", "key": key, "queue": int(reply.ext.get("queueId", -1)),
                             "offset": int(reply.ext.get("queueOffset", -1))})
            else:
                self.record({"type": "fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.route()
            self.stop_flag.wait(PACE_S["fifo"])


class TxProducer(_Recorder):
    """Half messages, their END_TRANSACTION, and answers to the broker's checks (`keeper` holds the
    heartbeat connection; `answerer` sends the answers, off the connection's reader thread)."""

    def __init__(self, seed, *args):
        super().__init__("tx", *args)
        self.seed = seed
        self.rng = random.Random(seed ^ 0x7458)
        self.decisions = {}
        self.conn = None
        self.checks = queue_mod.Queue()
        self.client_id = "chaos-tx-%d" % seed
        self.pending_checks = set()   # keys left to the check-back whose half message was acknowledged
        self.keeper = threading.Thread(target=self.keep, daemon=True)
        self.answerer = threading.Thread(target=self.answer, daemon=True)
        self.helpers_stop = threading.Event()

    def start(self):
        super().start()
        self.keeper.start()
        self.answerer.start()

    def on_request(self, code, ext, body):
        if code == wire.CHECK_TRANSACTION_STATE:
            self.checks.put((self.conn.addr if self.conn else None, ext))

    def keep(self):
        """The kept connection to the master the name server names, a heartbeat on it every 2 s."""
        beat = 0.0
        while not self.helpers_stop.is_set():
            try:
                addr = self.cluster.home_master_addr("ChaosTopic")
            except (wire.NotSent, wire.Unknown, ValueError):
                addr = None
            conn = self.conn
            if conn is not None and (conn.closed.is_set() or (addr is not None and conn.addr != addr)):
                conn.close()
                self.conn = conn = None
            if conn is None and addr is not None:
                try:
                    self.conn = conn = wire.Connection(addr, self.on_request)
                    beat = 0.0
                except wire.NotSent:
                    conn = None
            if conn is not None and time.monotonic() - beat >= 2.0:
                try:
                    code = wire.heartbeat(conn, self.client_id, TX_GROUP)
                    if beat == 0.0:
                        self.record({"type": "heartbeat", "addr": conn.addr, "code": code})
                    beat = time.monotonic()
                except (wire.NotSent, wire.Unknown) as err:
                    self.record({"type": "heartbeat_error", "addr": conn.addr, "error": str(err)})
                    conn.close()
                    self.conn = None
            self.helpers_stop.wait(0.5)
        if self.conn is not None:
            self.conn.close()

    def answer(self):
        while not self.helpers_stop.is_set():
            try:
                addr, ext = self.checks.get(timeout=0.2)
            except queue_mod.Empty:
                continue
            key = ext.get("transactionId") or ext.get("msgId") or ""
            decision = self.decisions.get(key)
            outcome = {"commit": wire.TRANSACTION_COMMIT, "rollback": wire.TRANSACTION_ROLLBACK}.get(
                decision, wire.TRANSACTION_UNKNOWN)
            self.record({"type": "check", "key": key, "addr": addr, "decision": decision})
            if addr is None:
                continue
            self.end(addr, key, ext.get("commitLogOffset", "-1"), ext.get("tranStateTableOffset", "-1"),
                     decision, outcome, True)

    def end(self, addr, key, phys, qo, decision, outcome, from_check):
        try:
            reply = wire.end_transaction(addr, TX_GROUP, key, phys, qo, outcome, from_check)
        except (wire.NotSent, wire.Unknown) as err:
            self.record({"type": "end_error", "key": key, "outcome": decision, "from_check": from_check,
                         "error": str(err), "addr": addr})
            return
        self.record({"type": "end", "key": key, "outcome": decision, "from_check": from_check,
                     "code": reply.code, "remark": reply.remark, "addr": addr})
        if reply.code == wire.SUCCESS and outcome != wire.TRANSACTION_UNKNOWN:
            self.pending_checks.discard(key)

    def run(self):
        n = 0
        while not self.stop_flag.is_set():
            if self.routed() is None:
                continue
            key = "s%d-tx-%d" % (self.seed, n)
            n += 1
            decision = "commit" if self.rng.random() < 0.7 else "rollback"
            mode = "explicit" if self.rng.random() < 0.8 else ("unknown" if self.rng.random() < 0.5 else "none")
            self.decisions[key] = decision
            q = n % QUEUES
            self.record({"type": "invoke", "key": key, "decision": decision, "mode": mode, "queue": q})
            props = {"TRAN_MSG": "true", "PGROUP": TX_GROUP}
            addr = self.addr
            try:
                reply = wire.send_message(addr, TX_TOPIC, q, key, key.encode(), props,
                                          sys_flag=wire.TRANSACTION_PREPARED, group=TX_GROUP)
            except wire.NotSent as err:
                self.record({"type": "half_fail", "key": key, "error": str(err)})
                self.route()
                continue
            except wire.Unknown as err:
                self.record({"type": "half_unknown", "key": key, "error": str(err)})
                self.route()
                continue
            if reply.code != wire.SUCCESS:
                self.record({"type": "half_fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.route()
                self.stop_flag.wait(PACE_S["tx"])
                continue
            phys = wire.commit_log_offset(reply.ext.get("msgId"))
            qo = int(reply.ext.get("queueOffset", -1))
            self.record({"type": "half_ok", "key": key, "phys": phys, "queue_offset": qo, "addr": addr})
            if mode == "explicit" and phys is not None:
                outcome = wire.TRANSACTION_COMMIT if decision == "commit" else wire.TRANSACTION_ROLLBACK
                self.end(addr, key, phys, qo, decision, outcome, False)
            else:
                self.pending_checks.add(key)
                if mode == "unknown" and phys is not None:
                    self.end(addr, key, phys, qo, "unknown", wire.TRANSACTION_UNKNOWN, False)
            self.stop_flag.wait(PACE_S["tx"])

    def stop_helpers(self):
        self.helpers_stop.set()
        self.keeper.join(5)
        self.answerer.join(5)


class TimerProducer(_Recorder):
    def __init__(self, seed, *args):
        super().__init__("timer", *args)
        self.seed = seed
        self.rng = random.Random(seed ^ 0x71e3)

    def run(self):
        n = 0
        while not self.stop_flag.is_set():
            if self.routed() is None:
                continue
            key = "s%d-tm-%d" % (self.seed, n)
            n += 1
            q = n % QUEUES
            now = time.time()
            if n % 2:
                due_ms = int((now + self.rng.uniform(1.0, 6.0)) * 1000)
                props = {"TIMER_DELIVER_MS": str(due_ms)}
                op = {"type": "invoke", "key": key, "kind": "timer", "due_w": due_ms / 1000.0, "queue": q}
            else:
                level = 1 + (n // 2) % 2
                props = {"DELAY": str(level)}
                op = {"type": "invoke", "key": key, "kind": "delay", "level": level,
                      "due_w": round(now + DELAY_LEVEL_S[level], 4), "queue": q}
            self.record(op)
            try:
                reply = wire.send_message(self.addr, TIMER_TOPIC, q, key, key.encode(), props)
            except wire.NotSent as err:
                self.record({"type": "fail", "key": key, "error": str(err)})
                self.route()
                continue
            except wire.Unknown as err:
                self.record({"type": "unknown", "key": key, "error": str(err)})
                self.route()
                continue
            if reply.code == wire.SUCCESS:
                self.record({"type": "ok", "key": key, "queue": int(reply.ext.get("queueId", -1))})
            else:
                self.record({"type": "fail", "key": key, "code": reply.code, "remark": reply.remark})
                self.route()
            self.stop_flag.wait(PACE_S["timer"])


class FeatureConsumer(_Recorder):
    """Pulls every queue of one topic from the master, in queue order, positions kept across master
    changes (moved only by PULL_OFFSET_MOVED), offsets committed with each pull."""

    def __init__(self, feature, topic, *args):
        super().__init__(feature, 0, *args)
        self.topic = topic
        self.group = "chaos-%s-consumer" % feature
        self.pos = {q: 0 for q in range(QUEUES)}
        self.last_consume = None
        self.routed_at = 0.0
        self.errors = 0

    def run(self):
        while not self.stop_flag.is_set():
            if self.addr is None or time.monotonic() - self.routed_at >= 1.0:
                self.routed_at = time.monotonic()
                self.route()
                if self.addr is None:
                    self.stop_flag.wait(0.2)
                    continue
            got = 0
            for q in range(QUEUES):
                n = self.pull_once(q)
                if n is None:
                    self.errors += 1
                    self.addr = None
                    self.stop_flag.wait(0.1)
                    break
                got += n
            else:
                if got == 0:
                    # Idle: 10 pulls of 4 queues a second (the lateness measured is that much coarser;
                    # the early check also uses the delivered copy's store time).
                    self.stop_flag.wait(0.1)

    def pull_once(self, q):
        offset = self.pos[q]
        try:
            reply, records = wire.pull_full(self.addr, self.group, self.topic, q, offset, commit_offset=offset)
        except (wire.NotSent, wire.Unknown, ValueError, KeyError):
            return None
        if reply.code == wire.SUCCESS:
            for r in records:
                self.record({"type": "consume", "queue": r["queue"], "offset": r["offset"],
                             "key": r["props"].get("KEYS", ""), "sys_flag": r["sys_flag"],
                             "store_ms": r["store_ms"], "addr": self.addr})
            if records:
                self.last_consume = time.monotonic()
            try:
                self.pos[q] = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            return len(records)
        if reply.code == wire.PULL_OFFSET_MOVED:
            try:
                target = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            self.record({"type": "reset", "queue": q, "from": offset, "to": target, "remark": reply.remark})
            self.pos[q] = target
            return 0
        if reply.code in (wire.PULL_NOT_FOUND, wire.PULL_RETRY_IMMEDIATELY):
            return 0
        return None


def read_topic(addr, topic, queues=QUEUES):
    """Every record of `topic` on `addr` -> ({key: [(queue, offset, sys_flag)]}, notes)."""
    found = {}
    notes = []
    for q in range(queues):
        offset = 0
        for _ in range(10000):
            try:
                reply, records = wire.pull_full(addr, "chaos-check", topic, q, offset, timeout=3.0)
            except (wire.NotSent, wire.Unknown, ValueError) as err:
                notes.append("read of %s queue %d failed: %s" % (topic, q, err))
                break
            if reply.code == wire.PULL_OFFSET_MOVED and "nextBeginOffset" in reply.ext and offset == 0:
                offset = int(reply.ext["nextBeginOffset"])
                continue
            if reply.code != wire.SUCCESS or not records:
                break
            for r in records:
                found.setdefault(r["props"].get("KEYS", ""), []).append((r["queue"], r["offset"], r["sys_flag"]))
            offset = int(reply.ext["nextBeginOffset"])
    return found, notes


class Features:
    """What run.py drives: start (after the cluster is up), stop_producers, drain, stop, check."""

    def __init__(self, seed, cluster, workdir, t0, kinds=("fifo", "tx", "timer")):
        self.seed = seed
        self.cluster = cluster
        self.t0 = t0
        self.kinds = list(kinds)
        self.lock = threading.Lock()
        self.out = open(os.path.join(workdir, "features.jsonl"), "w")
        args = (0, cluster, t0, self.out, self.lock)
        self.producers = {}
        if "fifo" in self.kinds:
            self.producers["fifo"] = FifoProducer(seed, *args)
        if "tx" in self.kinds:
            self.producers["tx"] = TxProducer(seed, *args)
        if "timer" in self.kinds:
            self.producers["timer"] = TimerProducer(seed, *args)
        self.consumers = {k: FeatureConsumer(k, TOPICS[k], cluster, t0, self.out, self.lock) for k in self.kinds}
        self.drained = {k: False for k in self.kinds}
        self.drain_notes = {}
        self.drain_s = None
        self.t_stop = None

    def start(self):
        """Creates the topics on the master (as start_all does ChaosTopic), then starts every thread."""
        end = time.monotonic() + 30
        pending = [TOPICS[k] for k in self.kinds]
        while pending:
            addr = self.cluster.home_master_addr("ChaosTopic")
            try:
                if addr is not None:
                    wire.create_topic(addr, pending[0], QUEUES)
                    pending.pop(0)
                    continue
            except (wire.NotSent, wire.Unknown):
                pass
            if time.monotonic() > end:
                raise RuntimeError("features: topic %s not created within 30 s" % pending[0])
            time.sleep(0.3)
        if "tx" in self.kinds:
            for name, addr in sorted(self.cluster.broker_addrs.items()):
                try:
                    reply = wire.request(addr, wire.UPDATE_BROKER_CONFIG, body=TX_CHECK_CONFIG.encode(), timeout=5.0)
                except (wire.NotSent, wire.Unknown) as err:
                    raise RuntimeError("features: UPDATE_BROKER_CONFIG at %s: %s" % (name, err))
                if reply.code != wire.SUCCESS:
                    raise RuntimeError("features: UPDATE_BROKER_CONFIG at %s answered %d %r"
                                       % (name, reply.code, reply.remark))
        for t in list(self.producers.values()) + list(self.consumers.values()):
            t.start()

    def stop_producers(self):
        self.t_stop = time.monotonic() - self.t0
        for p in self.producers.values():
            p.stop_flag.set()
        for p in self.producers.values():
            p.join(10)

    def _waiting_for(self, since):
        """What the drain still waits for, per feature (empty lists: nothing)."""
        why = {k: [] for k in self.kinds}
        now = time.monotonic()
        for kind, c in self.consumers.items():
            if c.last_consume and now - c.last_consume < 2.0:
                why[kind].append("its consumer still consuming")
        timer = self.producers.get("timer")
        if timer is not None:
            acked = {op["key"] for op in timer.ops() if op["type"] == "ok"}
            due = [op["due_w"] for op in timer.ops() if op["type"] == "invoke" and op["key"] in acked]
            if due and time.time() < max(due) + 1.5:
                why["timer"].append("timers due until %.1f s from now" % (max(due) - time.time()))
            # A timer delivered late (a loaded machine, a master restarted at the heal) is waited
            # for too, within the limit; at the limit this reason alone does not make the drain
            # fail (drain()), so a timer never delivered is still judged lost.
            consumer = self.consumers.get("timer")
            got = {op["key"] for op in consumer.ops() if op["type"] == "consume"} if consumer is not None else set()
            late = acked - got
            if late:
                why["timer"].append("%d acknowledged timers %s" % (len(late), NOT_CONSUMED_YET))
        tx = self.producers.get("tx")
        # A check-back comes 3 s after the half message (TX_CHECK_CONFIG), then every 2 s: wait up
        # to 7 s for the last ones.
        if tx is not None and tx.pending_checks and now - since < 7.0:
            why["tx"].append("%d transactions waiting for their check-back" % len(tx.pending_checks))
        return why

    def drain(self, limit_s=20.0):
        """After stop_producers: until every acknowledged timer is due (plus 1.5 s) and consumed, the transactions
        left to the check-back got their answer acknowledged (at most 7 s) and the consumers were
        quiet 2 s. Sets `drained` per feature; True when all of them drained within `limit_s`."""
        since = time.monotonic()
        end = since + limit_s
        why = self._waiting_for(since)
        while time.monotonic() < end and any(why.values()):
            time.sleep(0.2)
            why = self._waiting_for(since)
        self.drain_s = round(time.monotonic() - since, 1)
        self.drained = {k: not v or (k == "tx" and all("check-back" in w for w in v))
                        or all(NOT_CONSUMED_YET in w for w in v) for k, v in why.items()}
        self.drain_notes = {k: "; ".join(v) for k, v in why.items() if v}
        return all(self.drained.values())

    def stop(self):
        """Stops every thread (again: a no-op)."""
        if self.out.closed:
            return
        for p in self.producers.values():
            p.stop_flag.set()
        tx = self.producers.get("tx")
        if tx is not None:
            tx.stop_helpers()
        for c in self.consumers.values():
            c.stop_flag.set()
        for c in self.consumers.values():
            c.join(10)
        self.out.close()

    def check(self, faults, master_addr, clock_kinds=()):
        """The features' checkers over this run -> (problems, facts)."""
        import checker_features
        problems = []
        facts = {"drained": self.drained, "drain_notes": self.drain_notes, "drain_s": self.drain_s}
        for kind in self.kinds:
            ops = sorted(self.producers[kind].ops(), key=lambda op: op["t"])
            consumes = self.consumers[kind].ops()
            read_w = time.time()
            final, notes = read_topic(master_addr, TOPICS[kind]) if master_addr else ({}, ["no master"])
            if kind == "fifo":
                p, f = checker_features.check_fifo(ops, consumes, final, self.drained["fifo"])
            elif kind == "tx":
                p, f = checker_features.check_tx(ops, consumes, final, self.drained["tx"])
            else:
                p, f = checker_features.check_timers(ops, consumes, final, self.drained["timer"], faults,
                                                     clock_kinds, now_w=read_w)
            f["read_notes"] = notes
            f["consumer_errors"] = self.consumers[kind].errors
            problems.extend(p)
            facts[kind] = f
        return problems, facts


def summary(facts):
    """Lines for run.py's per-seed print."""
    lines = []
    fi = facts.get("fifo")
    if fi:
        lines.append("fifo: sends %s; consumed %d (duplicates %d); out of order %d, acked skipped %d, missed %d, "
                     "unacked consumed late %d" % (fi["sends"], fi["consumed"], fi["duplicates"], fi["out_of_order"],
                                                   fi["skipped"], fi["missed"], fi["unacked_late"]))
    tx = facts.get("tx")
    if tx:
        lines.append("tx: %d begun (commit %d, rollback %d; left to check-back %d), half ok %d; checks answered %d; "
                     "committed (acked) %d, delivered %d (duplicates %d); rolled back delivered %d, committed lost %d,"
                     " commit decided but unresolved %d" % (
                         tx["begun"], tx["decided_commit"], tx["decided_rollback"], tx["left_to_check"],
                         tx["half_ok"], tx["checks"], tx["committed"], tx["delivered"], tx["duplicates"],
                         tx["rollback_delivered"], tx["commit_lost"], tx["unresolved"]))
    tm = facts.get("timer")
    if tm:
        lines.append("timers: sends %s (timer %d, delay level %d acked); delivered %d (duplicates %d); early %d "
                     "(under a clock fault %d), lost %d; lateness p50 %.2f s, max %.2f s, over 5 s %d" % (
                         tm["sends"], tm["acked_timer"], tm["acked_delay"], tm["delivered"], tm["duplicates"],
                         tm["early"], tm["early_clock_fault"], tm["lost"], tm["late_p50_s"], tm["late_max_s"],
                         tm["late_over_5s"]))
    if facts:
        lines.append("features: drain %s s after the plain consumers'" % facts.get("drain_s"))
    for kind, note in sorted((facts.get("drain_notes") or {}).items()):
        lines.append("%s: drain incomplete (%s)" % (kind, note))
    return lines

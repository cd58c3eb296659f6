"""The chaos consumers: one consumer group whose members pull the topic's queues from the master the
name server names (as the producers find it), commit their offsets with each pull (sysFlag
COMMIT_OFFSET) and hand queues over every `rebalance_s` seconds (the owner that loses a queue commits
it with UPDATE_CONSUMER_OFFSET, the one that gains it reads it back with QUERY_CONSUMER_OFFSET).

Each member asks the name server for the master again every `route_s` seconds and after any failed
pull (a deposed master that became a slave still answers pulls with slaveReadEnable, so a member
would otherwise stay on it), keeps its position per queue across master changes, as RocketMQ's
clients do, and only moves it when the broker says so (PULL_OFFSET_MOVED) or at a rebalance. Every record
consumed, every position reset and every committed offset goes to the history:

    {"type": "consume", "consumer": i, "queue": q, "offset": o, "key": k, "addr": a, "t": s}
    {"type": "reset", "consumer": i, "queue": q, "from": p or None, "to": o, "reason": "rebalance" | "offset_moved"}
    {"type": "commit", "consumer": i, "queue": q, "offset": o}     (sent; the broker may or may not keep it)
"""

import json
import threading
import time

import cluster as cl
import wire

GROUP = "chaos-consumer"


class Consumer(threading.Thread):
    def __init__(self, index, count, cluster, topic, queues, t0, out, lock, rebalance_s=12.0, route_s=1.0):
        super().__init__(daemon=True)
        self.index = index
        self.count = count
        self.cluster = cluster
        self.topic = topic
        self.queues = queues
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.rebalance_s = rebalance_s
        self.route_s = route_s
        self.routed_at = 0.0
        self.stop_flag = threading.Event()
        self.freeze = threading.Event()   # set: keep the current assignment (the drain at the end)
        self.history = []
        self.addr = None
        self.pos = {}            # queue -> next offset to pull (owned queues only)
        self.committed = {}      # queue -> the last offset this member sent as committed
        self.last = {}           # queue -> the last offset this member consumed
        self.epoch = 0
        self.errors = 0
        self.last_consume = None

    def record(self, op):
        op["t"] = round(time.monotonic() - self.t0, 4)
        op["consumer"] = self.index
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def route(self):
        self.routed_at = time.monotonic()
        try:
            self.addr = cl.master_of(self.cluster.namesrv_addrs, self.topic, self.cluster.home)
        except (wire.NotSent, wire.Unknown, ValueError):
            self.addr = None

    def owned(self):
        if not self.freeze.is_set():
            self.epoch = int((time.monotonic() - self.t0) / self.rebalance_s) if self.rebalance_s else 0
        return {q for q in range(self.queues) if (q + self.epoch) % self.count == self.index}

    def commit(self, queue, offset, explicit):
        if self.committed.get(queue) == offset and not explicit:
            return
        self.committed[queue] = offset
        self.record({"type": "commit", "queue": queue, "offset": offset})
        if explicit:
            try:
                wire.update_offset(self.addr, GROUP, self.topic, queue, offset, timeout=2.0)
            except (wire.NotSent, wire.Unknown):
                pass

    def rebalance(self, owned):
        """Hand over the queues no longer owned, take the new ones at their committed offsets.
        False when the master did not answer (route again)."""
        for queue in sorted(set(self.pos) - owned):
            self.commit(queue, self.pos.pop(queue), explicit=True)
        for queue in sorted(owned - set(self.pos)):
            try:
                offset = wire.query_offset(self.addr, GROUP, self.topic, queue, timeout=2.0)
            except (wire.NotSent, wire.Unknown):
                return False
            offset = 0 if offset is None else offset
            self.record({"type": "reset", "queue": queue, "from": self.last.get(queue), "to": offset,
                         "reason": "rebalance"})
            self.pos[queue] = offset
        return True

    def pull_once(self, queue):
        """One pull of `queue`: the number of records consumed, None when the master did not answer."""
        offset = self.pos[queue]
        self.commit(queue, offset, explicit=False)
        try:
            reply, records = wire.pull(self.addr, GROUP, self.topic, queue, offset, commit_offset=offset)
        except (wire.NotSent, wire.Unknown, ValueError, KeyError):
            return None
        if reply.code == wire.SUCCESS:
            for queue_id, queue_offset, _, props in records:
                self.record({"type": "consume", "queue": queue_id, "offset": queue_offset,
                             "key": props.get("KEYS", ""), "addr": self.addr})
                self.last[queue] = queue_offset
            if records:
                self.last_consume = time.monotonic()
            try:
                self.pos[queue] = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            return len(records)
        if reply.code == wire.PULL_OFFSET_MOVED:
            try:
                target = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            self.record({"type": "reset", "queue": queue, "from": offset, "to": target, "reason": "offset_moved",
                         "remark": reply.remark})
            self.pos[queue] = target
            return 0
        if reply.code in (wire.PULL_NOT_FOUND, wire.PULL_RETRY_IMMEDIATELY):
            return 0
        return None  # a slave refusing reads, a topic not there yet: look for the master again

    def run(self):
        while not self.stop_flag.is_set():
            if self.addr is None or time.monotonic() - self.routed_at >= self.route_s:
                self.route()
                if self.addr is None:
                    self.stop_flag.wait(0.2)
                    continue
            if not self.rebalance(self.owned()):
                self.errors += 1
                self.route()
                self.stop_flag.wait(0.1)
                continue
            got = 0
            for queue in sorted(self.pos):
                n = self.pull_once(queue)
                if n is None:
                    self.errors += 1
                    self.route()
                    self.stop_flag.wait(0.1)
                    break
                got += n
            else:
                if got == 0:
                    self.stop_flag.wait(0.05)

"""The chaos consumers: one consumer group whose members pull the topic's queues, (brokerName,
queueId) over every broker group, each from its group's master as the name servers route it (as the
producers find it; one loop per group in each member, so a group without a master holds back only
its own queues), commit their offsets with each pull (sysFlag
COMMIT_OFFSET) and hand queues over every `rebalance_s` seconds (the owner that loses a queue commits
it with UPDATE_CONSUMER_OFFSET, the one that gains it reads it back with QUERY_CONSUMER_OFFSET).

Each member asks the name servers (the first that answers) for the masters again every `route_s` seconds and after any failed
pull (a deposed master that became a slave still answers pulls with slaveReadEnable, so a member
would otherwise stay on it), keeps its position per queue across master changes, as RocketMQ's
clients do, and only moves it when the broker says so (PULL_OFFSET_MOVED) or at a rebalance. Every record
consumed, every position reset and every committed offset goes to the history:

    {"type": "consume", "consumer": i, "broker": g, "queue": q, "offset": o, "key": k, "addr": a, "t": s}
    {"type": "reset", "consumer": i, "broker": g, "queue": q, "from": p or None, "to": o,
     "reason": "rebalance" | "offset_moved"}
    {"type": "commit", "consumer": i, "broker": g, "queue": q, "offset": o}  (sent; the broker may or may not keep it)
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
        # Every message queue of the topic, (brokerName, queueId), in the order the group allocates.
        self.mqs = [(g, q) for g in cluster.group_names() for q in range(queues)]
        self.t0 = t0
        self.out = out
        self.lock = lock
        self.rebalance_s = rebalance_s
        self.route_s = route_s
        self.stop_flag = threading.Event()
        self.freeze = threading.Event()   # set: keep the current assignment (the drain at the end)
        self.history = []
        self.addrs = {}          # group -> its master's address as last routed (None: none known)
        self.pos = {}            # mq -> next offset to pull (owned queues only)
        self.committed = {}      # mq -> the last offset this member sent as committed
        self.last = {}           # mq -> the last offset this member consumed
        self.epoch = 0
        self.errors = 0
        self.last_consume = None

    def record(self, op):
        op["t"] = round(time.monotonic() - self.t0, 4)
        op["consumer"] = self.index
        self.history.append(op)
        with self.lock:
            self.out.write(json.dumps(op) + "\n")

    def route(self, group):
        """The group's master from the name servers; when none answers the cached one stays (as
        RocketMQ's clients keep their route), a route without the group's master takes it away."""
        route = cl.topic_route(self.cluster.namesrv_addrs, self.topic, timeout=1.0)
        if route is not None:
            self.addrs[group] = route.get(group)
        return self.addrs.get(group)

    def owned(self, group):
        if not self.freeze.is_set():
            self.epoch = int((time.monotonic() - self.t0) / self.rebalance_s) if self.rebalance_s else 0
        return {mq for i, mq in enumerate(self.mqs) if (i + self.epoch) % self.count == self.index and mq[0] == group}

    def commit(self, addr, mq, offset, explicit):
        if self.committed.get(mq) == offset and not explicit:
            return
        self.committed[mq] = offset
        self.record({"type": "commit", "broker": mq[0], "queue": mq[1], "offset": offset})
        if explicit and addr is not None:
            try:
                wire.update_offset(addr, GROUP, self.topic, mq[1], offset, timeout=2.0)
            except (wire.NotSent, wire.Unknown):
                pass

    def rebalance(self, addr, group, owned):
        """Hand over the group's queues no longer owned, take the new ones at their committed
        offsets. False when the master did not answer (route again)."""
        for mq in sorted(mq for mq in self.pos if mq[0] == group and mq not in owned):
            self.commit(addr, mq, self.pos.pop(mq), explicit=True)
        for mq in sorted(owned - set(self.pos)):
            try:
                offset = wire.query_offset(addr, GROUP, self.topic, mq[1], timeout=2.0)
            except (wire.NotSent, wire.Unknown):
                return False
            offset = 0 if offset is None else offset
            self.record({"type": "reset", "broker": group, "queue": mq[1], "from": self.last.get(mq), "to": offset,
                         "reason": "rebalance"})
            self.pos[mq] = offset
        return True

    def pull_once(self, addr, mq):
        """One pull of `mq`: the number of records consumed, None when the master did not answer."""
        group, queue = mq
        offset = self.pos[mq]
        self.commit(addr, mq, offset, explicit=False)
        try:
            reply, records = wire.pull(addr, GROUP, self.topic, queue, offset, commit_offset=offset)
        except (wire.NotSent, wire.Unknown, ValueError, KeyError):
            return None
        if reply.code == wire.SUCCESS:
            for queue_id, queue_offset, _, props in records:
                self.record({"type": "consume", "broker": group, "queue": queue_id, "offset": queue_offset,
                             "key": props.get("KEYS", ""), "addr": addr})
                self.last[mq] = queue_offset
            if records:
                self.last_consume = time.monotonic()
            try:
                self.pos[mq] = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            return len(records)
        if reply.code == wire.PULL_OFFSET_MOVED:
            try:
                target = int(reply.ext["nextBeginOffset"])
            except (KeyError, ValueError):
                return None
            self.record({"type": "reset", "broker": group, "queue": queue, "from": offset, "to": target,
                         "reason": "offset_moved", "remark": reply.remark})
            self.pos[mq] = target
            return 0
        if reply.code in (wire.PULL_NOT_FOUND, wire.PULL_RETRY_IMMEDIATELY):
            return 0
        return None  # a slave refusing reads, a topic not there yet: look for the master again

    def run(self):
        loops = [threading.Thread(target=self.loop, args=(g,), daemon=True) for g in self.cluster.group_names()]
        for t in loops:
            t.start()
        for t in loops:
            t.join()

    def loop(self, group):
        """This member's queues of one group (the state dicts are keyed by mq: no two loops share a key)."""
        addr = None
        routed_at = 0.0
        while not self.stop_flag.is_set():
            if addr is None or time.monotonic() - routed_at >= self.route_s:
                routed_at = time.monotonic()
                addr = self.route(group)
                if addr is None:
                    self.stop_flag.wait(0.2)
                    continue
            if not self.rebalance(addr, group, self.owned(group)):
                self.errors += 1
                addr = self.route(group)
                routed_at = time.monotonic()
                self.stop_flag.wait(0.1)
                continue
            got = 0
            for mq in sorted(mq for mq in self.pos if mq[0] == group):
                n = self.pull_once(addr, mq)
                if n is None:
                    self.errors += 1
                    addr = self.route(group)
                    routed_at = time.monotonic()
                    self.stop_flag.wait(0.1)
                    break
                got += n
            else:
                if got == 0:
                    self.stop_flag.wait(0.05)

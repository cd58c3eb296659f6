"""Moving a live Apache RocketMQ cluster to ours by expand-and-drain (docs/migration.md), with Apache's own
name server, broker, mqadmin and Java client, while producers and push consumers keep running:

a. Apache's name server (A) and broker `broker-a` (Maven Central's newest 4.x servers, 4.9.7; or 5.5.0),
   a topic on it; Apache's Java push consumer (group G, the default CONSUME_FROM_LAST_OFFSET) and
   producer (numbered messages with keys at a steady rate) with `namesrvAddr = A`.
b. Our broker `broker-b` (two shard-brokers, `broker-b-0` and `broker-b-1`, shardRouting = direct) joins
   the cluster with `namesrvAddr = A;B` (B: our name server, started in d); Apache's mqadmin creates the
   topic (same queue count) and the group on it. Sends spread over both brokers.
c. Drain: Apache's `mqadmin wipeWritePerm -b broker-a`; once the producer refreshed its route every
   send lands on ours; the consumer finishes broker-a's backlog (its committed offsets reach the
   queues' ends); a message sent before the move is found by key through Apache's mqadmin; then
   Apache's broker stops and leaves the cluster.
d. Name server swap: our name server starts on B and our broker registers with it too; the clients are
   restarted one at a time with `namesrvAddr = A;B` (a second consumer of G and a second producer
   first, then the first ones stop cleanly); Apache's name server stops; sends and consumption
   continue. To prove the clients now read routes from B, Apache's mqadmin wipes the write perm of
   `broker-b-1` on B: the producer leaves it.
e. Checks: no send fails; every acknowledged message is received with its key; no send lands on a
   drained broker after the producer's route refresh; the group is not reset (the new consumer gets
   nothing the old one consumed long before) and duplicates are reported and bounded; every message
   acknowledged by broker-a was consumed before it left.

The clients poll the name server every POLL_MS (pollNameServerInterval, 30 s by default; 3 s here so
the case stays short). A client given a name server that is not running yet is not what the runbook
does: the 5.5.0 push consumer's start() failed on it, and the 5.5.0 producer's first send."""

import collections
import os
import subprocess
import time

import harness
import remoting
from caselib import case, check

APACHE = os.path.join(harness.REPO, "tests", "apache")
TOPIC, GROUP, QUEUES = "MigrationTopic", "migration_group", 4
PACE_MS = 20
POLL_MS = 3000
# A send may still be choosing from the old route this long after a change reached the name server.
ROUTE_SLACK_MS = POLL_MS + 2500
QUERY_CONSUMER_OFFSET = 14


def _now_ms():
    return int(time.time() * 1000)


class OurSide(harness.Cluster):
    """Our name server (started late, on B) and broker `broker-b`, which registers with A and B."""

    def __init__(self, workdir, apache_namesrv):
        super().__init__(workdir, shard_count=2, shard_routing="direct")
        self.apache_namesrv = apache_namesrv
        self.broker_name = "broker-b"
        self.broker_names = harness.shard_broker_names(self.broker_name, self.shard_count, self.shard_routing)

    def _broker_config(self):
        path = super()._broker_config()
        with open(path) as f:
            text = f.read()
        ours = 'namesrvAddr = "%s"' % self.namesrv_addr
        check(ours in text, "broker config has no %s" % ours)
        text = text.replace(ours, 'namesrvAddr = "%s;%s"' % (self.apache_namesrv, self.namesrv_addr))
        # It reaches our name server within 3 s of its start (the default is 30 s; ours takes 1 s and up,
        # Apache's brokers 10 s and up).
        text += "registerNameServerPeriod = 3000\n"
        with open(path, "w") as f:
            f.write(text)
        return path

    def wait_registered(self, timeout):
        self.wait_registered_with(self.apache_namesrv, timeout)

    def wait_registered_with(self, namesrv_addr, timeout):
        harness.wait_brokers_registered(namesrv_addr, self.broker, dict(zip(self.broker_names, self.broker_addrs)),
                                        "0", timeout)


class Apache:
    """Apache's servers of one set, started with tests/apache/start.sh and always stopped with stop.sh."""

    def __init__(self, workdir, servers_set, admin_set):
        self.workdir = workdir
        self.servers_set = servers_set
        self.admin_set = admin_set
        self.dirs = []
        self.namesrv_port = harness.free_port()
        self.namesrv_addr = "127.0.0.1:%d" % self.namesrv_port
        self.broker_port = harness.free_port(below=2, above=1)
        self.broker_addr = "127.0.0.1:%d" % self.broker_port

    def _start(self, role, config_text, env):
        d = os.path.join(self.workdir, "apache-" + role)
        os.makedirs(d, exist_ok=True)
        config = os.path.join(d, role + ".properties")
        with open(config, "w") as f:
            f.write(config_text)
        self.dirs.append(d)
        done = subprocess.run([os.path.join(APACHE, "start.sh"), self.servers_set, role, config, d],
                              env=dict(os.environ, START_TIMEOUT="100", **env), capture_output=True, text=True,
                              timeout=120)
        check(done.returncode == 0, "Apache %s (%s) did not start: %s" % (role, self.servers_set,
                                                                         (done.stdout + done.stderr)[-2000:]))
        return d

    def start_namesrv(self):
        self.namesrv_dir = self._start("namesrv", "listenPort=%d\n" % self.namesrv_port, {"RMQ_SERVER_HEAP": "256m"})

    def start_broker(self):
        store = os.path.join(self.workdir, "apache-broker", "store")
        text = "\n".join([
            "brokerClusterName=DefaultCluster",
            "brokerName=broker-a",
            "brokerId=0",
            "brokerRole=ASYNC_MASTER",
            "flushDiskType=ASYNC_FLUSH",
            "brokerIP1=127.0.0.1",
            "listenPort=%d" % self.broker_port,
            "namesrvAddr=%s" % self.namesrv_addr,
            "storePathRootDir=%s" % store,
            "storePathCommitLog=%s" % os.path.join(store, "commitlog"),
            "mappedFileSizeCommitLog=%d" % (64 * 1024 * 1024),
            "autoCreateTopicEnable=true",
            "",
        ])
        self.broker_dir = self._start("broker", text, {"RMQ_BROKER_HEAP": "384m", "RMQ_BROKER_DIRECT": "256m",
                                                       "RMQ_PRETOUCH": "0"})
        end = time.monotonic() + 40
        while remoting.cluster_brokers(self.namesrv_addr).get("broker-a", {}).get("0") != self.broker_addr:
            check(time.monotonic() < end, "Apache's broker-a never registered with its name server")
            time.sleep(0.2)

    def stop(self, d):
        subprocess.run([os.path.join(APACHE, "stop.sh"), d], capture_output=True, timeout=60)

    def stop_all(self):
        if self.dirs:
            subprocess.run([os.path.join(APACHE, "stop.sh")] + self.dirs, capture_output=True, timeout=120)

    def mqadmin(self, args, timeout=60):
        """Apache's mqadmin (the admin set's); (exit code, output)."""
        done = subprocess.run([os.path.join(APACHE, "mqadmin.sh"), self.admin_set] + args,
                              capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout + done.stderr


class Client:
    """A spawned MigrationClient whose JSON lines are read while it runs."""

    def __init__(self, ctx, lang, name, args):
        self.ctx = ctx
        self.stop_file = os.path.join(ctx.workdir, name + ".stop")
        self.proc = ctx.clients.spawn(lang, name, ["MigrationClient"] + args + [self.stop_file])

    def records(self, kind):
        return [r for r in harness.read_records(self.proc.base + ".jsonl") if r.get("kind") == kind]

    def alive_or_fail(self):
        check(self.proc.alive(), "%s exited early: %s" % (self.proc.name, harness.tail(self.proc.base + ".stderr", 20)))

    def stop(self, timeout):
        with open(self.stop_file, "w"):
            pass
        return self.ctx.clients.finish(self.proc, timeout)


def wait_for(what, predicate, timeout, clients=()):
    end = time.monotonic() + timeout
    while True:
        for c in clients:
            c.alive_or_fail()
        value = predicate()
        if value:
            return value
        check(time.monotonic() < end, "%s: not within %ss" % (what, timeout))
        time.sleep(0.2)


def acked(producer, since_ms=0, brokers=None):
    out = [r for r in producer.records("sent") if r["status"] == "SEND_OK" and r["t"] >= since_ms]
    return [r for r in out if brokers is None or r["broker"] in brokers]


def consumed_to_end(broker_addr):
    """{queue: (committed, max)} of GROUP on one broker, and whether every queue is consumed to its end."""
    state = {}
    for q in range(QUEUES):
        mx = remoting.request(broker_addr, remoting.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": q})
        co = remoting.request(broker_addr, QUERY_CONSUMER_OFFSET,
                              {"consumerGroup": GROUP, "topic": TOPIC, "queueId": q})
        state[q] = (int(co.ext_fields.get("offset", -1)) if co.code == 0 else None,
                    int(mx.ext_fields.get("offset", -1)))
    return state, all(c == m for c, m in state.values())


def start_clients(ctx, lang, namesrvs, n, prefix):
    """A consumer of GROUP and, once the consumer has queues, a producer of `prefix` messages."""
    consumer = Client(ctx, lang, "consumer-%d" % n, ["consume", namesrvs, TOPIC, GROUP, str(POLL_MS)])
    # A fresh group from CONSUME_FROM_LAST_OFFSET starts where a queue ends when it gets the queue:
    # produce once it has them (Apache's 5.5.0 broker and client skipped a message sent just before).
    wait_for("consumer-%d's first queues" % n, lambda: consumer.records("started"), 60, [consumer])
    producer = Client(ctx, lang, "producer-%d" % n, ["produce", namesrvs, TOPIC, prefix, str(PACE_MS), str(POLL_MS)])
    return consumer, producer


def run_migration(ctx, servers_set, admin_set, lang):
    apache = Apache(ctx.workdir, servers_set, admin_set)
    ours = OurSide(os.path.join(ctx.workdir, "ours"), apache.namesrv_addr)
    os.makedirs(ours.workdir, exist_ok=True)
    ctx.cluster = ours
    ctx.clients = harness.Clients(ctx.workdir, ours)
    both = "%s;%s" % (apache.namesrv_addr, ours.namesrv_addr)
    started = time.monotonic()
    phase = {}
    try:
        # a. Apache's cluster with a live producer and consumer (they know Apache's name server only).
        apache.start_namesrv()
        apache.start_broker()
        remoting.create_topic(apache.broker_addr, TOPIC, QUEUES)
        wait_for("route of %s on Apache's name server" % TOPIC,
                 lambda: (remoting.topic_route(apache.namesrv_addr, TOPIC) or {}).get("queueDatas"), 30)
        phase["apache up"] = time.monotonic() - started
        consumer1, producer1 = start_clients(ctx, lang, apache.namesrv_addr, 1, "mig")
        clients = (consumer1, producer1)
        wait_for("40 sends acknowledged by broker-a", lambda: len(acked(producer1)) >= 40, 60, clients)
        wait_for("the consumer receiving", lambda: len(consumer1.records("recv")) >= 20, 60, clients)

        # b. Our broker joins the cluster; the topic and the group are created on it with Apache's mqadmin.
        ours.start_broker(timeout=60)
        t_join = _now_ms()
        code, out = apache.mqadmin(["updateTopic", "-n", apache.namesrv_addr, "-b", ours.broker_addr, "-t", TOPIC,
                                    "-r", str(QUEUES), "-w", str(QUEUES)])
        check(code == 0 and "success" in out, "Apache's mqadmin updateTopic on our broker: %s" % out)
        code, out = apache.mqadmin(["updateSubGroup", "-n", apache.namesrv_addr, "-b", ours.broker_addr,
                                    "-g", GROUP])
        check(code == 0 and "success" in out, "Apache's mqadmin updateSubGroup on our broker: %s" % out)
        wait_for("sends spread over broker-a and ours",
                 lambda: len(acked(producer1, t_join, ours.broker_names)) >= 30
                 and len(acked(producer1, t_join, ["broker-a"])) >= 30, 60, clients)
        phase["both brokers"] = time.monotonic() - started

        # c. Drain broker-a; its backlog is consumed; it leaves.
        code, out = apache.mqadmin(["wipeWritePerm", "-b", "broker-a", "-n", apache.namesrv_addr])
        check(code == 0 and "OK" in out, "Apache's mqadmin wipeWritePerm -b broker-a: %s" % out)
        t_wipe = _now_ms()  # the name server has it now (mqadmin's JVM takes seconds to get there)
        wait_for("30 sends on ours after the clients' route refresh",
                 lambda: len(acked(producer1, t_wipe + ROUTE_SLACK_MS)) >= 30, 60, clients)

        def drained():
            state, done = consumed_to_end(apache.broker_addr)
            return state if done else None
        state = wait_for("the group's committed offsets at the end of every queue of broker-a", drained, 60, clients)
        on_a = acked(producer1, brokers=["broker-a"])
        probe = on_a[len(on_a) // 2]
        code, out = apache.mqadmin(["queryMsgByKey", "-n", apache.namesrv_addr, "-t", TOPIC,
                                    "-k", "mig-key-%d" % probe["i"]])
        # It prints each message's id (the client's UNIQ_KEY), queue id and queue offset.
        found = [line.split() for line in out.splitlines() if probe["msg_id"] in line]
        check(code == 0 and found and found[0][1:3] == [str(probe["queue"]), str(probe["queue_offset"])],
              "Apache's mqadmin queryMsgByKey did not find mig-key-%d (msgId %s, queue %d, offset %d) on "
              "broker-a: %s" % (probe["i"], probe["msg_id"], probe["queue"], probe["queue_offset"], out))
        apache.stop(apache.broker_dir)
        t_leave = _now_ms()
        wait_for("broker-a leaving Apache's name server",
                 lambda: "broker-a" not in remoting.cluster_brokers(apache.namesrv_addr), 30, clients)
        wait_for("30 sends after broker-a left", lambda: len(acked(producer1, t_leave)) >= 30, 60, clients)
        phase["broker-a drained and gone"] = time.monotonic() - started

        # d. Swap the name servers: ours starts and our broker registers with it (its namesrvAddr listed
        # both from the start); the clients are restarted one at a time with both addresses (a new
        # instance first, then the old one stops cleanly); Apache's name server stops.
        ours.start_namesrv(30)
        ours.wait_registered_with(ours.namesrv_addr, 40)
        wait_for("route of %s on our name server" % TOPIC,
                 lambda: (remoting.topic_route(ours.namesrv_addr, TOPIC) or {}).get("queueDatas"), 30)
        consumer2, producer2 = start_clients(ctx, lang, both, 2, "mig2")
        t_consumer2 = _now_ms()
        clients = (consumer1, producer1, consumer2, producer2)
        wait_for("producer-2 sending", lambda: len(acked(producer2)) >= 20, 60, clients)
        result_c1 = consumer1.stop(30)
        check(not result_c1.timed_out and result_c1.code == 0, "consumer-1: %s" % result_c1.describe())
        result_p1 = producer1.stop(30)
        check(not result_p1.timed_out and result_p1.code == 0, "producer-1: %s" % result_p1.describe())
        clients = (consumer2, producer2)
        apache.stop(apache.namesrv_dir)
        t_swap = _now_ms()
        wait_for("sends after Apache's name server stopped",
                 lambda: len(acked(producer2, t_swap + ROUTE_SLACK_MS)) >= 30, 60, clients)
        code, out = apache.mqadmin(["wipeWritePerm", "-b", ours.broker_names[1], "-n", ours.namesrv_addr])
        check(code == 0 and "OK" in out, "Apache's mqadmin wipeWritePerm -b %s on our name server: %s"
              % (ours.broker_names[1], out))
        t_wipe_b1 = _now_ms()
        wait_for("sends after the route change on our name server",
                 lambda: len(acked(producer2, t_wipe_b1 + ROUTE_SLACK_MS)) >= 30, 60, clients)
        phase["name servers swapped"] = time.monotonic() - started

        # e. Stop producing; the consumers got everything.
        result_p2 = producer2.stop(30)
        check(not result_p2.timed_out and result_p2.code == 0, "producer-2: %s" % result_p2.describe())
        sent = [r for res in (result_p1, result_p2) for r in res.of_kind("sent") if r["status"] == "SEND_OK"]
        sent2 = [r for r in result_p2.of_kind("sent") if r["status"] == "SEND_OK"]
        errors = [r for res in (result_p1, result_p2) for r in res.of_kind("send_error") + res.of_kind("error")]
        want = {"%s-%d" % (res_prefix, r["i"]): r for res_prefix, res in (("mig", result_p1), ("mig2", result_p2))
                for r in res.of_kind("sent") if r["status"] == "SEND_OK"}
        recv1 = result_c1.of_kind("recv")

        def got_all():
            bodies = {r["body"] for r in recv1} | {r["body"] for r in consumer2.records("recv")}
            return not [b for b in want if b not in bodies]
        try:
            wait_for("the consumers receiving every acknowledged message", got_all, 60, [consumer2])
        except harness.CaseFailure:
            pass  # the loss check below names what is missing
        result_c2 = consumer2.stop(30)
        check(not result_c2.timed_out and result_c2.code == 0, "consumer-2: %s" % result_c2.describe())
    finally:
        apache.stop_all()

    per_broker = collections.Counter(r["broker"] for r in sent)
    ctx.note("%s servers, %s mqadmin, %s client: %d sends acknowledged %s, %d failed; phases at %s s"
             % (servers_set, admin_set, lang, len(sent), dict(per_broker), len(errors),
                {k: round(v, 1) for k, v in phase.items()}))
    retries = [r for res in (result_p1, result_p2, result_c1, result_c2) for r in res.of_kind("route_retry")]
    if retries:
        ctx.note("a client's first route lookup failed %d time(s): %s" % (len(retries), retries[0]["error"][:200]))
    check(not errors, "%d send(s) failed during the migration, first %s" % (len(errors), errors[:2]))
    check(per_broker["broker-a"] >= 60 and all(per_broker[b] >= 30 for b in ours.broker_names),
          "sends did not reach both sides: %s" % dict(per_broker))
    late_a = [r for r in sent if r["broker"] == "broker-a" and r["t"] > t_wipe + ROUTE_SLACK_MS]
    check(not late_a, "%d send(s) went to the drained broker-a after the route refresh, first %s"
          % (len(late_a), late_a[:1]))
    late_b1 = [r for r in sent2 if r["broker"] == ours.broker_names[1] and r["t"] > t_wipe_b1 + ROUTE_SLACK_MS]
    check(not late_b1, "%d send(s) went to %s after its write perm was wiped on our name server (the clients "
          "do not read routes from it), first %s" % (len(late_b1), ours.broker_names[1], late_b1[:1]))

    recv2 = result_c2.of_kind("recv")
    recv = recv1 + recv2
    count = collections.Counter(r["body"] for r in recv)
    missing = sorted(w for w in want if w not in count)
    check(not missing, "%d of %d acknowledged message(s) never consumed, first %s (sent to %s)"
          % (len(missing), len(want), missing[:5], [want[m]["broker"] for m in missing[:5]]))
    wrong_key = [r for r in recv if r["body"] in want
                 and r["keys"] != "%s-key-%s" % tuple(r["body"].rsplit("-", 1))]
    check(not wrong_key, "message(s) consumed with the wrong key: %s" % wrong_key[:2])
    strays = [r for r in recv if r["body"] not in want]
    check(not strays, "consumed message(s) no send acknowledged: %s" % strays[:2])
    dups = sum(c - 1 for c in count.values())
    # A reset of the group makes the new consumer get again what the old one consumed before its last
    # offset commit (every 5 s) ahead of the hand-over.
    old = {r["body"] for r in recv1 if r["t"] < t_consumer2 - 6000}
    again = sorted(old & {r["body"] for r in recv2})
    first = {}
    for r in recv:
        first.setdefault(r["body"], r["t"])
    wait_ours = max(first[b] - want[b]["t"] for b in want if want[b]["broker"] != "broker-a")
    ctx.note("consumers: %d acknowledged messages received (%d by consumer-1, %d by consumer-2), %d duplicate "
             "deliveries (%d of them consumed by consumer-1 over 6 s before consumer-2 started); broker-a's "
             "committed offsets before it left %s; the longest wait of a message on ours for its first "
             "delivery %.1f s (the consumer takes new queues at its next rebalance)"
             % (len(want), len(recv1), len(recv2), dups, len(again), state, wait_ours / 1000.0))
    check(not again, "consumer-2 got %d message(s) again that consumer-1 had consumed long before, first %s: "
          "the group was reset" % (len(again), again[:5]))
    # At-least-once allows a few around the hand-over between the two consumers.
    check(dups <= max(10, len(want) // 50), "%d duplicate deliveries of %d messages" % (dups, len(want)))


@case("java_migration_expand_and_drain_apache4", timeout=300)
def migration_apache4(ctx):
    run_migration(ctx, "rocketmq-4.9.7", "rocketmq-4.9.8", "java")


@case("java5_migration_expand_and_drain_apache5", timeout=300)
def migration_apache5(ctx):
    run_migration(ctx, "rocketmq-5.5.0", "rocketmq-5.5.0", "java5")


def our_mqadmin(args, timeout=30):
    """Our mqadmin; (exit code, output)."""
    argv = [os.path.join(os.path.dirname(harness.binaries()[1]), "mqadmin")] + args
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


@case("java_migration_back_apache4_joins_ours_is_drained", timeout=240)
def migration_back_apache4(ctx):
    """The way back (docs/migration.md): Apache's 4.x broker joins our cluster (our name server), ours is
    drained with our mqadmin and leaves; the same live producer and consumer, the same checks."""
    ours = harness.Cluster(os.path.join(ctx.workdir, "ours"), shard_count=2, shard_routing="direct")
    ours.broker_name = "broker-b"
    ours.broker_names = harness.shard_broker_names("broker-b", 2, "direct")
    os.makedirs(ours.workdir, exist_ok=True)
    ctx.cluster = ours
    ctx.clients = harness.Clients(ctx.workdir, ours)
    apache = Apache(ctx.workdir, "rocketmq-4.9.7", "rocketmq-4.9.8")
    apache.namesrv_addr = ours.namesrv_addr
    ns = ours.namesrv_addr
    try:
        ours.start()
        ours.create_topic(TOPIC, QUEUES)
        consumer = Client(ctx, "java", "consumer", ["consume", ns, TOPIC, GROUP, str(POLL_MS)])
        wait_for("the consumer's first queues", lambda: consumer.records("started"), 60, [consumer])
        producer = Client(ctx, "java", "producer", ["produce", ns, TOPIC, "mig", str(PACE_MS), str(POLL_MS)])
        clients = (consumer, producer)
        wait_for("40 sends acknowledged by ours", lambda: len(acked(producer)) >= 40, 60, clients)

        # Apache's broker joins our cluster; our mqadmin creates the topic and the group on it.
        apache.start_broker()
        t_join = _now_ms()
        code, out = our_mqadmin(["updateTopic", "-n", ns, "-b", apache.broker_addr, "-t", TOPIC,
                                 "-r", str(QUEUES), "-w", str(QUEUES)])
        check(code == 0, "our mqadmin updateTopic on Apache's broker: %s" % out)
        code, out = our_mqadmin(["updateSubGroup", "-n", ns, "-b", apache.broker_addr, "-g", GROUP])
        check(code == 0, "our mqadmin updateSubGroup on Apache's broker: %s" % out)
        wait_for("sends spread over ours and broker-a",
                 lambda: len(acked(producer, t_join, ["broker-a"])) >= 30
                 and len(acked(producer, t_join, ours.broker_names)) >= 30, 60, clients)

        # Drain every shard-broker of ours; its backlog is consumed; it leaves.
        for name in ours.broker_names:
            code, out = our_mqadmin(["wipeWritePerm", "-n", ns, "-b", name])
            check(code == 0, "our mqadmin wipeWritePerm -b %s: %s" % (name, out))
        t_wipe = _now_ms()
        wait_for("30 sends on broker-a after the clients' route refresh",
                 lambda: len(acked(producer, t_wipe + ROUTE_SLACK_MS)) >= 30, 60, clients)

        def drained():
            states = [consumed_to_end(addr) for addr in ours.broker_addrs]
            return [s for s, _ in states] if all(done for _, done in states) else None
        state = wait_for("the group's committed offsets at the end of every queue of ours", drained, 60, clients)
        ours.stop_broker()
        t_leave = _now_ms()
        wait_for("30 sends after our broker left", lambda: len(acked(producer, t_leave)) >= 30, 60, clients)

        result_p = producer.stop(30)
        check(not result_p.timed_out and result_p.code == 0, "producer: %s" % result_p.describe())
        sent = [r for r in result_p.of_kind("sent") if r["status"] == "SEND_OK"]
        errors = result_p.of_kind("send_error") + result_p.of_kind("error")
        want = {"mig-%d" % r["i"]: r for r in sent}
        try:
            wait_for("the consumer receiving every acknowledged message",
                     lambda: not [b for b in want if b not in {r["body"] for r in consumer.records("recv")}],
                     60, [consumer])
        except harness.CaseFailure:
            pass  # the loss check below names what is missing
        result_c = consumer.stop(30)
        check(not result_c.timed_out and result_c.code == 0, "consumer: %s" % result_c.describe())
    finally:
        apache.stop_all()

    per_broker = collections.Counter(r["broker"] for r in sent)
    ctx.note("%d sends acknowledged %s, %d failed" % (len(sent), dict(per_broker), len(errors)))
    check(not errors, "%d send(s) failed during the move back, first %s" % (len(errors), errors[:2]))
    late = [r for r in sent if r["broker"] != "broker-a" and r["t"] > t_wipe + ROUTE_SLACK_MS]
    check(not late, "%d send(s) went to our drained broker after the route refresh, first %s"
          % (len(late), late[:1]))
    recv = result_c.of_kind("recv")
    count = collections.Counter(r["body"] for r in recv)
    missing = sorted((w for w in want if w not in count), key=lambda b: int(b.split("-")[1]))
    check(not missing, "%d of %d acknowledged message(s) never consumed, first %s (sent to %s)"
          % (len(missing), len(want), missing[:5], [want[m]["broker"] for m in missing[:5]]))
    strays = [r for r in recv if r["body"] not in want]
    check(not strays, "consumed message(s) no send acknowledged: %s" % strays[:2])
    dups = sum(c - 1 for c in count.values())
    ctx.note("consumer: %d acknowledged messages received, %d duplicate deliveries; our committed offsets "
             "before the broker left %s" % (len(want), dups, state))
    check(dups <= max(5, len(want) // 50), "%d duplicate deliveries of %d messages: the group was reset"
          % (dups, len(want)))

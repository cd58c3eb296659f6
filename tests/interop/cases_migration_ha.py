"""Moving an Apache RocketMQ broker to ours in place, with its data (docs/migration.md, "In place: our broker as
the slave of an Apache master"), with Apache's own name server, broker, mqadmin and Java client:

a. Apache's name server and master `broker-a` (4.9.7 as a SYNC_MASTER, which answers SEND_OK only once a slave
   acknowledged the message, at once SLAVE_NOT_AVAILABLE without one; or 5.5.0 as an ASYNC_MASTER: 5.x's
   SYNC_MASTER waits for no slave unless inSyncReplicas >= 2); 1 MiB CommitLog segments so the copy crosses
   segment ends and their blank records), a topic of 4 queues. Apache's Java producer sends batch A (keys
   "A-key-i", 1 KiB bodies, past the first segment); group G consumes all of A and stops (its offsets
   committed on Apache).
b. Our broker starts as the master's slave: brokerName broker-a, brokerId 1, brokerRole SLAVE,
   haMasterProtocol apache, shardCount 1, the same segment size; it finds the master's HA address in the
   name server's registration answer. Empty, it is offered only the master's newest segment (Apache's rule)
   and refuses, saying how to seed; stopped, seeded with the master's sealed segment files and started
   again, it follows from their end.
c. Batch B is sent to Apache's master (G does not consume it). During the copy our slave is SIGKILLed once
   and restarted. Wait until our slave's commitLogMaxOffset equals the master's and its copy of G's offsets
   equals Apache's.
d. Apache's master stops (cleanly), then ours; the two CommitLogs are byte-identical up to the end.
e. Ours restarts on the same store as the master (brokerId 0, ASYNC_MASTER). G resumes on ours: it gets
   exactly batch B (nothing of A again: no reset; every acknowledged message of B: no loss), at the queue
   offsets Apache gave them, contiguous per queue; batch C sent to ours is consumed too. Apache's mqadmin
   finds a message of A by key (queryMsgByKey) and by its msgId (queryMsgByUniqueKey) on ours.
f. (4.9.7 case) Spreading over more cores: a broker of ours with two shard-brokers (broker-b-0, broker-b-1) joins
   and gets the topic, the migrated one-shard broker-a is drained (Apache's mqadmin wipeWritePerm); batch D goes
   to the new shard-brokers only and G consumes all of it once (nothing of before again)."""

import collections
import os
import shutil
import time

import harness
import remoting
from caselib import case, check
from cases_migration import Apache, wait_for

TOPIC, GROUP, QUEUES = "MigrationHaTopic", "migration_ha_group", 4
SEGMENT = 1024 * 1024
# A segment must hold the largest message (ours checks; Apache's would fail such a put).
MAX_MESSAGE = 512 * 1024
BODY = 1024
COUNT_A, COUNT_B, COUNT_C, COUNT_D = 1000, 1200, 100, 200
# What our empty slave logs when Apache's master offers it only its newest segment.
REFUSAL = "starts an empty slave at its newest CommitLog segment"
QUERY_CONSUMER_OFFSET = 14
GET_BROKER_RUNTIME_INFO = 28


class OurBroker(harness.Cluster):
    """Our broker `broker-a` (one shard), registering with Apache's name server."""

    def __init__(self, workdir, apache_namesrv, broker_id, role):
        super().__init__(workdir, shard_count=1, shard_routing="direct", extra_config={
            "brokerId": broker_id,
            "brokerRole": role,
            "haMasterProtocol": "apache",
            "mappedFileSizeCommitLog": str(SEGMENT),
            "maxMessageSize": str(MAX_MESSAGE),
            "registerNameServerPeriod": "3000",
        })
        self.namesrv_addr = apache_namesrv
        self.broker_name = "broker-a"
        self.broker_names = ["broker-a"]
        self.broker_id = broker_id

    def become_master(self):
        self.broker_id = "0"
        self.extra_config["brokerId"] = "0"
        self.extra_config["brokerRole"] = "ASYNC_MASTER"
        del self.extra_config["haMasterProtocol"]

    def wait_registered(self, timeout):
        harness.wait_brokers_registered(self.namesrv_addr, self.broker, {self.broker_name: self.broker_addr},
                                        self.broker_id, timeout)


def start_apache_master(apache, role):
    store = os.path.join(apache.workdir, "apache-broker", "store")
    text = "\n".join([
        "brokerClusterName=DefaultCluster",
        "brokerName=broker-a",
        "brokerId=0",
        "brokerRole=%s" % role,
        "flushDiskType=ASYNC_FLUSH",
        "brokerIP1=127.0.0.1",
        "listenPort=%d" % apache.broker_port,
        "haListenPort=%d" % (apache.broker_port + 1),
        "namesrvAddr=%s" % apache.namesrv_addr,
        "storePathRootDir=%s" % store,
        "storePathCommitLog=%s" % os.path.join(store, "commitlog"),
        "mappedFileSizeCommitLog=%d" % SEGMENT,
        "maxMessageSize=%d" % MAX_MESSAGE,
        "autoCreateTopicEnable=true",
        "",
    ])
    apache.broker_dir = apache._start("broker", text, {"RMQ_BROKER_HEAP": "384m", "RMQ_BROKER_DIRECT": "256m",
                                                       "RMQ_PRETOUCH": "0"})
    apache.commitlog = os.path.join(store, "commitlog")
    end = time.monotonic() + 40
    while remoting.cluster_brokers(apache.namesrv_addr).get("broker-a", {}).get("0") != apache.broker_addr:
        check(time.monotonic() < end, "Apache's broker-a never registered with its name server")
        time.sleep(0.2)


def max_offset(addr):
    """The broker's commitLogMaxOffset (GET_BROKER_RUNTIME_INFO), or None when it does not answer."""
    try:
        resp = remoting.request(addr, GET_BROKER_RUNTIME_INFO, timeout=3.0)
    except (OSError, remoting.RemotingError):
        return None
    if resp.code != remoting.SUCCESS:
        return None
    return int(resp.json_body().get("table", {}).get("commitLogMaxOffset", -1))


def group_offsets(addr):
    out = {}
    for q in range(QUEUES):
        resp = remoting.request(addr, QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": q})
        out[q] = int(resp.ext_fields.get("offset", -1)) if resp.code == remoting.SUCCESS else None
    return out


def queue_ends(addr):
    return {q: int(remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": q})
                   .ext_fields.get("offset", -1)) for q in range(QUEUES)}


def segments(directory):
    """{start offset: path} of the 20-digit segment files under `directory` (searched recursively)."""
    out = {}
    for root, _, files in os.walk(directory):
        if os.path.basename(root) != "commitlog":
            continue
        for name in files:
            if len(name) == 20 and name.isdigit():
                out[int(name)] = os.path.join(root, name)
    return out


def first_difference(apache_dir, ours_dir, end):
    """None when both CommitLogs hold the same bytes in [0, end); else where and why they differ."""
    theirs, mine = segments(apache_dir), segments(ours_dir)
    if not theirs or max(theirs) + SEGMENT < end:
        return "Apache's segments under %s do not cover [0, %d): %s" % (apache_dir, end, sorted(theirs))
    for start in sorted(s for s in theirs if s < end):
        if start not in mine:
            return "segment %020d missing on ours (ours: %s)" % (start, sorted(mine))
        n = min(SEGMENT, end - start)
        with open(theirs[start], "rb") as a, open(mine[start], "rb") as b:
            x, y = a.read(n), b.read(n)
        if x != y:
            at = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
            return "segment %020d differs at byte %d (read %d and %d of %d bytes)" % (start, at, len(x), len(y), n)
    return None


def produce(ctx, lang, namesrv, prefix, count):
    return ctx.clients.spawn(lang, "producer-" + prefix, ["MigrationHaClient", "produce", namesrv, TOPIC, prefix,
                                                          str(count), str(BODY)])


def finish(ctx, proc, timeout):
    result = ctx.clients.finish(proc, timeout)
    check(not result.timed_out and result.code == 0, "%s: %s" % (proc.name, result.describe()))
    return result


# A SYNC_MASTER stores a message it answers SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT for too.
STORED = ("SEND_OK", "SLAVE_NOT_AVAILABLE", "FLUSH_SLAVE_TIMEOUT")


def acked(result):
    sent = [r for r in result.of_kind("sent") if r["status"] in STORED]
    errors = result.of_kind("send_error") + result.of_kind("error")
    check(not errors, "%s: %d send(s) failed, first %s" % (result.name, len(errors), errors[:2]))
    return sent


def consume(ctx, lang, namesrv, want, name):
    return finish(ctx, ctx.clients.spawn(lang, name, ["MigrationHaClient", "consume", namesrv, TOPIC, GROUP,
                                                      str(want), "2000"]), 90)


def run_in_place(ctx, servers_set, admin_set, lang, apache_role, spread=False):
    apache = Apache(ctx.workdir, servers_set, admin_set)
    ours = OurBroker(os.path.join(ctx.workdir, "ours"), apache.namesrv_addr, "1", "SLAVE")
    os.makedirs(ours.workdir, exist_ok=True)
    ctx.cluster = ours
    ctx.clients = harness.Clients(ctx.workdir, ours)
    ns = apache.namesrv_addr
    wide_started = False
    started = time.monotonic()
    phase = {}
    try:
        # a. Apache's cluster; batch A, consumed by G.
        apache.start_namesrv()
        start_apache_master(apache, apache_role)
        remoting.create_topic(apache.broker_addr, TOPIC, QUEUES)
        wait_for("route of %s on Apache's name server" % TOPIC,
                 lambda: (remoting.topic_route(ns, TOPIC) or {}).get("queueDatas"), 30)
        sent_a = acked(finish(ctx, produce(ctx, lang, ns, "A", COUNT_A), 60))
        check(len(sent_a) == COUNT_A, "batch A: %d of %d acknowledged" % (len(sent_a), COUNT_A))
        statuses_a = collections.Counter(r["status"] for r in sent_a)
        want_a = "SLAVE_NOT_AVAILABLE" if apache_role == "SYNC_MASTER" else "SEND_OK"
        check(statuses_a[want_a] == COUNT_A, "batch A (no slave yet) answered %s, not all %s"
              % (dict(statuses_a), want_a))
        recv_a = consume(ctx, lang, ns, COUNT_A, "consumer-on-apache").of_kind("recv")
        apache_offsets = group_offsets(apache.broker_addr)
        check(sum(v or 0 for v in apache_offsets.values()) == COUNT_A,
              "G's committed offsets on Apache after consuming batch A: %s" % apache_offsets)
        phase["batch A consumed on Apache"] = time.monotonic() - started

        # b. Our slave, empty, is offered the master's newest segment only: it refuses and says why.
        end_a = max_offset(apache.broker_addr)
        check(end_a > SEGMENT, "the master's log (%d bytes) did not pass its first segment" % end_a)
        ours.start_broker(timeout=60)
        log = os.path.join(ours.workdir, "broker.log")
        wait_for("our empty slave refusing to start at the master's newest segment",
                 lambda: REFUSAL in open(log, errors="replace").read(), 30)
        check(max_offset(ours.broker_addr) == 0, "the empty slave stored data from the newest segment")
        ours.stop_broker()
        # Seeded with the master's sealed segments (all files but the newest), it follows from their end.
        theirs = segments(apache.commitlog)
        sealed = sorted(start for start in theirs if start < max(theirs))
        target = os.path.join(ours.store, "shard-0", "commitlog")
        check(sealed and os.path.isdir(target), "nothing to seed %s with: %s" % (target, sorted(theirs)))
        for start in sealed:
            shutil.copyfile(theirs[start], os.path.join(target, "%020d" % start))
        ours.start_broker(timeout=60)
        wait_for("our slave copying batch A to %d" % end_a, lambda: max_offset(ours.broker_addr) == end_a, 30)
        phase["slave seeded and following"] = time.monotonic() - started

        # c. Batch B is sent to Apache's master; our slave is SIGKILLed during the copy.
        producer_b = produce(ctx, lang, ns, "B", COUNT_B)
        kill_at = end_a + 200 * BODY
        wait_for("our slave past offset %d" % kill_at, lambda: (max_offset(ours.broker_addr) or 0) >= kill_at, 60)
        killed_at = max_offset(ours.broker_addr)
        producer_running = producer_b.alive()
        ours.kill_broker()
        ours.start_broker(timeout=60)
        sent_b = acked(finish(ctx, producer_b, 60))
        check(len(sent_b) == COUNT_B, "batch B: %d of %d acknowledged" % (len(sent_b), COUNT_B))
        statuses_b = collections.Counter(r["status"] for r in sent_b)
        if apache_role == "SYNC_MASTER":
            # SEND_OK only once a slave acknowledged the message: ours, before it was killed.
            check(statuses_b["SEND_OK"] >= 100, "Apache's SYNC_MASTER answered SEND_OK for %d of batch B "
                  "(%s): our slave's acknowledgements did not release its sends" % (statuses_b["SEND_OK"],
                                                                                     dict(statuses_b)))
        else:
            check(statuses_b["SEND_OK"] == COUNT_B, "batch B statuses %s" % dict(statuses_b))
        end_b = max_offset(apache.broker_addr)
        check(end_b > 2 * SEGMENT, "the master's log (%d bytes) did not pass its second segment" % end_b)
        wait_for("our slave's max offset reaching the master's %d" % end_b,
                 lambda: max_offset(ours.broker_addr) == end_b, 30)
        wait_for("our slave's copy of G's offsets equal to Apache's %s" % apache_offsets,
                 lambda: group_offsets(ours.broker_addr) == apache_offsets, 30)
        check(queue_ends(ours.broker_addr) == queue_ends(apache.broker_addr),
              "queue ends differ: ours %s, Apache's %s" % (queue_ends(ours.broker_addr),
                                                          queue_ends(apache.broker_addr)))
        phase["slave caught up"] = time.monotonic() - started

        # d. Apache's master stops; the logs are the same bytes.
        apache.stop(apache.broker_dir)
        ours.stop_broker()
        diff = first_difference(apache.commitlog, ours.store, end_b)
        check(diff is None, "the CommitLogs differ: %s" % diff)

        # e. Ours restarts as the master; G resumes where it stopped; pre-move messages are found.
        ours.become_master()
        ours.start_broker(timeout=60)
        wait_for("route of %s to our master" % TOPIC,
                 lambda: any(b.get("brokerAddrs", {}).get("0") == ours.broker_addr
                             for b in (remoting.topic_route(ns, TOPIC) or {}).get("brokerDatas", [])), 30)
        phase["ours is the master"] = time.monotonic() - started
        check(group_offsets(ours.broker_addr) == apache_offsets,
              "G's offsets on our master %s, on Apache %s" % (group_offsets(ours.broker_addr), apache_offsets))
        sent_c = acked(finish(ctx, produce(ctx, lang, ns, "C", COUNT_C), 60))
        check(len(sent_c) == COUNT_C and all(r["broker"] == "broker-a" for r in sent_c),
              "batch C on ours: %d of %d acknowledged" % (len(sent_c), COUNT_C))
        recv = consume(ctx, lang, ns, COUNT_B + COUNT_C, "consumer-on-ours").of_kind("recv")
        phase["G consumed on ours"] = time.monotonic() - started

        probe = sent_a[len(sent_a) // 2]
        key = "A-key-%d" % probe["i"]
        code, out = apache.mqadmin(["queryMsgByKey", "-n", ns, "-t", TOPIC, "-k", key])
        found = [line.split() for line in out.splitlines() if probe["msg_id"] in line]
        check(code == 0 and found and found[0][1:3] == [str(probe["queue"]), str(probe["queue_offset"])],
              "Apache's mqadmin queryMsgByKey %s (msgId %s, queue %d, offset %d) on ours: %s"
              % (key, probe["msg_id"], probe["queue"], probe["queue_offset"], out))
        code, out = apache.mqadmin(["queryMsgByUniqueKey", "-n", ns, "-t", TOPIC, "-i", probe["msg_id"]])
        check(code == 0 and key in out, "Apache's mqadmin queryMsgByUniqueKey %s on ours: %s"
              % (probe["msg_id"], out))
        recv_d = []
        if spread:
            # f. Over more cores: a broker of ours with two shard-brokers joins, the migrated one-shard
            # broker-a is drained; new messages go to the new queues and G consumes them.
            wide = harness.Cluster(os.path.join(ctx.workdir, "ours-b"), shard_count=2, shard_routing="direct",
                                   extra_config={"registerNameServerPeriod": "3000"})
            wide.namesrv_addr = ns
            wide.broker_name = "broker-b"
            wide.broker_names = harness.shard_broker_names("broker-b", 2, "direct")
            os.makedirs(wide.workdir, exist_ok=True)
            wide_started = True
            wide.start_broker(timeout=60)
            remoting.create_topic(wide.broker_addr, TOPIC, QUEUES)
            wait_for("route of %s to %s" % (TOPIC, wide.broker_names),
                     lambda: set(wide.broker_names) <= {b.get("brokerName") for b in
                                                        (remoting.topic_route(ns, TOPIC) or {}).get("brokerDatas", [])},
                     30)
            code, out = apache.mqadmin(["wipeWritePerm", "-b", "broker-a", "-n", ns])
            check(code == 0 and "OK" in out, "Apache's mqadmin wipeWritePerm -b broker-a: %s" % out)
            consumer_d = ctx.clients.spawn(lang, "consumer-wide", ["MigrationHaClient", "consume", ns, TOPIC, GROUP,
                                                                   str(COUNT_D), "2000"])
            sent_d = acked(finish(ctx, produce(ctx, lang, ns, "D", COUNT_D), 60))
            recv_d = finish(ctx, consumer_d, 90).of_kind("recv")
            on = collections.Counter(r["broker"] for r in sent_d)
            check(len(sent_d) == COUNT_D and set(on) == set(wide.broker_names),
                  "batch D after broker-a's drain: %d of %d acknowledged, by %s" % (len(sent_d), COUNT_D, dict(on)))
            phase["spread over two shard-brokers"] = time.monotonic() - started
    finally:
        apache.stop_all()
        ours.stop()
        if wide_started:
            wide.stop()

    # No reset, no loss, at the offsets Apache gave: G gets B and C, nothing of A.
    names_a = {"A-%d" % r["i"] for r in sent_a}
    check({r["body"] for r in recv_a} == names_a, "batch A not all consumed on Apache")
    want = {"B-%d" % r["i"]: r for r in sent_b}
    want.update({"C-%d" % r["i"]: r for r in sent_c})
    count = collections.Counter(r["body"] for r in recv)
    again = sorted(b for b in count if b in names_a)
    check(not again, "G got %d message(s) of batch A again on ours (the group was reset), first %s"
          % (len(again), again[:5]))
    missing = sorted(b for b in want if b not in count)
    check(not missing, "%d of %d acknowledged message(s) never consumed on ours, first %s"
          % (len(missing), len(want), missing[:5]))
    strays = sorted(b for b in count if b not in want and b not in names_a)
    check(not strays, "consumed message(s) no send acknowledged: %s" % strays[:5])
    moved = [r for r in recv if r["body"] in want
             and (r["queue"], r["queue_offset"]) != (want[r["body"]]["queue"], want[r["body"]]["queue_offset"])]
    check(not moved, "message(s) consumed at other queue offsets than their send result gave: %s" % moved[:3])
    wrong_key = [r for r in recv if r["keys"] != "%s-key-%s" % tuple(r["body"].split("-", 1))]
    check(not wrong_key, "message(s) consumed with the wrong key: %s" % wrong_key[:2])
    per_queue = collections.defaultdict(set)
    for r in recv:
        per_queue[r["queue"]].add(r["queue_offset"])
    for q, offsets in per_queue.items():
        start = apache_offsets[q]
        check(offsets == set(range(start, start + len(offsets))),
              "queue %d: consumed offsets are not contiguous from G's committed %d: %s"
              % (q, start, sorted(offsets)[:10]))
    if spread:
        names_d = {"D-%d" % r["i"] for r in sent_d}
        count_d = collections.Counter(r["body"] for r in recv_d)
        check(set(count_d) == names_d, "G on the new shard-brokers: %d of %d of batch D consumed, %d other(s) "
              "again, first %s" % (len(set(count_d) & names_d), len(names_d), len(set(count_d) - names_d),
                                   sorted(set(count_d) - names_d)[:5]))
        check(all(c == 1 for c in count_d.values()), "batch D delivered twice: %s"
              % [b for b, c in count_d.items() if c > 1][:5])
    dups = sum(c - 1 for c in count.values())
    ctx.note("%s %s, %s client: batches A/B/C %d/%d/%d stored (batch B answered %s); slave SIGKILLed at offset %s "
             "(producer %s), master's end %d; G's offsets on Apache %s; on ours %d received, %d duplicate "
             "deliveries; phases at %s s"
             % (servers_set, apache_role, lang, len(sent_a), len(sent_b), len(sent_c), dict(statuses_b), killed_at,
                "still sending" if producer_running else "already done", end_b, apache_offsets,
                len(recv), dups, {k: round(v, 1) for k, v in phase.items()}))
    check(dups == 0, "%d duplicate deliveries after the move" % dups)


@case("java_migration_in_place_slave_of_apache4", timeout=240)
def in_place_apache4(ctx):
    run_in_place(ctx, "rocketmq-4.9.7", "rocketmq-4.9.8", "java", "SYNC_MASTER", spread=True)


@case("java5_migration_in_place_slave_of_apache5", timeout=240)
def in_place_apache5(ctx):
    run_in_place(ctx, "rocketmq-5.5.0", "rocketmq-5.5.0", "java5", "ASYNC_MASTER")

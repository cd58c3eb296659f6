"""The way back, with the data (docs/migration.md, "The way back: an Apache slave of our master"): Apache's
broker follows our one-shard master as its slave over Apache's classic HA protocol, then takes over as the
master on its copy of the store.

a. Apache's name server; our master `broker-a` (one shard, SYNC_MASTER, 1 MiB segments so the copy crosses
   segment ends) registers with it. Apache's Java producer sends batch A (keys "A-key-i", 1 KiB bodies, past
   the first segment) to ours; group G consumes all of A on ours and stops.
b. Apache's broker starts as its slave (brokerId 1, brokerRole SLAVE; 4.9.7 with haMasterAddress our HA port,
   5.5.0 finding it in the name server's answer), empty: it gets our whole log from offset 0 (5.5.0: the slave
   starts before batch A, see its case). Batch B follows, not consumed: every send is SEND_OK (our SYNC_MASTER
   waits for the Apache slave's offset reports).
c. Wait until the Apache slave's commitLogMaxOffset equals ours, its queue ends equal ours and its copy of G's
   offsets (Apache's SlaveSynchronize) equals ours.
d. Our master stops, then Apache's slave; the two CommitLogs are byte-identical up to the end.
e. Apache's broker restarts on its store as the master (brokerId 0). G resumes on it: exactly batch B (nothing
   of A again, nothing missing, no duplicate), at the queue offsets our send results gave; Apache's mqadmin
   finds a message of A by key."""

import collections
import os
import re
import time

import harness
import remoting
from caselib import case, check
from cases_migration import Apache, wait_for
from cases_migration_ha import (BODY, GROUP, MAX_MESSAGE, QUEUES, SEGMENT, TOPIC, acked, consume,
                                first_difference, finish, group_offsets, max_offset, produce, queue_ends)

COUNT_A, COUNT_B = 1000, 500


class OurMaster(harness.Cluster):
    """Our one-shard master `broker-a`, registering with Apache's name server."""

    def __init__(self, workdir, apache_namesrv):
        super().__init__(workdir, shard_count=1, shard_routing="direct", extra_config={
            "brokerRole": "SYNC_MASTER",
            "mappedFileSizeCommitLog": str(SEGMENT),
            "maxMessageSize": str(MAX_MESSAGE),
            "registerNameServerPeriod": "3000",
        })
        self.namesrv_addr = apache_namesrv
        self.broker_name = "broker-a"
        self.broker_names = ["broker-a"]


def start_apache(apache, broker_id, role, ha_master=None):
    """Apache's broker-a on its one store: the slave of `ha_master`, or the master."""
    store = os.path.join(apache.workdir, "apache-broker", "store")
    lines = [
        "brokerClusterName=DefaultCluster",
        "brokerName=broker-a",
        "brokerId=%d" % broker_id,
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
        "autoCreateTopicEnable=false",
    ]
    if ha_master:
        lines.append("haMasterAddress=%s" % ha_master)
    apache.broker_dir = apache._start("broker", "\n".join(lines + [""]),
                                      {"RMQ_BROKER_HEAP": "384m", "RMQ_BROKER_DIRECT": "256m", "RMQ_PRETOUCH": "0"})
    apache.commitlog = os.path.join(store, "commitlog")
    wait_for("Apache's broker-a (brokerId %d) registered" % broker_id,
             lambda: remoting.cluster_brokers(apache.namesrv_addr).get("broker-a", {}).get(str(broker_id))
             == apache.broker_addr, 40)


def persisted_offsets(apache):
    """G's offsets in the Apache broker's config/consumerOffset.json (fastjson writes the queue ids as bare
    numbers, so the file is read with a pattern, not as JSON)."""
    path = os.path.join(apache.workdir, "apache-broker", "store", "config", "consumerOffset.json")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    found = re.search(r'"%s@%s"\s*:\s*\{([^}]*)\}' % (re.escape(TOPIC), re.escape(GROUP)), text)
    if not found:
        return None
    return {int(q): int(o) for q, o in re.findall(r'"?(\d+)"?\s*:\s*(\d+)', found.group(1))}


def run_back(ctx, servers_set, admin_set, lang, ha_master, slave_first):
    apache = Apache(ctx.workdir, servers_set, admin_set)
    ours = OurMaster(os.path.join(ctx.workdir, "ours"), apache.namesrv_addr)
    os.makedirs(ours.workdir, exist_ok=True)
    ctx.cluster = ours
    ctx.clients = harness.Clients(ctx.workdir, ours)
    ns = apache.namesrv_addr
    started = time.monotonic()
    phase = {}

    def start_slave():
        start_apache(apache, 1, "SLAVE", ha_master=ha_master and "127.0.0.1:%d" % (ours.broker_port + 1))
        log = os.path.join(ours.workdir, "broker.log")
        # 5.x finds our HA address through the name server's route, not haMasterAddress: under load
        # that took 25 s once.
        wait_for("the Apache slave connecting to our HA port",
                 lambda: "Apache slave" in open(log, errors="replace").read(), 60)
        phase["Apache slave connected"] = time.monotonic() - started

    try:
        # a. Apache's name server and our master; batch A, consumed by G on ours.
        apache.start_namesrv()
        ours.start_broker(timeout=60)
        remoting.create_topic(ours.broker_addr, TOPIC, QUEUES)
        wait_for("route of %s to our master" % TOPIC,
                 lambda: (remoting.topic_route(ns, TOPIC) or {}).get("queueDatas"), 30)
        if slave_first:
            start_slave()
        sent_a = acked(finish(ctx, produce(ctx, lang, ns, "A", COUNT_A), 60))
        check(len(sent_a) == COUNT_A, "batch A on ours: %d of %d acknowledged" % (len(sent_a), COUNT_A))
        recv_a = consume(ctx, lang, ns, COUNT_A, "consumer-on-ours").of_kind("recv")
        our_offsets = group_offsets(ours.broker_addr)
        check(sum(v or 0 for v in our_offsets.values()) == COUNT_A, "G's offsets on ours after A: %s" % our_offsets)
        end_a = max_offset(ours.broker_addr)
        check(end_a > SEGMENT, "our log (%d bytes) did not pass its first segment" % end_a)
        phase["batch A consumed on ours"] = time.monotonic() - started

        # b. Apache's broker, empty, follows ours from the start of our log; batch B, not consumed, is
        # SEND_OK on our SYNC_MASTER only once the Apache slave reported it.
        if not slave_first:
            start_slave()
        wait_for("the Apache slave copying batch A (%d bytes)" % end_a,
                 lambda: max_offset(apache.broker_addr) == end_a, 30)
        phase["Apache slave holds batch A"] = time.monotonic() - started
        sent_b = acked(finish(ctx, produce(ctx, lang, ns, "B", COUNT_B), 60))
        statuses_b = collections.Counter(r["status"] for r in sent_b)
        check(len(sent_b) == COUNT_B and statuses_b["SEND_OK"] == COUNT_B,
              "batch B on our SYNC_MASTER with the Apache slave: %d of %d acknowledged, statuses %s"
              % (len(sent_b), COUNT_B, dict(statuses_b)))
        phase["batch B sent"] = time.monotonic() - started

        # c. The Apache slave holds all of it, and G's offsets.
        end = max_offset(ours.broker_addr)
        wait_for("the Apache slave's max offset reaching ours (%d)" % end,
                 lambda: max_offset(apache.broker_addr) == end, 30)
        check(queue_ends(apache.broker_addr) == queue_ends(ours.broker_addr),
              "queue ends differ: Apache's slave %s, ours %s" % (queue_ends(apache.broker_addr),
                                                                 queue_ends(ours.broker_addr)))
        wait_for("the Apache slave's copy of G's offsets equal to ours %s" % our_offsets,
                 lambda: group_offsets(apache.broker_addr) == our_offsets, 75 if slave_first else 30)
        # Persisted by the slave as it copied them (not only at its shutdown, which a crash would skip).
        wait_for("G's offsets %s in the Apache slave's consumerOffset.json" % our_offsets,
                 lambda: persisted_offsets(apache) == our_offsets, 15)
        phase["Apache slave caught up"] = time.monotonic() - started

        # d. Our master stops, then Apache's slave; the logs are the same bytes.
        ours.stop_broker()
        apache.stop(apache.broker_dir)
        diff = first_difference(apache.commitlog, ours.store, end)
        check(diff is None, "the CommitLogs differ: %s" % diff)

        # e. Apache's broker is the master now; G resumes there; pre-move messages are found.
        start_apache(apache, 0, "ASYNC_MASTER")
        wait_for("route of %s to Apache's master" % TOPIC,
                 lambda: any(b.get("brokerAddrs", {}).get("0") == apache.broker_addr
                             for b in (remoting.topic_route(ns, TOPIC) or {}).get("brokerDatas", [])), 30)
        check(group_offsets(apache.broker_addr) == our_offsets,
              "G's offsets on Apache's master %s, ours were %s" % (group_offsets(apache.broker_addr), our_offsets))
        recv = consume(ctx, lang, ns, COUNT_B, "consumer-on-apache").of_kind("recv")
        phase["G consumed on Apache"] = time.monotonic() - started
        probe = sent_a[len(sent_a) // 2]
        key = "A-key-%d" % probe["i"]
        code, out = apache.mqadmin(["queryMsgByKey", "-n", ns, "-t", TOPIC, "-k", key])
        found = [line.split() for line in out.splitlines() if probe["msg_id"] in line]
        check(code == 0 and found and found[0][1:3] == [str(probe["queue"]), str(probe["queue_offset"])],
              "Apache's mqadmin queryMsgByKey %s (msgId %s, queue %d, offset %d) on Apache's new master: %s"
              % (key, probe["msg_id"], probe["queue"], probe["queue_offset"], out))
    finally:
        apache.stop_all()
        ours.stop()

    names_a = {"A-%d" % r["i"] for r in sent_a}
    check({r["body"] for r in recv_a} == names_a, "batch A not all consumed on ours")
    want = {"B-%d" % r["i"]: r for r in sent_b}
    count = collections.Counter(r["body"] for r in recv)
    again = sorted(b for b in count if b in names_a)
    check(not again, "G got %d message(s) of batch A again on Apache (the group was reset), first %s"
          % (len(again), again[:5]))
    missing = sorted(b for b in want if b not in count)
    check(not missing, "%d of %d acknowledged message(s) never consumed on Apache, first %s"
          % (len(missing), len(want), missing[:5]))
    strays = sorted(b for b in count if b not in want and b not in names_a)
    check(not strays, "consumed message(s) no send acknowledged: %s" % strays[:5])
    moved = [r for r in recv if r["body"] in want
             and (r["queue"], r["queue_offset"]) != (want[r["body"]]["queue"], want[r["body"]]["queue_offset"])]
    check(not moved, "message(s) consumed at other queue offsets than their send result gave: %s" % moved[:3])
    wrong_key = [r for r in recv if r["keys"] != "%s-key-%s" % tuple(r["body"].split("-", 1))]
    check(not wrong_key, "message(s) consumed with the wrong key: %s" % wrong_key[:2])
    dups = sum(c - 1 for c in count.values())
    ctx.note("%s, %s client: batches A/B %d/%d stored, our log's end %d; G's offsets %s; on Apache %d received, "
             "%d duplicate deliveries; phases at %s s"
             % (servers_set, lang, len(sent_a), len(sent_b), end, our_offsets, len(recv), dups,
                {k: round(v, 1) for k, v in phase.items()}))
    check(dups == 0, "%d duplicate deliveries after the move back" % dups)


@case("java_migration_back_apache4_slave_of_ours", timeout=180)
def back_apache4(ctx):
    run_back(ctx, "rocketmq-4.9.7", "rocketmq-4.9.8", "java", ha_master=True, slave_first=False)


@case("java5_migration_back_apache5_slave_of_ours", timeout=240)
def back_apache5(ctx):
    # 5.5.0 ignores haMasterAddress (its HA client does not exist yet when the setting is applied: "HAClient
    # connect to master null"); it takes our HA address from the name server's registration answer.
    # 5.x's slave first copies the master's metadata 60 s after it started (then every 60 s; 4.9.7 every 10 s):
    # started before batch A, that minute passes while the batches are sent.
    run_back(ctx, "rocketmq-5.5.0", "rocketmq-5.5.0", "java5", ha_master=False, slave_first=True)

"""Moving an Apache RocketMQ broker to ours offline, with its data (docs/migration.md, "Offline import of a
stopped Apache store"), with Apache's own name server, broker, mqadmin and Java client:

a. Apache's name server and broker `broker-a` (4.9.7 or 5.5.0, 1 MiB CommitLog segments so the data
   crosses a segment end), topic T with 4 queues (on 5.5.0 with the attribute message.type=NORMAL) and
   topic W with 6. Apache's Java producer sends batch A (keys "A-key-i", 1 KiB bodies); group G consumes
   all of A and stops (its offsets committed on Apache). Then batch B (not consumed) and batch D with
   delay level 4 (30 s), still waiting in SCHEDULE_TOPIC_XXXX when Apache stops, and batch X of
   transactional messages whose producer answers UNKNOW and exits: pending half messages.
b. Our importer refuses the store while Apache's broker runs (its `abort` file), and a non-empty target.
c. Apache's broker stops; `broker --import-apache-store STORE --target OURS` writes a one-shard store; its
   report names the segment size and the waiting delayed messages.
d. Ours starts on it (brokerName broker-a, shardCount 1, the reported mappedFileSizeCommitLog) and
   registers with Apache's name server: its CommitLog end, queue ends, G's offsets, the topics' queue
   counts (and attribute) equal Apache's. G resumes on ours and gets exactly B and D (nothing of A: no
   reset; every acknowledged message of B and D: no loss; no duplicate), B at the queue offsets Apache's
   send results gave. Our transaction checker asks a new producer of X's group about the imported half
   messages (it answers COMMIT_MESSAGE) and G gets X too. Apache's mqadmin finds a message of A by key and
   by msgId on ours."""

import collections
import os
import re
import subprocess
import time

import harness
import remoting
from caselib import case, check
from cases_migration import Apache, wait_for
from cases_migration_ha import MAX_MESSAGE, SEGMENT, start_apache_master, max_offset

TOPIC, WIDE, GROUP = "MigrationImportTopic", "MigrationImportWide", "migration_import_group"
QUEUES, WIDE_QUEUES = 4, 6
BODY = 1024
COUNT_A, COUNT_B, COUNT_D, COUNT_X = 1200, 300, 20, 3
DELAY_LEVEL = 4
QUERY_CONSUMER_OFFSET = 14
GET_ALL_TOPIC_CONFIG = 21


def group_offsets(addr):
    out = {}
    for q in range(QUEUES):
        resp = remoting.request(addr, QUERY_CONSUMER_OFFSET, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": q})
        out[q] = int(resp.ext_fields.get("offset", -1)) if resp.code == remoting.SUCCESS else None
    return out


def queue_ends(addr, topic, queues):
    return {q: int(remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": topic, "queueId": q})
                   .ext_fields.get("offset", -1)) for q in range(queues)}


def topic_configs(addr):
    resp = remoting.request(addr, GET_ALL_TOPIC_CONFIG)
    check(resp.code == remoting.SUCCESS, "GET_ALL_TOPIC_CONFIG on %s answered %d" % (addr, resp.code))
    table = resp.json_body().get("topicConfigTable") or {}
    return {t: (c.get("readQueueNums"), c.get("writeQueueNums"), c.get("perm"), c.get("attributes") or {})
            for t, c in table.items() if t in (TOPIC, WIDE)}


def import_store(broker_bin, source, target):
    done = subprocess.run([broker_bin, "--import-apache-store", source, "--target", target],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def finish(ctx, proc, timeout):
    result = ctx.clients.finish(proc, timeout)
    check(not result.timed_out and result.code == 0, "%s: %s" % (proc.name, result.describe()))
    return result


def produce(ctx, lang, ns, prefix, count, level=0):
    result = finish(ctx, ctx.clients.spawn(lang, "producer-" + prefix, [
        "MigrationImportClient", "produce", ns, TOPIC, prefix, str(count), str(BODY), str(level)]), 60)
    sent = [r for r in result.of_kind("sent") if r["status"] == "SEND_OK"]
    errors = result.of_kind("send_error") + result.of_kind("error")
    check(not errors and len(sent) == count, "batch %s: %d of %d acknowledged, errors %s"
          % (prefix, len(sent), count, errors[:2]))
    return sent


def consume(ctx, lang, ns, want, name):
    return finish(ctx, ctx.clients.spawn(lang, name, ["MigrationHaClient", "consume", ns, TOPIC, GROUP,
                                                      str(want), "2000"]), 90).of_kind("recv")


def run_import(ctx, servers_set, admin_set, lang, attributes):
    apache = Apache(ctx.workdir, servers_set, admin_set)
    ours = harness.Cluster(os.path.join(ctx.workdir, "ours"), shard_count=1, shard_routing="direct", extra_config={
        "brokerId": "0",
        "brokerRole": "ASYNC_MASTER",
        "mappedFileSizeCommitLog": str(SEGMENT),
        "maxMessageSize": str(MAX_MESSAGE),
        "registerNameServerPeriod": "3000",
        "transactionCheckInterval": "3000",
    })
    ours.namesrv_addr = apache.namesrv_addr
    ours.broker_name = "broker-a"
    ours.broker_names = ["broker-a"]
    os.makedirs(ours.workdir, exist_ok=True)
    ctx.cluster = ours
    ctx.clients = harness.Clients(ctx.workdir, ours)
    ns = apache.namesrv_addr
    store = os.path.join(apache.workdir, "apache-broker", "store")
    started = time.monotonic()
    phase = {}
    try:
        # a. Apache's broker with batches A (consumed), B (not consumed) and D (delayed, still waiting).
        apache.start_namesrv()
        start_apache_master(apache, "ASYNC_MASTER")
        remoting.create_topic(apache.broker_addr, TOPIC, QUEUES, attributes=attributes)
        remoting.create_topic(apache.broker_addr, WIDE, WIDE_QUEUES)
        wait_for("route of %s on Apache's name server" % TOPIC,
                 lambda: (remoting.topic_route(ns, TOPIC) or {}).get("queueDatas"), 30)
        sent_a = produce(ctx, lang, ns, "A", COUNT_A)
        recv_a = consume(ctx, lang, ns, COUNT_A, "consumer-on-apache")
        apache_offsets = group_offsets(apache.broker_addr)
        check(sum(v or 0 for v in apache_offsets.values()) == COUNT_A,
              "G's committed offsets on Apache after consuming batch A: %s" % apache_offsets)
        sent_b = produce(ctx, lang, ns, "B", COUNT_B)
        sent_d = produce(ctx, lang, ns, "D", COUNT_D, DELAY_LEVEL)
        halves = finish(ctx, ctx.clients.spawn(lang, "tx-half", ["MigrationImportClient", "tx-half", ns, TOPIC, "X",
                                                                  str(COUNT_X)]), 60).of_kind("half")
        check(len(halves) == COUNT_X and all(r["status"] == "SEND_OK" for r in halves),
              "half messages of batch X: %s" % halves)
        apache_ends = queue_ends(apache.broker_addr, TOPIC, QUEUES)
        apache_topics = topic_configs(apache.broker_addr)
        end = max_offset(apache.broker_addr)
        check(end > SEGMENT, "Apache's log (%d bytes) did not pass its first segment" % end)
        phase["batches stored on Apache"] = time.monotonic() - started

        # b. Refused while Apache runs.
        target = ours.store
        code, out = import_store(ours.broker_bin, store, target)
        check(code == 2 and "abort" in out, "import of a running Apache store: exit %d, %s" % (code, out))

        # c. Apache stops; the import.
        apache.stop(apache.broker_dir)
        check(not os.path.exists(os.path.join(store, "abort")), "Apache's broker left its abort file")
        code, report = import_store(ours.broker_bin, store, target)
        check(code == 0, "import: exit %d, %s" % (code, report))
        # Apache may append after the measurement (its transaction checker's copies of half messages).
        imported = re.search(r"offsets 0\.\.(\d+)\n", report)
        check(imported and int(imported.group(1)) >= end, "the import report gives no end at or past Apache's "
              "%d: %s" % (end, report))
        end = int(imported.group(1))
        check("mappedFileSizeCommitLog = %d" % SEGMENT in report
              and "delay level %d: %d message(s) still waiting" % (DELAY_LEVEL, COUNT_D) in report,
              "the import report misses the segment size or the waiting delayed messages: %s"
              % report)
        code, out = import_store(ours.broker_bin, store, target)
        check(code == 2 and "not empty" in out, "import into a non-empty target: exit %d, %s" % (code, out))
        phase["imported"] = time.monotonic() - started

        # d. Ours on the imported store.
        ours.start_broker(timeout=60)
        wait_for("route of %s to our broker-a" % TOPIC,
                 lambda: any(b.get("brokerAddrs", {}).get("0") == ours.broker_addr
                             for b in (remoting.topic_route(ns, TOPIC) or {}).get("brokerDatas", [])), 30)
        # (Our transaction checker may already have appended copies of the half messages it checked.)
        check((max_offset(ours.broker_addr) or 0) >= end, "our CommitLog ends at %s, Apache's at %d"
              % (max_offset(ours.broker_addr), end))
        check(queue_ends(ours.broker_addr, TOPIC, QUEUES) == apache_ends, "queue ends: ours %s, Apache's %s"
              % (queue_ends(ours.broker_addr, TOPIC, QUEUES), apache_ends))
        check(group_offsets(ours.broker_addr) == apache_offsets, "G's offsets: ours %s, Apache's %s"
              % (group_offsets(ours.broker_addr), apache_offsets))
        our_topics = topic_configs(ours.broker_addr)
        check(our_topics == apache_topics and our_topics.get(WIDE, (None,))[0] == WIDE_QUEUES,
              "topics: ours %s, Apache's %s" % (our_topics, apache_topics))
        if attributes:
            check(our_topics.get(TOPIC, (0, 0, 0, {}))[3].get("message.type") == "NORMAL",
                  "topic attribute lost: %s" % (our_topics,))
        phase["ours serving"] = time.monotonic() - started
        checker = ctx.clients.spawn(lang, "tx-check", ["MigrationImportClient", "tx-check", ns, TOPIC, str(COUNT_X),
                                                        "45"])
        recv = consume(ctx, lang, ns, COUNT_B + COUNT_D + COUNT_X + 1, "consumer-on-ours")
        checker_out = finish(ctx, checker, 60)
        checked = {r["msg_id"] for r in checker_out.of_kind("checked")}
        check(len(checker_out.of_kind("sent")) == 1, "the checking producer's own send failed: %s"
              % checker_out.describe())
        check(checked == {r["msg_id"] for r in halves}, "our checker asked about %s, the pending half messages "
              "were %s" % (sorted(checked), sorted(r["msg_id"] for r in halves)))
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
    finally:
        apache.stop_all()
        ours.stop()

    names_a = {"A-%d" % r["i"] for r in sent_a}
    check({r["body"] for r in recv_a} == names_a, "batch A not all consumed on Apache")
    want_b = {"B-%d" % r["i"]: r for r in sent_b}
    names_d = {"D-%d" % r["i"] for r in sent_d} | {"X-%d" % r["i"] for r in halves} | {"Y-0"}
    count = collections.Counter(r["body"] for r in recv)
    again = sorted(b for b in count if b in names_a)
    check(not again, "G got %d message(s) of batch A again on ours (the group was reset), first %s"
          % (len(again), again[:5]))
    missing = sorted(b for b in list(want_b) + sorted(names_d) if b not in count)
    check(not missing, "%d acknowledged message(s) never consumed on ours, first %s" % (len(missing), missing[:5]))
    strays = sorted(b for b in count if b not in want_b and b not in names_d and b not in names_a)
    check(not strays, "consumed message(s) no send acknowledged: %s" % strays[:5])
    moved = [r for r in recv if r["body"] in want_b
             and (r["queue"], r["queue_offset"]) != (want_b[r["body"]]["queue"], want_b[r["body"]]["queue_offset"])]
    check(not moved, "message(s) consumed at other queue offsets than Apache's send result gave: %s" % moved[:3])
    wrong_key = [r for r in recv if r["keys"] != "%s-key-%s" % tuple(r["body"].split("-", 1))]
    check(not wrong_key, "message(s) consumed with the wrong key: %s" % wrong_key[:2])
    dups = sum(c - 1 for c in count.values())
    ctx.note("%s, %s client: batches A/B/D/X %d/%d/%d/%d; Apache's end %d; G's offsets %s; on ours %d received, %d "
             "duplicate deliveries; phases at %s s"
             % (servers_set, lang, len(sent_a), len(sent_b), len(sent_d), len(halves), end, apache_offsets, len(recv), dups,
                {k: round(v, 1) for k, v in phase.items()}))
    check(dups == 0, "%d duplicate deliveries after the import" % dups)


@case("java_migration_import_apache4_store", timeout=180)
def import_apache4(ctx):
    run_import(ctx, "rocketmq-4.9.7", "rocketmq-4.9.8", "java", None)


@case("java5_migration_import_apache5_store", timeout=180)
def import_apache5(ctx):
    run_import(ctx, "rocketmq-5.5.0", "rocketmq-5.5.0", "java5", "+message.type=NORMAL")

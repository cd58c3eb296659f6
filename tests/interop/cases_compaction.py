"""Compaction topics (cleanup.policy=COMPACTION) with Apache RocketMQ's Java client 5.5.0, on a SYNC_MASTER
with a slave: 10 versions of 1,000 keys are sent (each key always to the same queue), the brokers compact
(`compactionScheduleInternal` = 500 ms), and a fresh DefaultLitePullConsumer group reading from the first
offset gets exactly one message per key, its newest value, in offset order per queue. Then the master is
SIGKILLed and a new push consumer group reads the slave's own compacted copy: the same."""

import collections
import os
import time

import harness
import remoting
from caselib import case, check
from cases_ha import HaCluster, pull_queue, runtime_info

VERSIONS, KEYS, QUEUES = 10, 1000, 4


def _stored_records(addrs, topic):
    """Records a raw pull from offset 0 returns on every queue of `addrs` (compacted ones once compacted)."""
    return sum(len(pull_queue(addr, topic, q)[0]) for addr in addrs for q in range(QUEUES))


def _check_newest(result, what):
    errors = result.of_kind("error")
    check(not errors and result.code == 0, "%s failed: %s %s" % (what, errors[:1], result.describe()))
    recs = result.of_kind("recv")
    last = {}
    for r in recs:
        queue = (r["store_host"], r["queue_id"])
        check(r["queue_offset"] > last.get(queue, -1), "%s: queue %s went back from offset %s to %s"
              % (what, queue, last.get(queue), r["queue_offset"]))
        last[queue] = r["queue_offset"]
    per_key = collections.Counter(r["key"] for r in recs)
    missing = ["key-%04d" % k for k in range(KEYS) if "key-%04d" % k not in per_key]
    check(not missing, "%s: %d keys missing, first %s" % (what, len(missing), missing[:5]))
    stale = [r for r in recs if r["body"] != "v%02d-%s" % (VERSIONS - 1, r["key"])]
    check(not stale, "%s: %d messages are not their key's newest value, first %s" % (what, len(stale), stale[:3]))
    check(len(recs) == KEYS, "%s: %d messages for %d keys (compaction should leave one each)"
          % (what, len(recs), KEYS))


@case("java5_compaction_topic_keeps_the_newest_value_per_key", timeout=420)
def compaction_topic(ctx):
    cluster = HaCluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    cluster.extra_config.update({"compactionScheduleInternal": "500", "slaveReadEnable": "true"})
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    cluster.start_slave()
    topic = "JavaCompacted"
    cluster.create_topic(topic, QUEUES, attributes="+cleanup.policy=COMPACTION")
    end = time.monotonic() + 30
    while any(int(runtime_info(addr).get("haSlaveConnections", "0")) < 1 for addr in cluster.broker_addrs):
        check(time.monotonic() < end, "slave never connected to every shard of the master")
        time.sleep(0.2)

    result = ctx.clients.run("java5", "java-compaction-produce", [
        "CompactionTopic", "produce", cluster.namesrv_addr, topic, str(VERSIONS), str(KEYS)], 240)
    check(result.code == 0 and not result.of_kind("error"), "producer failed: %s" % result.describe())
    failed = result.of_kind("send_failed")
    check(not failed, "%d sends failed, first %s" % (len(failed), failed[:3]))
    check(sum(r["ok"] for r in result.of_kind("sent")) == VERSIONS * KEYS, "not every send SEND_OK: %s"
          % result.of_kind("sent"))

    # Both brokers compact their own copy; wait until reads from the start give one record per key.
    for side, addrs in (("master", cluster.broker_addrs), ("slave", cluster.slave_addrs)):
        end = time.monotonic() + 60
        while True:
            stored = _stored_records(addrs, topic)
            if stored == KEYS:
                break
            check(time.monotonic() < end, "the %s never compacted to one record per key: %d records"
                  % (side, stored))
            time.sleep(0.5)

    result = ctx.clients.run("java5", "java-compaction-consume", [
        "CompactionTopic", "consume", cluster.namesrv_addr, topic, "compaction_reader_1", "90"], 120)
    _check_newest(result, "a new group on the master")

    # The master dies; the name server drops it, and readers get the slave's compacted copy.
    cluster.kill_broker()
    end = time.monotonic() + 150
    while True:
        route = remoting.topic_route(cluster.namesrv_addr, topic) or {}
        ids = {i for b in route.get("brokerDatas", []) for i in (b.get("brokerAddrs") or {})}
        if ids and all(str(i) != "0" for i in ids):
            break
        check(time.monotonic() < end, "the name server kept routing to the dead master: %s" % route)
        time.sleep(1)
    result = ctx.clients.run("java5", "java-compaction-consume-slave", [
        "CompactionTopic", "push", cluster.namesrv_addr, topic, "compaction_reader_2", "90"], 120)
    _check_newest(result, "a new group on the slave after the master's SIGKILL")

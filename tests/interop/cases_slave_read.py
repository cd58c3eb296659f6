"""slaveReadEnable with Apache's Java push consumer (4.9.8): a consumer far behind the log end is sent to
the slave by the master (suggestWhichBrokerId = the group's whichBrokerWhenConsumeSlowly, 1) and back to
the master by the slave (suggestWhichBrokerId 0), as RocketMQ's brokers do; it receives every message.
The brokers' own counters (msgGetTotalTodayNow) show that both served it.

The backlog (400 messages, about 100 KiB per shard as stored) is far larger than the read cache of 8 KiB
(`readCacheBytes`, what "far behind" means here), so the first pulls are "slow"."""

import os
import time

import harness
import messages
from caselib import case, check
from cases_ha import HaCluster, runtime_info

COUNT = 400


def _got_total(addrs):
    return sum(int(runtime_info(a).get("msgGetTotalTodayNow", "0")) for a in addrs)


@case("java_slave_read_moves_between_master_and_slave", timeout=240)
def slave_read(ctx):
    cluster = HaCluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    cluster.extra_config.update({"slaveReadEnable": "true", "readCacheBytes": "8192",
                                 "flushDiskType": "ASYNC_FLUSH"})
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    cluster.start_slave()
    topic, prefix, group = "JavaSlaveRead", "slave-read", "java_slave_read"
    cluster.create_topic(topic)
    end = time.monotonic() + 30
    while any(int(runtime_info(addr).get("haSlaveConnections", "0")) < 1 for addr in cluster.broker_addrs):
        check(time.monotonic() < end, "slave never connected to every shard of the master")
        time.sleep(0.2)
    result = ctx.clients.run("py", "py-produce", [
        "produce", "--topic", topic, "--prefix", prefix, "--count", str(COUNT), "--mode", "sync"], 120)
    sent = [r for r in result.of_kind("sent") if r["status"] in ("OK", "SendOk", "SEND_OK")]
    check(len(sent) == COUNT, "the producer got %d of %d sends acknowledged: %s"
          % (len(sent), COUNT, result.describe()))
    # The slave holds the whole backlog before the consumer starts, so its reads can be served.
    end = time.monotonic() + 60
    while True:
        held = [int(runtime_info(a).get("commitLogMaxOffset", "0")) for a in cluster.slave_addrs]
        want = [int(runtime_info(a).get("commitLogMaxOffset", "0")) for a in cluster.broker_addrs]
        if held == want:
            break
        check(time.monotonic() < end, "the slave never caught up: %s of %s" % (held, want))
        time.sleep(0.2)
    master_before, slave_before = _got_total(cluster.broker_addrs), _got_total(cluster.slave_addrs)

    result = ctx.clients.run("java", "java-slave-read", [
        "SlaveReadConsumer", cluster.namesrv_addr, topic, group, str(COUNT), "150"], 180)
    errors = result.of_kind("error")
    check(not errors and result.code == 0, "Java consumer failed: %s %s" % (errors[:1], result.describe()))
    got = {r["body"] for r in result.of_kind("recv")}
    missing = [i for i in range(COUNT) if messages.body(prefix, i) not in got]
    check(not missing, "the consumer missed %d of %d messages, first %s" % (len(missing), COUNT, missing[:5]))
    from_master = _got_total(cluster.broker_addrs) - master_before
    from_slave = _got_total(cluster.slave_addrs) - slave_before
    ctx.note("messages served: %d by the master, %d by the slave" % (from_master, from_slave))
    check(from_slave > 0, "the slave served none of the backlog: the master never sent the consumer there")
    check(from_master > 0, "the master served nothing: the slave never sent the consumer back")

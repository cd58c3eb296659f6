"""HA interop: the Python (C++) client sends to a SYNC_MASTER with a SLAVE; the master is SIGKILLed at a random
moment; every send the client saw acknowledged (SEND_OK) is then read from the slave byte-identical.

The reads from the slave use the harness's raw-protocol helper (remoting.py, PULL_MESSAGE straight to the
slave's address) rather than a C++ consumer: the C++ client keeps pulling from the dead master's route entry
until the name server expires it (120 s), which would make the case slow, not stronger.

With shardRouting = direct master and slave are one broker per shard each (`<brokerName>-<shard>`, the slave's
as brokerId 1): the slave's shard-brokers are waited for by name, and every one of them is read.
"""

import json
import os
import random
import struct
import time

import harness
import messages
import remoting
from caselib import case, check

PULL_MESSAGE = 11
GET_BROKER_RUNTIME_INFO = 28


class HaCluster(harness.Cluster):
    """The harness's cluster with its broker as SYNC_MASTER (SYNC_FLUSH), plus one SLAVE of it."""

    def __init__(self, workdir):
        super().__init__(workdir, flush_disk_type="SYNC_FLUSH")
        below, above = harness.broker_port_block(self.shard_count, self.shard_routing)
        self.slave_port = harness.free_port(below=below, above=above)
        self.slave_addrs = ["127.0.0.1:%d" % p for p in
                            harness.shard_broker_ports(self.slave_port, self.shard_count, self.shard_routing)]
        self.slave = None

    def _broker_config(self):
        path = super()._broker_config()
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace('brokerRole = "ASYNC_MASTER"', 'brokerRole = "SYNC_MASTER"'))
        return path

    def start_slave(self, timeout=60):
        config = os.path.join(self.workdir, "slave.toml")
        with open(self._broker_config()) as f:
            text = f.read()
        # slaveReadEnable: the checks pull from the slave, which RocketMQ 5 refuses without it.
        if "slaveReadEnable" not in text:
            text += "slaveReadEnable = true\n"
        text = (text.replace('brokerRole = "SYNC_MASTER"', 'brokerRole = "SLAVE"')
                .replace("brokerId = 0", "brokerId = 1")
                .replace("listenPort = %d" % self.broker_port, "listenPort = %d" % self.slave_port)
                .replace(self.store, self.store + "-slave"))
        with open(config, "w") as f:
            f.write(text)
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir)
        self.slave = harness.Proc("slave", [self.broker_bin, "--config", config],
                                  os.path.join(self.workdir, "slave.log"), env=env, cwd=self.workdir)
        harness.wait_brokers_registered(self.namesrv_addr, self.slave, dict(zip(self.broker_names, self.slave_addrs)),
                                        "1", timeout)

    def stop(self):
        if self.slave is not None and self.slave.alive():
            self.slave.stop()
        super().stop()

    def log_tails(self, lines=30):
        return super().log_tails(lines) + "\n---- slave.log\n" + harness.tail(
            os.path.join(self.workdir, "slave.log"), lines)


def runtime_info(addr):
    resp = remoting.request(addr, GET_BROKER_RUNTIME_INFO)
    return (resp.json_body().get("table") or {}) if resp.code == 0 else {}


def decode_records(body):
    """Stored CommitLog records (RocketMQ's format) of a pull body -> [(queue_offset, body, properties)]."""
    out = []
    pos = 0
    while pos + 8 <= len(body):
        total, magic = struct.unpack_from(">ii", body, pos)
        check(total > 0 and pos + total <= len(body), "bad record size %d at %d" % (total, pos))
        rec = body[pos:pos + total]
        queue_offset, = struct.unpack_from(">q", rec, 20)
        sys_flag, = struct.unpack_from(">i", rec, 36)
        at = 40 + 8 + (20 if sys_flag & 0x10 else 8) + 8 + (20 if sys_flag & 0x20 else 8) + 4 + 8
        body_len, = struct.unpack_from(">i", rec, at)
        msg_body = rec[at + 4:at + 4 + body_len]
        at += 4 + body_len
        if magic == -626843477:  # v2: 2-byte topic length
            topic_len, = struct.unpack_from(">h", rec, at)
            at += 2 + topic_len
        else:
            topic_len = rec[at]
            at += 1 + topic_len
        props_len, = struct.unpack_from(">h", rec, at)
        props = rec[at + 2:at + 2 + props_len].decode("utf-8")
        out.append((queue_offset, msg_body, dict(p.split("\x01", 1) for p in props.split("\x02") if "\x01" in p)))
        pos += total
    return out


def pull_queue(addr, topic, queue_id):
    records = []
    offset = 0
    while True:
        fields = {"consumerGroup": "ha-check", "topic": topic, "queueId": queue_id, "queueOffset": offset,
                  "maxMsgNums": 32, "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0,
                  "subVersion": 0, "expressionType": "TAG"}
        resp = remoting.request(addr, PULL_MESSAGE, fields)
        if resp.code != 0:
            return records, resp.code
        records.extend(decode_records(resp.body))
        offset = int(resp.ext_fields["nextBeginOffset"])


@case("py_ha_sync_master_sigkill_slave_has_acked", timeout=240)
def sync_master_sigkill(ctx):
    cluster = HaCluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    cluster.start_slave()
    topic, prefix = "PyHa", "pyha"
    cluster.create_topic(topic)
    end = time.monotonic() + 30
    while any(int(runtime_info(addr).get("haSlaveConnections", "0")) < 1 for addr in cluster.broker_addrs):
        check(time.monotonic() < end, "slave never connected to every shard of the master")
        time.sleep(0.2)
    producer = ctx.clients.spawn("py", "py-produce-ha", [
        "produce", "--topic", topic, "--prefix", prefix, "--count", "100000", "--mode", "sync",
        "--keep-going", "--max-errors", "20", "--send-timeout-ms", "3000"])
    # SIGKILL the master at a random moment once sends are flowing.
    end = time.monotonic() + 60
    while not harness.read_records(producer.base + ".jsonl"):
        check(time.monotonic() < end, "the producer sent nothing in 60 s")
        time.sleep(0.1)
    time.sleep(random.uniform(0.5, 3.0))
    cluster.kill_broker()
    result = ctx.clients.finish(producer, 60)
    acked = {r["i"]: r for r in result.of_kind("sent") if r["status"] in ("OK", "SendOk", "SEND_OK")}
    statuses = sorted({r["status"] for r in result.of_kind("sent")})
    ctx.note("%d sends acknowledged before the SIGKILL (statuses seen: %s)" % (len(acked), statuses))
    check(len(acked) >= 5, "too few acknowledged sends: %d" % len(acked))
    # Everything acknowledged is on the slave (the slave learns the topic from replicated data).
    end = time.monotonic() + 30
    while True:
        found = {}
        codes = set()
        for addr, q in [(addr, q) for addr in cluster.slave_addrs for q in range(4)]:
            recs, code = pull_queue(addr, topic, q)
            codes.add(code)
            for offset, body, props in recs:
                found[body] = props
        missing = [i for i in acked if messages.body(prefix, i).encode("utf-8") not in found]
        if not missing:
            break
        check(time.monotonic() < end, "%d of %d acknowledged messages missing on the slave, first %s (pull codes %s)"
              % (len(missing), len(acked), sorted(missing)[:5], sorted(codes)))
        time.sleep(0.5)
    for i, rec in acked.items():
        props = found[messages.body(prefix, i).encode("utf-8")]
        want = messages.expected(prefix, i)
        check(props.get("TAGS") == want["tags"], "message %d: tags %r" % (i, props.get("TAGS")))
        check(props.get("KEYS") == want["keys"], "message %d: keys %r" % (i, props.get("KEYS")))
        check(props.get("UNIQ_KEY") == rec["msg_id"], "message %d: msgId %r vs %r" % (i, props.get("UNIQ_KEY"), rec["msg_id"]))

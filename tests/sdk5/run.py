"""Runs the RocketMQ 5 SDK cases: for each, a name server + broker (tests/interop/harness.py), our `proxy`
in front of them, and an SDK scenario (py_sdk.py, node/node_sdk.js, rust-client/, java/JavaSdk.java) as a
subprocess with a hard timeout. The Java cases are skipped, each with a `SKIPPED <case>: <reason>` line and
counted in the summary, when tests/sdk5/setup.sh could not install the Java SDK from Maven Central.

    tests/sdk5/.venv/bin/python tests/sdk5/run.py            # every case
    tests/sdk5/.venv/bin/python tests/sdk5/run.py -k fifo    # cases whose name contains `fifo`
    tests/sdk5/.venv/bin/python tests/sdk5/run.py --keep     # keep the temp dirs of passing cases too
    tests/sdk5/.venv/bin/python tests/sdk5/run.py -j 2       # up to 2 cases at once (EXCLUSIVE ones alone, last)

With `-j N` each case runs in a child process with its own slice of the port range (tests/interop/parallel.py)
and its lines are printed together when it ends.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

import harness  # noqa: E402
import parallel  # noqa: E402
import remoting  # noqa: E402
from harness import CaseFailure, Cluster, Proc, check, free_port, wait_port  # noqa: E402

PY = os.path.join(HERE, ".venv", "bin", "python")
SDK = os.path.join(HERE, "py_sdk.py")
NODE_SDK = os.path.join(HERE, "node", "node_sdk.js")
# The Java SDK (Maven Central rocketmq-client-java 5.2.0) through the tests/apache/ kit; setup.sh compiles
# java/*.java into JAVA_CLASSES and writes JAVA_AVAILABLE: "yes", or why the Java cases cannot run.
REPO = os.path.dirname(os.path.dirname(HERE))
JAVA_SET = "rocketmq-client-java-5.2.0"
JAVA_SH = os.path.join(REPO, "tests", "apache", "java.sh")
JAVA_CLASSES = os.path.join(HERE, "java", "build", "classes")
JAVA_AVAILABLE = os.path.join(HERE, "java", "build", "available")


ACL_YML = """globalWhiteRemoteAddresses: []
accounts:
  - accessKey: sdk5admin
    secretKey: sdk5secret
    admin: true
  - accessKey: sdk5user
    secretKey: sdk5usersecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


def proxy_bin():
    namesrv, _ = harness.binaries()
    return os.path.join(os.path.dirname(namesrv), "proxy")


class Setup:
    """The processes of one case: cluster, proxy; stopped by `close`."""

    def __init__(self, workdir, broker_config=None, proxy_config=None, shard_routing=None):
        self.workdir = workdir
        self.cluster = Cluster(workdir, extra_config=broker_config, shard_routing=shard_routing)
        self.cluster.start()
        self.port = free_port()
        self.metrics_port = free_port()
        cfg = {
            "grpcServerPort": str(self.port),
            "bindAddress": '"127.0.0.1"',
            "namesrvAddr": '"%s"' % self.cluster.namesrv_addr,
            "metricsPromExporterPort": str(self.metrics_port),
            # Short invisible times keep the redelivery case short (Apache's proxy: 10 s minimum).
            "minInvisibleTimeMillis": "1000",
        }
        cfg.update(proxy_config or {})
        path = os.path.join(workdir, "proxy.toml")
        with open(path, "w") as f:
            f.write("".join("%s = %s\n" % kv for kv in cfg.items()))
        self.proxy = Proc("proxy", [proxy_bin(), "--config", path], os.path.join(workdir, "proxy.log"),
                          env=dict(os.environ, RUST_LOG="info,proxy=debug"), cwd=workdir)
        if not wait_port(self.port, 30):
            raise CaseFailure("proxy did not listen on %d" % self.port)
        self.endpoint = "127.0.0.1:%d" % self.port
        # Extra environment of the SDK processes (TLS switches and trusted roots).
        self.client_env = {}

    def _scenario(self, label, name, argv, timeout, env=None, cwd=None):
        """Runs one SDK scenario as its own process group with a HOME of its own (the SDKs log under ~);
        its stdout, once it exited 0 with the proxy still alive."""
        out = os.path.join(self.workdir, "%s.out" % name)
        err = os.path.join(self.workdir, "%s.err" % name)
        env = dict(os.environ, HOME=self.workdir, **self.client_env, **(env or {}))
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen(argv, stdout=o, stderr=e, env=env, cwd=cwd, start_new_session=True)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise CaseFailure("%s scenario %s ran past %ss; stderr: %s" % (label, name, timeout, harness.tail(err)))
        check(code == 0, "%s scenario %s failed (exit %s): %s" % (label, name, code, harness.tail(err, 15)))
        check(self.proxy.alive(), "the proxy died during %s" % name)
        with open(out) as f:
            return f.read().strip()

    def sdk(self, scenario, *args, timeout=120):
        """A Python SDK scenario (py_sdk.py)."""
        return self._scenario("SDK", scenario, [PY, SDK, scenario, self.endpoint] + list(args), timeout)

    def node(self, scenario, *args, timeout=120):
        """A Node.js SDK scenario (node/node_sdk.js)."""
        return self._scenario("Node.js", "node-" + scenario, ["node", NODE_SDK, scenario, self.endpoint] + list(args),
                              timeout, cwd=os.path.dirname(NODE_SDK))

    def java(self, scenario, *args, timeout=120):
        """A Java SDK scenario (java/JavaSdk.java on rocketmq-client-java 5.2.0). The SDK logs under
        ${user.home}/logs/rocketmq, and Java takes user.home from the password file, not HOME: both are set."""
        argv = [JAVA_SH, JAVA_SET, "-cp", JAVA_CLASSES, "JavaSdk", scenario, self.endpoint] + list(args)
        return self._scenario("Java", "java-" + scenario, argv, timeout,
                              env={"JAVA_OPT_EXT": "-Duser.home=%s" % self.workdir}, cwd=self.workdir)

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port, timeout=5) as r:
            return r.read().decode()

    def close(self):
        if self.proxy.alive():
            self.proxy.stop(signal.SIGTERM, grace=5)
        self.cluster.stop()


def mqadmin():
    return os.path.join(os.path.dirname(proxy_bin()), "mqadmin")


def create_topic(s, topic, message_type):
    """`topic` with 4 queues on every broker of the cluster and RocketMQ 5's `message.type` attribute (our
    mqadmin's `updateTopic -a +message.type=...`): the proxy refuses messages of another type (unless MIXED,
    which needs the broker's `enableMixedMessageType`). Topics made without it are NORMAL."""
    r = subprocess.run([mqadmin(), "updateTopic", "-n", s.cluster.namesrv_addr, "-c", "DefaultCluster", "-t", topic,
                        "-r", "4", "-w", "4", "-a", "+message.type=%s" % message_type],
                       capture_output=True, timeout=60)
    check(r.returncode == 0, "updateTopic %s failed: %s" % (topic, (r.stdout + r.stderr).decode()[-2000:]))
    s.cluster.wait_route(topic)


def case_send_stored(s):
    """Sends through the proxy land in the brokers: counts per queue, FIFO groups whole, rollback absent."""
    s.cluster.create_topic("SdkPlain")
    create_topic(s, "SdkGroups", "FIFO")
    create_topic(s, "SdkTxStored", "TRANSACTION")
    print("   ", s.sdk("produce", "SdkPlain", "SdkGroups", "SdkTxStored"))
    plain = s.cluster.max_offsets("SdkPlain", 4)
    check(sum(plain.values()) == 10, "SdkPlain holds %s" % plain)
    check(sum(1 for n in plain.values() if n) > 1, "round robin used one queue: %s" % plain)
    groups = s.cluster.max_offsets("SdkGroups", 4)
    check(sum(groups.values()) == 32, "SdkGroups holds %s" % groups)
    # Each group's 8 messages went to one queue.
    check(all(n % 8 == 0 for n in groups.values()), "a message group was split: %s" % groups)
    tx = s.cluster.max_offsets("SdkTxStored", 4)
    check(sum(tx.values()) == 1, "SdkTxStored holds %s (want only the committed message)" % tx)
    m = s.metrics()
    check('rocketmq_proxy_rpc_calls_total{method="SendMessage"} 44' in m, "metrics lack 44 sends:\n" + m)


def case_orphan(s):
    create_topic(s, "SdkOrphan", "TRANSACTION")
    print("   ", s.sdk("orphan", "SdkOrphan"))
    end = time.time() + 10
    while time.time() < end and sum(s.cluster.max_offsets("SdkOrphan", 4).values()) < 1:
        time.sleep(0.2)
    stored = s.cluster.max_offsets("SdkOrphan", 4)
    check(sum(stored.values()) == 1, "SdkOrphan holds %s after the check-back commit" % stored)


def case_push(s):
    s.cluster.create_topic("SdkPush")
    print("   ", s.sdk("push", "SdkPush", "GID_push"))


def dlq_case(s, run_sdk, topic, group):
    """A message never acked by `run_sdk`'s consumer of a group that retries once (retryMaxTimes = 1):
    two deliveries, then exactly it in %DLQ%group."""
    body = json.dumps({"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
                       "consumeBroadcastEnable": True, "retryQueueNums": 1, "retryMaxTimes": 1,
                       "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1}).encode()
    for _, addr in s.cluster.shard_brokers():
        resp = remoting.request(addr, 200, {}, body)
        check(resp.code == 0, "creating the group answered %d %r" % (resp.code, resp.remark))
    s.cluster.create_topic(topic)
    print("   ", run_sdk("dlq", topic, group, "2"))
    dlq_topic = "%DLQ%" + group
    end = time.time() + 10
    while True:
        dead = 0
        for _, addr in s.cluster.shard_brokers():
            r = remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": dlq_topic, "queueId": 0})
            if r.code == 0:
                dead += int(r.ext_fields.get("offset", 0))
        if dead == 1 or time.time() > end:
            break
        time.sleep(0.2)
    check(dead == 1, "%s holds %d messages, want the poison one" % (dlq_topic, dead))


def case_dlq(s):
    dlq_case(s, s.sdk, "SdkDlq", "GID_dlq")


def case_node_dlq(s):
    dlq_case(s, s.node, "NodeDlq", "GID_node_dlq")


def kill9_case(s, producer_cmd, run_sdk, topic, group):
    """SYNC_FLUSH broker SIGKILLed while an SDK producer (`producer_cmd`) sends through the proxy, then
    restarted: every acknowledged send is received by `run_sdk`'s consumer through the same proxy (which
    reconnects by itself)."""
    s.cluster.create_topic(topic)
    acked = os.path.join(s.workdir, "acked.txt")
    prod = subprocess.Popen(producer_cmd + ["produce_acked", s.endpoint, topic, "400", acked],
                            stdout=open(os.path.join(s.workdir, "produce.out"), "wb"),
                            stderr=open(os.path.join(s.workdir, "produce.err"), "wb"),
                            env=dict(os.environ, HOME=s.workdir), start_new_session=True,
                            cwd=os.path.dirname(producer_cmd[-1]))
    try:
        end = time.time() + 60
        while time.time() < end and (not os.path.exists(acked) or sum(1 for _ in open(acked)) < 50):
            time.sleep(0.1)
        s.cluster.kill_broker()
        time.sleep(1)
        s.cluster.start_broker()
        code = prod.wait(180)
    finally:
        if prod.poll() is None:
            os.killpg(prod.pid, signal.SIGKILL)
            prod.wait()
    check(code == 0, "producer failed: %s" % harness.tail(os.path.join(s.workdir, "produce.err")))
    with open(os.path.join(s.workdir, "produce.out")) as f:
        print("   ", f.read().strip())
    print("   ", run_sdk("consume_all", topic, group, acked, timeout=150))


def case_kill9(s):
    kill9_case(s, [PY, SDK], s.sdk, "SdkKill", "GID_kill")


def case_node_kill9(s):
    kill9_case(s, ["node", NODE_SDK], s.node, "NodeKill", "GID_node_kill")


def case_node_normal(s):
    s.cluster.create_topic("NodeNormal")
    print("   ", s.node("normal", "NodeNormal", "GID_node_normal"))


def make_orderly(s, group, retry_max_times=16):
    """`mqadmin updateSubGroup -o true` (RocketMQ 5's consumeMessageOrderly) on every broker of the cluster,
    with our mqadmin."""
    exe = os.path.join(os.path.dirname(proxy_bin()), "mqadmin")
    r = subprocess.run([exe, "updateSubGroup", "-n", s.cluster.namesrv_addr, "-c", "DefaultCluster", "-g", group,
                        "-o", "true", "-r", str(retry_max_times)], capture_output=True, timeout=60)
    check(r.returncode == 0, "updateSubGroup failed: %s" % (r.stdout + r.stderr).decode()[-2000:])


FIFO_GROUPS = 4
FIFO_PER_GROUP = 6


def check_fifo_log(out, prefix):
    """The delivery log of a FIFO scenario (two consumers of one orderly group, one message at a time, the
    first delivery of `<prefix>-0:0` left unacked): every message group arrives in send order with no gap
    (a message is delivered only after every earlier message of its group was acked), the unacked message
    comes back once with delivery attempt 2 and holds its group until then, everything else is delivered
    once, and both consumers took part."""
    log = json.loads(out.splitlines()[-1])["log"]
    groups = ["%s-%d" % (prefix, g) for g in range(FIFO_GROUPS)]
    held = "%s-0:0" % prefix
    acked = {g: [] for g in groups}
    delivered = {}
    for e in log:
        g, i = e["body"].split(":")
        i = int(i)
        check(g in acked, "unexpected message %r" % e["body"])
        check(e["group"] == g, "%s carries message group %r" % (e["body"], e["group"]))
        check(acked[g] == list(range(i)),
              "%s delivered while group %s had %s acked: order broken" % (e["body"], g, acked[g]))
        delivered.setdefault(e["body"], []).append(e["attempt"])
        if e["ack"]:
            acked[g].append(i)
    for g in groups:
        check(acked[g] == list(range(FIFO_PER_GROUP)), "group %s acked %s" % (g, acked[g]))
    for body, attempts in delivered.items():
        want = [1, 2] if body == held else [1]
        check(attempts == want, "%s delivered with attempts %s, want %s" % (body, attempts, want))
    check(len(delivered) == FIFO_GROUPS * FIFO_PER_GROUP, "delivered %d messages" % len(delivered))
    per_consumer = [sum(1 for e in log if e["c"] == c) for c in (0, 1)]
    check(all(per_consumer), "deliveries per consumer %s: one consumer got none" % per_consumer)
    return "%d deliveries, per consumer %s" % (len(log), per_consumer)


def case_node_fifo(s):
    create_topic(s, "NodeFifo", "FIFO")
    make_orderly(s, "GID_node_fifo")
    out = s.node("fifo", "NodeFifo", "GID_node_fifo")
    print("   ", check_fifo_log(out, "node"))
    check(json.loads(out.splitlines()[-1])["pushFifo"] is True, "the PushConsumer was not told the group is FIFO")


def case_node_redelivery(s):
    s.cluster.create_topic("NodeRedeliver")
    print("   ", s.node("redelivery", "NodeRedeliver", "GID_node_redeliver"))


def case_node_push(s):
    s.cluster.create_topic("NodePush")
    out = s.node("push", "NodePush", "GID_node_push")
    print("   ", out)
    check(json.loads(out.splitlines()[-1])["fifo"] is False, "a group that is not orderly was said to be FIFO")


def case_node_transaction(s):
    create_topic(s, "NodeTx", "TRANSACTION")
    print("   ", s.node("transaction", "NodeTx", "GID_node_tx"))


def grpc_load(s, *args, timeout=180):
    """proxy/examples/grpc_load (the proxy's own generated gRPC client): its JSON line."""
    exe = os.path.join(os.path.dirname(proxy_bin()), "examples", "grpc_load")
    r = subprocess.run([exe] + list(args) + ["--endpoint", s.endpoint], capture_output=True, timeout=timeout)
    check(r.returncode == 0, "grpc_load %s failed: %s" % (" ".join(args), r.stderr.decode()[-2000:]))
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def case_batch_ack(s):
    """AckMessage with many entries (the SDKs send one; PushConsumers of other SDKs batch) goes out as
    BATCH_ACK_MESSAGE: 300 messages received in batches of 32 and acked per batch; none comes back."""
    s.cluster.create_topic("GrpcBatch")
    sent = grpc_load(s, "send", "--topic", "GrpcBatch", "--count", "300", "--concurrency", "8")
    check(sent["ok"] == 300 and sent["errors"] == 0, "sends: %s" % sent)
    acked = 0
    for name in s.cluster.broker_names:
        r = grpc_load(s, "receive-ack", "--topic", "GrpcBatch", "--group", "GID_batch", "--broker", name,
                      "--invisible-ms", "2000")
        print("   ", name, r)
        acked += r["acked"]
    check(acked == 300, "acked %d of 300" % acked)
    m = s.metrics()
    check("rocketmq_proxy_messages_acked_total 300" in m, "metrics lack 300 acks:\n" + m)


RUST_SDK = os.path.join(HERE, "rust-client", "target", "debug", "sdk5-rust-client")


def rust_sdk(s, scenario, topic, group, timeout=120):
    out = os.path.join(s.workdir, "rust-%s.out" % scenario)
    err = os.path.join(s.workdir, "rust-%s.err" % scenario)
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen([RUST_SDK, scenario, s.endpoint, topic, group], stdout=o, stderr=e,
                                env=dict(os.environ, HOME=s.workdir), start_new_session=True)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise CaseFailure("Rust SDK scenario %s ran past %ss: %s" % (scenario, timeout, harness.tail(err)))
    check(code == 0, "Rust SDK scenario %s failed (exit %s): %s" % (scenario, code, harness.tail(err, 15)))
    with open(out) as f:
        return f.read().strip().splitlines()[-1]


def case_rust_normal(s):
    s.cluster.create_topic("RustNormal")
    print("   ", rust_sdk(s, "normal", "RustNormal", "GID_rust_normal"))


def case_rust_fifo(s):
    create_topic(s, "RustFifo", "FIFO")
    make_orderly(s, "GID_rust_fifo")
    print("   ", check_fifo_log(rust_sdk(s, "fifo", "RustFifo", "GID_rust_fifo"), "rust"))


def case_rust_redelivery(s):
    s.cluster.create_topic("RustRedeliver")
    print("   ", rust_sdk(s, "redelivery", "RustRedeliver", "GID_rust_redeliver"))


def case_rust_transaction(s):
    create_topic(s, "RustTx", "TRANSACTION")
    print("   ", rust_sdk(s, "transaction", "RustTx", "GID_rust_tx"))


def make_certificates(workdir):
    """A test CA and a certificate for 127.0.0.1 signed by it (openssl): (ca.pem, server.pem, server.key)."""
    ca, ca_key = os.path.join(workdir, "ca.pem"), os.path.join(workdir, "ca.key")
    cert, key = os.path.join(workdir, "server.pem"), os.path.join(workdir, "server.key")
    csr, ext = os.path.join(workdir, "server.csr"), os.path.join(workdir, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "extendedKeyUsage=serverAuth\n")
    for cmd in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                 "-subj", "/CN=sdk5 test CA"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                 "-days", "2", "-extfile", ext]):
        subprocess.run(["openssl"] + cmd, check=True, capture_output=True, timeout=60)
    return ca, cert, key


def tls_setup(workdir, mode):
    ca, cert, key = make_certificates(workdir)
    proxy_cfg = {"tlsServerMode": '"%s"' % mode, "tlsTestModeEnable": "false",
                 "tlsCertPath": '"%s"' % cert, "tlsKeyPath": '"%s"' % key}
    return proxy_cfg, ca


def plaintext_refused(port):
    """A plaintext HTTP/2 preface to the port: True when the proxy closes the connection unanswered."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        try:
            return sock.recv(64) == b""
        except ConnectionResetError:
            return True


def case_tls_permissive(s):
    """One port, both ways: the Node.js SDK over TLS (checking the certificate against the test CA) and the
    Python SDK in plaintext."""
    s.cluster.create_topic("SdkTlsNode")
    s.cluster.create_topic("SdkPlain")
    s.client_env = {"SDK5_TLS": "1", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": s.ca}
    print("   ", s.node("normal", "SdkTlsNode", "GID_tls_node"))
    s.client_env = {}
    print("   ", s.sdk("normal", "SdkPlain", "GID_plain"))


def case_tls_enforcing(s):
    """TLS only: the Python SDK over TLS (certificate checked against the test CA); a plaintext client is
    turned away."""
    s.cluster.create_topic("SdkTlsPy")
    s.client_env = {"SDK5_TLS": "1", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": s.ca}
    print("   ", s.sdk("normal", "SdkTlsPy", "GID_tls_py"))
    check(plaintext_refused(s.port), "a plaintext connection was served although tlsServerMode = enforcing")


def case_normal(s):
    s.cluster.create_topic("SdkNormal")
    print("   ", s.sdk("normal", "SdkNormal", "GID_normal"))
    m = s.metrics()
    check('rocketmq_proxy_rpc_calls_total{method="SendMessage"} 20' in m, "metrics lack 20 sends:\n" + m)
    check("rocketmq_proxy_messages_acked_total 20" in m, "metrics lack 20 acks:\n" + m)


def case_fifo(s):
    create_topic(s, "SdkFifo", "FIFO")
    make_orderly(s, "GID_fifo")
    out = s.sdk("fifo", "SdkFifo", "GID_fifo")
    print("   ", check_fifo_log(out, "order"))
    queues = json.loads(out.splitlines()[-1])["queues"]
    check(all(len(q) == 1 for q in queues.values()), "a message group was received from several queues: %s" % queues)
    print("   ", queues)


def case_fifo_dlq(s):
    # Two deliveries (retryMaxTimes = 1), then the proxy dead-letters the ordered message.
    make_orderly(s, "GID_fifo_dlq", retry_max_times=1)
    create_topic(s, "SdkFifoDlq", "FIFO")
    print("   ", s.sdk("fifo_dlq", "SdkFifoDlq", "GID_fifo_dlq", "2"))
    dead = 0
    for _, addr in s.cluster.shard_brokers():
        r = remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": "%DLQ%GID_fifo_dlq", "queueId": 0})
        if r.code == 0:
            dead += int(r.ext_fields.get("offset", 0))
    check(dead == 1, "%%DLQ%%GID_fifo_dlq holds %d messages, want the one never acked" % dead)


def case_transaction(s):
    create_topic(s, "SdkTx", "TRANSACTION")
    print("   ", s.sdk("transaction", "SdkTx", "GID_tx"))


def case_redelivery(s):
    s.cluster.create_topic("SdkRedeliver")
    print("   ", s.sdk("redelivery", "SdkRedeliver", "GID_redeliver"))


def case_delay(s):
    create_topic(s, "SdkDelay", "MIXED")
    print("   ", s.sdk("delay", "SdkDelay", "GID_delay"))


def case_delay_refused(s):
    create_topic(s, "SdkDelayOff", "DELAY")
    print("   ", s.sdk("delay_refused", "SdkDelayOff"))


def case_bad_handle(s):
    s.cluster.create_topic("SdkBadHandle")
    print("   ", s.sdk("bad_handle", "SdkBadHandle", "GID_bad"))


def case_acl(s):
    acl_case(s, s.sdk, "SdkAcl")


def acl_case(s, run_sdk, topic):
    """ACL on broker and proxy: `run_sdk`'s signed send is stored, a wrong secret is refused at the proxy."""
    # Topic creation is signed too (the admin account), as RocketMQ's AclClientRPCHook signs.
    fields = signed({"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4,
                     "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
    resp = remoting.request(s.cluster.broker_addr, 17, fields)
    check(resp.code == 0, "signed topic creation answered %d %r" % (resp.code, resp.remark))
    s.cluster.wait_route(topic)
    print("   ", run_sdk("acl", topic, "sdk5user", "sdk5usersecret"))
    stored = sum(signed_max_offset(addr, topic, q) for _, addr in s.cluster.shard_brokers() for q in range(4))
    check(stored == 1, "%s holds %d messages, want the one signed send" % (topic, stored))
    with open(os.path.join(s.workdir, "proxy.log")) as f:
        log = f.read()
    check("signature of accessKey sdk5user does not match" in log, "the proxy did not log why it refused")


def java_out(out):
    """The JSON line a Java scenario printed last."""
    return json.loads(out.splitlines()[-1])


def case_java_normal(s):
    """The Java SDK with its defaults: TLS, trusting the proxy's self-signed certificate (permissive port)."""
    s.cluster.create_topic("JavaNormal")
    out = s.java("normal", "JavaNormal", "GID_java_normal")
    print("   ", out)
    check(java_out(out)["tls"] is True, "the SDK's default was not TLS")
    m = s.metrics()
    check('rocketmq_proxy_rpc_calls_total{method="SendMessage"} 20' in m, "metrics lack 20 sends:\n" + m)
    check("rocketmq_proxy_messages_acked_total 20" in m, "metrics lack 20 acks:\n" + m)


def case_java_normal_plaintext(s):
    """The Java SDK with `enableSsl(false)` on the same (permissive) port."""
    s.cluster.create_topic("JavaPlain")
    s.client_env = {"SDK5_TLS": "0"}
    out = s.java("normal", "JavaPlain", "GID_java_plain")
    print("   ", out)
    check(java_out(out)["tls"] is False, "the SDK was not told to connect in plaintext")


def case_java_tls_enforcing(s):
    """`tlsServerMode = enforcing` with the self-signed certificate made at start: the Java SDK's defaults work,
    so it spoke TLS and accepted that certificate; a plaintext client is turned away."""
    s.cluster.create_topic("JavaTls")
    out = s.java("normal", "JavaTls", "GID_java_tls")
    print("   ", out)
    check(java_out(out)["tls"] is True, "the SDK's default was not TLS")
    check(plaintext_refused(s.port), "a plaintext connection was served although tlsServerMode = enforcing")


def case_java_fifo(s):
    create_topic(s, "JavaFifo", "FIFO")
    make_orderly(s, "GID_java_fifo")
    out = s.java("fifo", "JavaFifo", "GID_java_fifo")
    print("   ", check_fifo_log(out, "java"))
    queues = java_out(out)["queues"]
    check(all(len(q) == 1 for q in queues.values()), "a message group was received from several queues: %s" % queues)
    print("   ", queues)


def case_java_delay(s):
    create_topic(s, "JavaDelay", "MIXED")
    out = s.java("delay", "JavaDelay", "GID_java_delay")
    print("   ", out)
    check(0 <= java_out(out)["late_ms"] < 10000, "the delayed message came %s ms late" % java_out(out)["late_ms"])


def case_java_recall(s):
    """Producer.recallMessage through the proxy: the recalled delay message never comes, the other does; the
    proxy's Apache-named metrics (metricsExporterType = PROM) count the RPCs by request and status code."""
    create_topic(s, "JavaRecall", "DELAY")
    out = s.java("recall", "JavaRecall", "GID_java_recall")
    print("   ", out)
    m = s.metrics()
    common = 'cluster="SdkCluster",node_id="proxy-t",node_type="proxy",otel_scope_name="broker-meter"'
    check('rocketmq_proxy_up{%s,proxy_mode="cluster"} 1' % common in m, "no rocketmq_proxy_up:\n" + m)

    def count(request, response):
        needle = ('rocketmq_rpc_latency_count{%s,protocol_type="grpc",request_code="%s",response_code="%s",'
                  'result="success"} ') % (common.replace(',node_id', ',is_long_polling="false",node_id'),
                                           request, response)
        lines = [l for l in m.splitlines() if l.startswith(needle)]
        return int(lines[0].split()[-1]) if lines else 0
    check(count("send_message", "ok") == 2, "rpc latency counts %d sends, want 2:\n%s" % (count("send_message", "ok"), m))
    check(count("recall_message", "ok") == 1, "want 1 recall answered ok:\n" + m)
    check(count("recall_message", "internal_server_error") == 1, "want the made-up handle's refusal:\n" + m)
    # Our own names stay beside Apache's.
    check('rocketmq_proxy_rpc_calls_total{method="RecallMessage"} 2' in m, "our rpc counter lacks the recalls:\n" + m)


def case_java_transaction(s):
    create_topic(s, "JavaTx", "TRANSACTION")
    out = s.java("transaction", "JavaTx", "GID_java_tx")
    print("   ", out)
    check(java_out(out)["received"] == ["tx-commit", "tx-orphan"], "received %s" % java_out(out)["received"])
    # Nothing of the rollbacks reached the topic's queues either.
    stored = sum(s.cluster.max_offsets("JavaTx", 4).values())
    check(stored == 2, "JavaTx holds %d messages, want the 2 committed" % stored)


def case_java_push(s):
    s.cluster.create_topic("JavaPush")
    out = s.java("push", "JavaPush", "GID_java_push")
    print("   ", out)
    check(java_out(out)["consumed"] == 12, "consumed %s" % java_out(out)["consumed"])


def case_java_fifo_push(s):
    """A FIFO PushConsumer (the SDK's own FIFO consume service): each message group consumed in send order, one
    message at a time; a message its listener keeps failing is retried by the SDK (attempt 2), then forwarded to
    %DLQ%group (ForwardMessageToDeadLetterQueue), and only then does its group go on."""
    group, attempts = "GID_java_fifo_push", 2
    make_orderly(s, group, retry_max_times=attempts - 1)
    create_topic(s, "JavaFifoPush", "FIFO")
    out = s.java("fifo_push", "JavaFifoPush", group, str(attempts), timeout=150)
    log = java_out(out)["log"]
    with open(os.path.join(s.workdir, "logs", "rocketmq", "rocketmq-client.log")) as f:
        check("Create FIFO consume service" in f.read(), "the SDK did not consume FIFO (settings said not FIFO?)")
    finished = {}  # group -> indexes whose consumption is over, in order
    attempts_of = {}
    for e in log:
        g, i = e["body"].split(":")
        i = int(i)
        check(e["group"] == g, "%s carries message group %r" % (e["body"], e["group"]))
        check(not e["corrupted"], "%s: the SDK found the body digest wrong" % e["body"])
        attempts_of.setdefault(e["body"], []).append(e["attempt"])
        seq = finished.setdefault(g, [])
        # Consumed only once every earlier message of its group is over (acked, or the last attempt failed).
        check(seq == list(range(i)), "%s consumed while group %s had %s finished: order broken" % (e["body"], g, seq))
        if e["body"] != "java-0:0" or e["attempt"] == attempts:
            seq.append(i)
    for g in ("java-0", "java-1", "java-2"):
        check(finished.get(g) == [0, 1, 2, 3], "group %s finished %s" % (g, finished.get(g)))
    for body, got in attempts_of.items():
        want = list(range(1, attempts + 1)) if body == "java-0:0" else [1]
        check(got == want, "%s consumed with attempts %s, want %s" % (body, got, want))
    dead = 0
    for _, addr in s.cluster.shard_brokers():
        r = remoting.request(addr, remoting.GET_MAX_OFFSET, {"topic": "%DLQ%" + group, "queueId": 0})
        if r.code == 0:
            dead += int(r.ext_fields.get("offset", 0))
    check(dead == 1, "%%DLQ%%%s holds %d messages, want the one the listener failed" % (group, dead))
    print("    %d consumptions, java-0:0 attempts %s, then in %%DLQ%%%s" % (len(log), attempts_of["java-0:0"], group))


def case_java_redelivery(s):
    s.cluster.create_topic("JavaRedeliver")
    out = s.java("redelivery", "JavaRedeliver", "GID_java_redeliver")
    print("   ", out)
    check(java_out(out)["attempt"] == 2, "redelivered with attempt %s" % java_out(out)["attempt"])


def case_java_dlq(s):
    dlq_case(s, s.java, "JavaDlq", "GID_java_dlq")


def case_java_acl(s):
    acl_case(s, s.java, "JavaAcl")
    out = open(os.path.join(s.workdir, "java-acl.out")).read()
    check(java_out(out)["refused"].startswith("UnauthorizedException"), "refused as %s" % out)


def auth_admin(s, *args, creds=None):
    """Our mqadmin's ACL 2.0 commands (createUser, createAcl, ...) against the broker, signed with `creds`
    (accessKey, secretKey) when given."""
    env = dict(os.environ)
    if creds:
        env.update(ROCKETMQ_ACCESS_KEY=creds[0], ROCKETMQ_SECRET_KEY=creds[1])
    r = subprocess.run([mqadmin()] + list(args) + ["-n", s.cluster.namesrv_addr, "-b", s.cluster.broker_addr],
                       capture_output=True, timeout=60, env=env)
    check(r.returncode == 0, "mqadmin %s failed: %s" % (" ".join(args), (r.stdout + r.stderr).decode()[-2000:]))


ACL2_PROXY = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "innerClientAuthenticationCredentials": """'{"accessKey":"proxyadmin","secretKey":"proxysecret"}'""",
    "userCacheRefreshSeconds": "1",
    "aclCacheRefreshSeconds": "1",
}
# The proxy's super user, made at the broker's start when the broker enforces ACL 2.0 too.
ACL2_ADMIN = ("proxyadmin", "proxysecret")
ACL2_BROKER = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "initAuthenticationUser": '{\\"username\\":\\"%s\\",\\"password\\":\\"%s\\"}' % ACL2_ADMIN,
}


def case_java_acl2(s, broker_enforces=False):
    """ACL 2.0 through the proxy: users and ACLs made on the broker (AUTH_CREATE_USER/AUTH_CREATE_ACL through our
    mqadmin), the proxy reads them (AUTH_GET_USER/AUTH_GET_ACL, signed as the super user proxyadmin) and checks
    the Java SDK's requests: alice sends and receives; no credentials, a wrong password, a Deny policy, a
    disabled user, an unknown user and a group without a policy are refused as UNAUTHORIZED with Apache's texts.
    With `broker_enforces` the broker checks ACL 2.0 too: the proxy's requests pass as proxyadmin's."""
    topic, group, other = "JavaAcl2", "GID_acl2", "GID_acl2_other"
    creds = ACL2_ADMIN if broker_enforces else None
    if broker_enforces:
        resp = remoting.request(s.cluster.broker_addr, remoting.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": 0})
        check(resp.code != 0, "the broker answered an unsigned request: ACL 2.0 is not on")
        fields = signed({"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4,
                         "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"},
                        *ACL2_ADMIN)
        resp = remoting.request(s.cluster.broker_addr, 17, fields)
        check(resp.code == 0, "signed topic creation answered %d %r" % (resp.code, resp.remark))
        s.cluster.wait_route(topic)
    else:
        s.cluster.create_topic(topic)
        auth_admin(s, "createUser", "-u", ACL2_ADMIN[0], "-p", ACL2_ADMIN[1], "-t", "Super")
    auth_admin(s, "createUser", "-u", "alice", "-p", "alicepw", "-t", "Normal", creds=creds)
    auth_admin(s, "createUser", "-u", "bob", "-p", "bobpw", "-t", "Normal", creds=creds)
    auth_admin(s, "createUser", "-u", "carol", "-p", "carolpw", "-t", "Normal", "-s", "disable", creds=creds)
    auth_admin(s, "createAcl", "-s", "User:alice", "-r", "Topic:%s" % topic, "-a", "Pub,Sub", "-d", "Allow",
               creds=creds)
    auth_admin(s, "createAcl", "-s", "User:alice", "-r", "Group:%s" % group, "-a", "Sub", "-d", "Allow",
               creds=creds)
    auth_admin(s, "createAcl", "-s", "User:bob", "-r", "Topic:%s" % topic, "-a", "Pub,Sub", "-d", "Deny",
               creds=creds)
    argv = [JAVA_SH, JAVA_SET, "-cp", JAVA_CLASSES, "JavaAcl2", s.endpoint, topic, group, other]
    out = java_out(s._scenario("Java", "java-acl2", argv, 240, env={"JAVA_OPT_EXT": "-Duser.home=%s" % s.workdir},
                               cwd=s.workdir))
    check(out["sent"] == 5 and out["received"] == 5, "alice: %s" % out)
    want = {
        "no_credentials": "username cannot be null.",
        "wrong_password": "check signature failed.",
        "deny_policy": "User:bob has no permission to access Topic:%s from 127.0.0.1, the decision is deny." % topic,
        "disabled_user": "User:carol is disabled.",
        "unknown_user": "User:dave is not found.",
    }
    for case, text in want.items():
        check(text in out["refused"][case], "%s refused as %r, want %r" % (case, out["refused"][case], text))
    with open(os.path.join(s.workdir, "proxy.log")) as f:
        log = f.read()
    text = "User:alice has no permission to access Group:%s from 127.0.0.1, no matched policies." % other
    check(text in log, "the proxy did not refuse alice's settings for %s (%s)" % (other, out["refused"]["other_group"]))
    # A change on the broker reaches the proxy after its cache refresh (1 s here): carol enabled and allowed.
    auth_admin(s, "updateUser", "-u", "carol", "-s", "enable", creds=creds)
    auth_admin(s, "createAcl", "-s", "User:carol", "-r", "Topic:%s" % topic, "-a", "Pub,Sub", "-d", "Allow",
               creds=creds)
    argv = [JAVA_SH, JAVA_SET, "-cp", JAVA_CLASSES, "JavaAcl2", "refresh", s.endpoint, topic]
    out = java_out(s._scenario("Java", "java-acl2-refresh", argv, 120,
                               env={"JAVA_OPT_EXT": "-Duser.home=%s" % s.workdir}, cwd=s.workdir))
    print("    carol allowed after %d attempts" % out["attempts"])


TYPE_KINDS = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")
TYPE_TOPICS = (("Normal", "NORMAL"), ("Fifo", "FIFO"), ("Delay", "DELAY"), ("Tx", "TRANSACTION"), ("Mixed", "MIXED"))


def java_types(s, prefix):
    """java/JavaTypes.java against topics <prefix>Normal, Fifo, Delay, Tx, Mixed and Flip (MIXED): its outcomes."""
    for suffix, mtype in TYPE_TOPICS + (("Flip", "MIXED"),):
        create_topic(s, prefix + suffix, mtype)
    argv = [JAVA_SH, JAVA_SET, "-cp", JAVA_CLASSES, "JavaTypes", s.endpoint, prefix, mqadmin(),
            s.cluster.namesrv_addr]
    out = s._scenario("Java", "java-types", argv, 150, env={"JAVA_OPT_EXT": "-Duser.home=%s" % s.workdir},
                      cwd=s.workdir)
    return java_out(out)


def case_java_types(s):
    """Topic message types (`message.type`), Apache's proxy's rules: each type is accepted by its own topic and
    by a MIXED one. Routes advertise a topic's type, so the SDK refuses a wrong one itself; with the SDK's route
    still saying MIXED after the topic was turned NORMAL, then FIFO, the proxy refuses every other type with
    MESSAGE_PROPERTY_CONFLICT_WITH_TYPE (40014) and Apache's text."""
    got = java_types(s, "JType")
    for suffix, mtype in TYPE_TOPICS:
        row = got["sdk"]["JType" + suffix]
        for kind in TYPE_KINDS:
            outcome = row[kind]
            if mtype in (kind, "MIXED"):
                check(outcome == "ok", "%s to the %s topic failed: %s" % (kind, mtype, outcome))
            else:
                check("IllegalArgumentException" in outcome and "accept" in outcome,
                      "%s to the %s topic: %s (want the SDK's own refusal from the route's types)"
                      % (kind, mtype, outcome))
    for mtype, row in got["proxy"].items():
        for kind in TYPE_KINDS:
            outcome = row[kind]
            if kind == mtype:
                check(outcome == "ok", "%s to the topic turned %s failed: %s" % (kind, mtype, outcome))
            else:
                text = ("TopicMessageType validate failed, the expected type is %s, but actual type is %s"
                        % (mtype, kind))
                check("response-code=40014" in outcome and text in outcome,
                      "%s to the topic turned %s: %s (want 40014 %r)" % (kind, mtype, outcome, text))
    print("    SDK refusals per route, proxy refusals 40014 after NORMAL and FIFO: %s" % json.dumps(got["proxy"])[:300])


def case_java_types_unchecked(s):
    """`enableTopicMessageTypeCheck = false`: every type to every topic is sent (the settings told the SDK not to
    check, and the proxy does not either)."""
    got = java_types(s, "JFree")
    for part in ("sdk", "proxy"):
        for where, row in got[part].items():
            for kind in TYPE_KINDS:
                check(row[kind] == "ok", "%s %s to %s refused with the check off: %s" % (part, kind, where, row[kind]))


def java_unavailable():
    """None when the Java cases can run, else why not (tests/sdk5/setup.sh decides)."""
    try:
        with open(JAVA_AVAILABLE) as f:
            why = f.read().strip()
    except OSError:
        return "tests/sdk5/setup.sh has not prepared the Java SDK (no %s)" % os.path.relpath(JAVA_AVAILABLE, REPO)
    return None if why == "yes" else why


def signed(fields, ak="sdk5admin", sk="sdk5secret"):
    """`fields` signed as RocketMQ's AclClientRPCHook signs (sorted values), computed here independently."""
    fields = dict((k, str(v)) for k, v in fields.items())
    fields["AccessKey"] = ak
    content = "".join(fields[k] for k in sorted(fields)).encode()
    fields["Signature"] = base64.b64encode(hmac.new(sk.encode(), content, hashlib.sha1).digest()).decode()
    return fields


def signed_max_offset(addr, topic, queue):
    resp = remoting.request(addr, remoting.GET_MAX_OFFSET, signed({"topic": topic, "queueId": queue}))
    check(resp.code == 0, "GET_MAX_OFFSET answered %d %r" % (resp.code, resp.remark))
    return int(resp.ext_fields.get("offset", 0))


def acl_setup(workdir):
    """Broker and proxy read the same plain_acl.yml."""
    conf = os.path.join(workdir, "conf")
    os.makedirs(conf, exist_ok=True)
    path = os.path.join(conf, "plain_acl.yml")
    with open(path, "w") as f:
        f.write(ACL_YML)
    return {"aclEnable": "true", "aclFile": path}, {"aclEnable": "true", "aclFile": '"%s"' % path}


# name -> (function, broker config, proxy config[, shardRouting])
CASES = {
    "py_send_stored": (case_send_stored, None, None),
    "grpc_batch_ack": (case_batch_ack, None, None),
    "py_push": (case_push, None, None),
    "py_dlq": (case_dlq, None, None),
    "py_kill9_sync_flush": (case_kill9, {"flushDiskType": "SYNC_FLUSH"}, None),
    "py_tx_check_back": (case_orphan, {"transactionTimeOut": "2000", "transactionCheckInterval": "1000"}, None),
    "py_normal": (case_normal, {"transactionTimeOut": "2000"}, None),
    # One broker over two shards (`forward`): every receive reaches every queue, so no receive waits out
    # its long polling on a broker that holds none of the message groups.
    "py_fifo": (case_fifo, None, None, "forward"),
    "py_fifo_dlq": (case_fifo_dlq, None, None, "forward"),
    "py_transaction": (case_transaction, {"transactionTimeOut": "2000", "transactionCheckInterval": "1000"}, None),
    "py_redelivery": (case_redelivery, None, None),
    # A delayed and a plain message to one topic: MIXED.
    "py_delay": (case_delay, {"enableMixedMessageType": "true"}, None),
    "py_delay_refused": (case_delay_refused, {"timerWheelEnable": "false"}, None),
    "py_bad_handle": (case_bad_handle, None, None),
    "py_acl": (case_acl, "acl", None),
    "rust_normal": (case_rust_normal, None, None),
    "rust_fifo": (case_rust_fifo, None, None, "forward"),
    "rust_redelivery": (case_rust_redelivery, None, None),
    "rust_transaction": (case_rust_transaction,
                         {"transactionTimeOut": "2000", "transactionCheckInterval": "1000"}, None),
    "node_normal": (case_node_normal, None, None),
    "node_fifo": (case_node_fifo, None, None, "forward"),
    "node_redelivery": (case_node_redelivery, None, None),
    "node_push": (case_node_push, None, None),
    "node_dlq": (case_node_dlq, None, None),
    "node_kill9_sync_flush": (case_node_kill9, {"flushDiskType": "SYNC_FLUSH"}, None),
    "tls_permissive": (case_tls_permissive, None, "tls:permissive"),
    "tls_enforcing": (case_tls_enforcing, None, "tls:enforcing"),
    "node_transaction": (case_node_transaction,
                         {"transactionTimeOut": "2000", "transactionCheckInterval": "1000"}, None),
    # The Java SDK (skipped, and counted as such, when tests/sdk5/setup.sh could not install it).
    "java_normal": (case_java_normal, None, None),
    "java_normal_plaintext": (case_java_normal_plaintext, None, None),
    "java_tls_enforcing": (case_java_tls_enforcing, None, {"tlsServerMode": '"enforcing"'}),
    "java_fifo": (case_java_fifo, None, None, "forward"),
    # `forward`: every receive sees both queues, so the message sent without a delivery time is received at
    # once (the scenario checks it comes before the delayed one's time).
    "java_delay": (case_java_delay, {"timerWheelEnable": "true", "enableMixedMessageType": "true"}, None, "forward"),
    # `forward` as java_delay (broker/tests/recall.rs covers recalls on shard-brokers).
    "java_recall": (case_java_recall, {"timerWheelEnable": "true", "recallMessageEnable": "true"},
                    {"metricsExporterType": '"PROM"', "proxyName": '"proxy-t"', "proxyClusterName": '"SdkCluster"'},
                    "forward"),
    "java_transaction": (case_java_transaction,
                         {"transactionTimeOut": "2000", "transactionCheckInterval": "1000"}, None),
    "java_push": (case_java_push, None, None),
    "java_fifo_push": (case_java_fifo_push, None, None, "forward"),
    "java_redelivery": (case_java_redelivery, None, None),
    "java_dlq": (case_java_dlq, None, None),
    "java_acl": (case_java_acl, "acl", None),
    # ACL 2.0 checked by the proxy (the broker keeps the users and ACLs).
    "java_acl2": (case_java_acl2, None, ACL2_PROXY),
    # ... and the broker enforcing ACL 2.0 as well: the proxy signs as its super user.
    "java_acl2_broker": (lambda s: case_java_acl2(s, broker_enforces=True), ACL2_BROKER, ACL2_PROXY),
    # Topics' message types: MIXED topics need the broker's enableMixedMessageType, delayed messages its timer;
    # the proxy asks a topic's type again after 1 s.
    "java_types": (case_java_types, {"enableMixedMessageType": "true", "timerWheelEnable": "true"},
                   {"topicConfigCacheRefreshSeconds": "1"}),
    "java_types_unchecked": (case_java_types_unchecked, {"enableMixedMessageType": "true", "timerWheelEnable": "true"},
                             {"topicConfigCacheRefreshSeconds": "1", "enableTopicMessageTypeCheck": "false"}),
}


# Cases that run alone under `-j N`, after the others: their scenarios race a short clock that a loaded
# machine stretches (a message held invisible for 2 s must be extended or acked within it; a message without
# delivery time must arrive before a delayed one due 4 s after the send, a JVM start included).
EXCLUSIVE = {"py_redelivery", "rust_redelivery", "node_redelivery", "java_redelivery", "java_fifo_push",
             "java_delay", "java_recall"}


def run_case(name, keep):
    """One case: its cluster and proxy, the scenario, its PASS or FAIL line; True if it passed."""
    fn, broker_cfg, proxy_cfg, *routing = CASES[name]
    workdir = tempfile.mkdtemp(prefix="sdk5-%s-" % name)
    if broker_cfg == "acl":
        broker_cfg, proxy_cfg = acl_setup(workdir)
    ca = None
    if isinstance(proxy_cfg, str) and proxy_cfg.startswith("tls:"):
        proxy_cfg, ca = tls_setup(workdir, proxy_cfg[len("tls:"):])
    started = time.time()
    setup = None
    try:
        setup = Setup(workdir, broker_cfg, proxy_cfg, *routing)
        setup.ca = ca
        fn(setup)
        print("PASS %s (%.1fs)" % (name, time.time() - started))
        if not keep:
            setup.close()
            setup = None
            shutil.rmtree(workdir, ignore_errors=True)
        return True
    except (CaseFailure, OSError) as e:
        print("FAIL %s (%.1fs): %s" % (name, time.time() - started, e))
        print("     proxy log:\n" + harness.tail(os.path.join(workdir, "proxy.log"), 20))
        print("     kept %s" % workdir)
        return False
    finally:
        if setup is not None:
            setup.close()
        harness.stop_everything()
        sys.stdout.flush()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt()


def run_one(name, keep):
    """`--run-one NAME`: the case named exactly NAME, as a child of `-j N`; exit status 0 if it passed."""
    if name not in CASES:
        print("FAIL %s: no such case" % name)
        return 1
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return 0 if run_case(name, keep) else 1
    except KeyboardInterrupt:
        harness.stop_everything()
        print("INTERRUPTED %s: every started process stopped" % name)
        return 130


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                    help="run up to N cases at once (EXCLUSIVE ones alone, after the others); default 1")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs of passing cases")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--run-one", metavar="NAME", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_one:
        return run_one(args.run_one, args.keep)
    if args.jobs < 1:
        ap.error("-j must be at least 1")
    names = [n for n in CASES if not args.k or any(k in n for k in args.k)]
    if args.list:
        print("\n".join(n + (" (exclusive)" if n in EXCLUSIVE else "") for n in names))
        return 0
    failed = []
    skipped = []
    runnable = []
    for name in names:
        if name.startswith("java_") and java_unavailable():
            skipped.append(name)
            print("SKIPPED %s: %s" % (name, java_unavailable()))
        else:
            runnable.append(name)
    sys.stdout.flush()
    try:
        if args.jobs > 1:
            signal.signal(signal.SIGTERM, _raise_interrupt)
            argv = [sys.executable, os.path.abspath(__file__)] + (["--keep"] if args.keep else [])

            def done(name, code):
                if code != 0:
                    failed.append(name)
            shared = [n for n in runnable if n not in EXCLUSIVE]
            started = time.time()
            parallel.run_all(shared, args.jobs, lambda name: argv + ["--run-one", name], done)
            runnable = [n for n in runnable if n in EXCLUSIVE]
            if runnable:
                print("sdk5: %d exclusive case(s), one at a time (the %d others took %.0fs, %d at a time)"
                      % (len(runnable), len(shared), time.time() - started, args.jobs))
        for name in runnable:
            if not run_case(name, args.keep):
                failed.append(name)
    except KeyboardInterrupt:
        harness.stop_everything()
        print("interrupted; every started process stopped")
        return 130
    print("%d passed, %d failed%s%s" % (len(names) - len(failed) - len(skipped), len(failed),
                                         (", %d skipped" % len(skipped)) if skipped else "",
                                         (": " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

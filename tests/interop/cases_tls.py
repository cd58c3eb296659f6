"""TLS interop cases: Apache's Java client with `-Dtls.enable=true` (its Netty speaks TLS and, in test mode,
trusts any certificate) sends and consumes through our name server and broker, in `permissive` mode (the
default: TLS and plaintext clients side by side) and `enforcing` mode (plaintext clients refused by the name
server and by the broker; the broker registers over TLS with `tls.enable`). The programs are
`java/Acl2Client.java` with user "-" (unsigned)."""

import os

import harness
import remoting
from caselib import case, check

TOPIC, GROUP = "TlsTopic", "tls_group"
TLS_JVM = {"JAVA_OPT_EXT": "-Dtls.enable=true"}


class TlsCluster(harness.Cluster):
    """The usual cluster with `tls.*` keys: `namesrv_tls` in the name server's -c file, `broker_tls` in the
    broker's config (quoted TOML keys: the names have dots)."""

    def __init__(self, workdir, namesrv_tls, broker_tls):
        super().__init__(workdir)
        self.namesrv_tls = namesrv_tls
        self.broker_tls = broker_tls

    def start_namesrv(self, timeout):
        path = os.path.join(self.workdir, "namesrv.properties")
        with open(path, "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in self.namesrv_tls.items()))
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info"), HOME=self.workdir,
                   ROCKETMQ_HOME=self.workdir)
        argv = [self.namesrv_bin, "--listen", self.namesrv_addr, "-c", path]
        self.namesrv = harness.Proc("namesrv", argv, os.path.join(self.workdir, "namesrv.log"), env=env,
                                    cwd=self.workdir)
        if not harness.wait_port(self.namesrv_port, timeout):
            raise harness.CaseFailure("name server did not listen on %s within %ss" % (self.namesrv_addr, timeout))

    def _broker_config(self):
        path = super()._broker_config()
        with open(path, "a") as f:
            f.write("".join('"%s" = "%s"\n' % kv for kv in self.broker_tls.items()))
        return path


def start(ctx, namesrv_tls, broker_tls):
    cluster = TlsCluster(os.path.join(ctx.workdir, "cluster"), namesrv_tls, broker_tls)
    os.makedirs(cluster.workdir, exist_ok=True)
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    cluster.create_topic(TOPIC)
    return cluster


def send(ctx, lang, name, count, prefix, env):
    return ctx.clients.run(lang, name, ["Acl2Client", "send", ctx.cluster.namesrv_addr, TOPIC, "-", "-",
                                        str(count), prefix], 90, env=env)


def require_sent(result, count, what):
    sent = [r for r in result.of_kind("sent") if r.get("status") == "SEND_OK"]
    check(len(sent) == count and not result.of_kind("error"),
          "%s: %d of %d sent: %s" % (what, len(sent), count, result.describe()))


def consume(ctx, count, prefixes, env):
    result = ctx.clients.run("java", "java-tls-consume", ["Acl2Client", "consume", ctx.cluster.namesrv_addr,
                                                          TOPIC, GROUP, "-", "-", str(count), "60"], 90, env=env)
    bodies = {r.get("body") for r in result.of_kind("recv")}
    want = {"%s-%d" % (p, i) for p, n in prefixes.items() for i in range(n)}
    check(want <= bodies, "TLS consumer missed %s (got %d bodies): %s"
          % (sorted(want - bodies)[:5], len(bodies), result.describe()))


@case("java_tls_permissive", timeout=300)
def java_tls_permissive(ctx):
    # No TLS key at all: permissive is the default, as in Apache.
    start(ctx, {}, {})
    require_sent(send(ctx, "java", "java-tls-send", 10, "tls", TLS_JVM), 10, "TLS Java client (4.9.8)")
    require_sent(send(ctx, "java", "java-plain-send", 10, "plain", {}), 10, "plaintext Java client")
    require_sent(send(ctx, "java5", "java5-tls-send", 5, "tls5", TLS_JVM), 5, "TLS Java client (5.5.0)")
    consume(ctx, 25, {"tls": 10, "plain": 10, "tls5": 5}, TLS_JVM)


@case("java_tls_enforcing", timeout=300)
def java_tls_enforcing(ctx):
    remoting.USE_TLS = True
    try:
        c = start(ctx, {"tls.server.mode": "enforcing"},
                  {"tls.server.mode": "enforcing", "tls.enable": "true"})
        require_sent(send(ctx, "java", "java-tls-send", 20, "tls", TLS_JVM), 20, "TLS Java client (4.9.8)")
        require_sent(send(ctx, "java5", "java5-tls-send", 5, "tls5", TLS_JVM), 5, "TLS Java client (5.5.0)")
        consume(ctx, 25, {"tls": 20, "tls5": 5}, TLS_JVM)
        # A plaintext Java client gets no route from the name server: nothing is sent.
        plain = send(ctx, "java", "java-plain-send", 2, "plain", {})
        check(not [r for r in plain.of_kind("sent") if r.get("status") == "SEND_OK"],
              "a plaintext Java client sent under enforcing: %s" % plain.describe())
        # The broker's ports close a plaintext connection too (listenPort and the fast port).
        remoting.USE_TLS = False
        fast = "127.0.0.1:%d" % (c.broker_port - 2)
        for addr in (c.broker_addr, fast):
            try:
                remoting.request(addr, remoting.GET_BROKER_CLUSTER_INFO, timeout=3.0)
                refused = False
            except (OSError, remoting.RemotingError):
                refused = True
            check(refused, "the broker at %s answered a plaintext request under enforcing" % addr)
        remoting.USE_TLS = True
        ctx.note("plaintext Java client: %s" % (plain.describe()[:300],))
    finally:
        remoting.USE_TLS = False

"""ACL 2.0 interop case: a broker with `authenticationEnabled` and `authorizationEnabled`, its first super
user from `initAuthenticationUser`, users and ACLs made with our mqadmin (signing as that super user, as
Apache's mqadmin does with tools.yml), and Apache's Java client (4.9.8, and 5.x for a send) signing as
each user (AclClientRPCHook). Allowed sends and consumption go through; each refusal carries Apache's
code (NO_PERMISSION, 16) and text; the users survive a SIGKILL of the broker."""

import os
import subprocess

import harness
import remoting
from caselib import case, check
from cases_acl import NO_PERMISSION, create_topic_fields, signed_request

ROOT = ("rocketmq", "12345678")
TOPIC, GROUP = "Acl2Topic", "acl2_group"
COUNT = 5


class Acl2Cluster(harness.Cluster):
    """The usual test cluster with ACL 2.0 on (TOML literal strings hold the JSON values)."""

    def _broker_config(self):
        path = super()._broker_config()
        with open(path, "a") as f:
            f.write("authenticationEnabled = true\nauthorizationEnabled = true\n")
            f.write("initAuthenticationUser = '{\"username\":\"%s\",\"password\":\"%s\"}'\n" % ROOT)
        return path


def mqadmin(cluster, args, keys=ROOT):
    """Our mqadmin signing with `keys` (None: unsigned); (exit code, output)."""
    bin_dir = os.path.dirname(harness.binaries()[1])
    env = dict(os.environ)
    env.pop("ROCKETMQ_ACCESS_KEY", None)
    env.pop("ROCKETMQ_SECRET_KEY", None)
    env["ROCKETMQ_HOME"] = cluster.workdir
    if keys:
        env["ROCKETMQ_ACCESS_KEY"], env["ROCKETMQ_SECRET_KEY"] = keys
    argv = [os.path.join(bin_dir, "mqadmin")] + args + ["-n", cluster.namesrv_addr, "-b", cluster.broker_addr]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout + done.stderr


def admin_ok(cluster, args):
    code, out = mqadmin(cluster, args)
    check(code == 0, "mqadmin %s failed: %s" % (" ".join(args), out))


def send(ctx, lang, user, password, prefix, count=1):
    result = ctx.clients.run(lang, "java-acl2-send-%s" % prefix, [
        "Acl2Client", "send", ctx.cluster.namesrv_addr, TOPIC, user, password, str(count), prefix], 90)
    check(not result.of_kind("error") and result.code == 0, "Acl2Client send as %s: %s"
          % (user, result.describe()))
    return result


def expect_refused(ctx, user, password, prefix, text):
    result = send(ctx, "java", user, password, prefix)
    refused = result.of_kind("refused")
    check(len(refused) == 1 and refused[0]["code"] == NO_PERMISSION and text in refused[0]["message"],
          "a send as %s was not refused with NO_PERMISSION and %r: %s" % (user, text, result.describe()))


@case("java_acl2_users_and_acls_protect_the_broker", timeout=300)
def acl2_users_and_acls(ctx):
    cluster = Acl2Cluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    # Unsigned admin requests are refused; the super user's are not.
    resp = remoting.request(cluster.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields(TOPIC))
    check(resp.code == NO_PERMISSION and "username cannot be null" in (resp.remark or ""),
          "an unsigned topic creation answered %d %r" % (resp.code, resp.remark))
    resp = signed_request(cluster.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields(TOPIC), ROOT)
    check(resp.code == 0, "the super user's topic creation answered %d %r" % (resp.code, resp.remark))
    cluster.wait_route(TOPIC)

    code, out = mqadmin(cluster, ["createUser", "-u", "alice", "-p", "alice-pw"], keys=None)
    check(code != 0, "an unsigned mqadmin createUser succeeded: %s" % out)
    for user in ("alice", "bob", "carol", "dave"):
        admin_ok(cluster, ["createUser", "-u", user, "-p", user + "-pw"])
    admin_ok(cluster, ["updateUser", "-u", "carol", "-s", "disable"])
    admin_ok(cluster, ["createAcl", "-s", "User:alice", "-r", "Topic:" + TOPIC, "-a", "Pub,Sub", "-d", "Allow"])
    admin_ok(cluster, ["createAcl", "-s", "User:alice", "-r", "Group:" + GROUP, "-a", "Sub", "-d", "Allow"])
    admin_ok(cluster, ["createAcl", "-s", "User:bob", "-r", "Topic:Acl2*", "-a", "All", "-d", "Deny"])
    admin_ok(cluster, ["createAcl", "-s", "User:carol", "-r", "Topic:" + TOPIC, "-a", "Pub", "-d", "Allow"])
    admin_ok(cluster, ["createAcl", "-s", "User:dave", "-r", "Topic:" + TOPIC, "-a", "Pub", "-d", "Allow",
                       "-i", "10.9.9.0/24"])

    result = send(ctx, "java", "alice", "alice-pw", "alice", COUNT)
    sent = [r for r in result.of_kind("sent") if r["status"] == "SEND_OK"]
    check(len(sent) == COUNT, "alice's sends: %s" % result.describe())
    result = send(ctx, "java5", "alice", "alice-pw", "alice5")
    check([r["status"] for r in result.of_kind("sent")] == ["SEND_OK"], "alice's 5.x send: %s" % result.describe())

    expect_refused(ctx, "-", "-", "anonymous", "username cannot be null")
    expect_refused(ctx, "alice", "not-her-password", "wrongpw", "check signature failed")
    expect_refused(ctx, "nobody", "pw", "nobody", "User:nobody is not found")
    expect_refused(ctx, "bob", "bob-pw", "bob", "the decision is deny")
    expect_refused(ctx, "carol", "carol-pw", "carol", "User:carol is disabled")
    expect_refused(ctx, "dave", "dave-pw", "dave", "no matched policies")

    result = ctx.clients.run("java", "java-acl2-consume", [
        "Acl2Client", "consume", cluster.namesrv_addr, TOPIC, GROUP, "alice", "alice-pw", str(COUNT + 1), "60"], 90)
    got = {r["body"] for r in result.of_kind("recv")}
    want = {"alice-%d" % i for i in range(COUNT)} | {"alice5-0"}
    check(got == want, "alice consumed %s, not %s: %s" % (sorted(got), sorted(want), result.describe()))
    # Bob may not read the group's queues.
    result = ctx.clients.run("java", "java-acl2-consume-bob", [
        "Acl2Client", "consume", cluster.namesrv_addr, TOPIC, GROUP, "bob", "bob-pw", "1", "8"], 60)
    check(not result.of_kind("recv"), "bob consumed despite his Deny: %s" % result.describe())

    # Users and ACLs were stored before they were answered: they survive a SIGKILL.
    cluster.kill_broker()
    cluster.start_broker()
    result = send(ctx, "java", "alice", "alice-pw", "after-kill")
    check([r["status"] for r in result.of_kind("sent")] == ["SEND_OK"],
          "alice's send after the broker's SIGKILL: %s" % result.describe())
    expect_refused(ctx, "bob", "bob-pw", "bob-after-kill", "the decision is deny")


PLAIN_ACL = """
accounts:
  - accessKey: v1producer
    secretKey: v1-secret
    defaultTopicPerm: DENY
    topicPerms:
      - %s=PUB
  - accessKey: v1admin
    secretKey: v1-admin-secret
    admin: true
""" % TOPIC


class MigratingCluster(harness.Cluster):
    """ACL 2.0 on, its users migrated from a plain_acl.yml at the first start."""

    def _broker_config(self):
        path = super()._broker_config()
        acl_file = os.path.join(self.workdir, "conf", "plain_acl.yml")
        os.makedirs(os.path.dirname(acl_file), exist_ok=True)
        with open(acl_file, "w") as f:
            f.write(PLAIN_ACL)
        with open(path, "a") as f:
            f.write("authenticationEnabled = true\nauthorizationEnabled = true\n")
            f.write("migrateAuthFromV1Enabled = true\naclFile = \"%s\"\n" % acl_file)
        return path


@case("java_acl2_plain_acl_accounts_migrate_to_users_and_acls", timeout=180)
def acl2_migration(ctx):
    cluster = MigratingCluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    admin = ("v1admin", "v1-admin-secret")
    resp = signed_request(cluster.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields(TOPIC), admin)
    check(resp.code == 0, "the migrated admin's topic creation answered %d %r" % (resp.code, resp.remark))
    resp = signed_request(cluster.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("Other"), admin)
    check(resp.code == 0, "the migrated admin's topic creation answered %d %r" % (resp.code, resp.remark))
    cluster.wait_route(TOPIC)
    cluster.wait_route("Other")
    code, out = mqadmin(cluster, ["listUser"], keys=admin)
    check(code == 0 and "v1producer" in out and "Super" in out, "listUser after the migration: %s" % out)
    result = send(ctx, "java", "v1producer", "v1-secret", "v1", 2)
    check([r["status"] for r in result.of_kind("sent")] == ["SEND_OK"] * 2,
          "the migrated producer's sends: %s" % result.describe())
    # Its default topic permission was DENY: another topic is refused.
    result = ctx.clients.run("java", "java-acl2-send-v1-other", [
        "Acl2Client", "send", cluster.namesrv_addr, "Other", "v1producer", "v1-secret", "1", "v1other"], 90)
    refused = result.of_kind("refused")
    check(len(refused) == 1 and refused[0]["code"] == NO_PERMISSION,
          "the migrated producer's send to a denied topic: %s" % result.describe())

"""ACL interop cases: a broker with `aclEnable=true` and a plain_acl.yml, driven by the official C++ client
(PyPI rocketmq 0.4.4, `set_session_credentials`) and by raw requests signed here with Python's own hmac."""

import base64
import hashlib
import hmac
import os
import time

import harness
import remoting
from caselib import case, check, check_received, require_sent

HERE = os.path.dirname(os.path.abspath(__file__))
ACL_PY_CLIENT = os.path.join(HERE, "acl_py_client.py")
NO_PERMISSION = 16

ADMIN = ("RocketMQAdmin", "admin-secret-1")
USER = ("aclUser01", "user-secret-1")


def acl_yml(user_secret):
    return """
accounts:
  - accessKey: %s
    secretKey: %s
    admin: true
  - accessKey: %s
    secretKey: %s
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB|SUB
      - AclDenied=DENY
    groupPerms:
      - AclDeniedGroup=DENY
""" % (ADMIN[0], ADMIN[1], USER[0], user_secret)


class AclCluster(harness.Cluster):
    """The usual test cluster, with ACL switched on and the rules in workdir/conf/plain_acl.yml."""

    def __init__(self, workdir):
        super().__init__(workdir)
        self.acl_file = os.path.join(workdir, "conf", "plain_acl.yml")

    def write_acl(self, text):
        os.makedirs(os.path.dirname(self.acl_file), exist_ok=True)
        tmp = self.acl_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.acl_file)

    def _broker_config(self):
        path = super()._broker_config()
        with open(path, "a") as f:
            f.write('aclEnable = true\naclFile = "%s"\n' % self.acl_file)
        return path


def start_acl_cluster(ctx):
    cluster = AclCluster(os.path.join(ctx.workdir, "cluster"))
    os.makedirs(cluster.workdir, exist_ok=True)
    cluster.write_acl(acl_yml(USER[1]))
    ctx.cluster = cluster
    ctx.clients = harness.Clients(ctx.workdir, cluster)
    cluster.start()
    return cluster


def signed_request(addr, code, ext, keys, body=b""):
    """A request signed the way RocketMQ's AclClientRPCHook does, computed here independently."""
    fields = dict((k, str(v)) for k, v in ext.items())
    fields["AccessKey"] = keys[0]
    content = "".join(fields[k] for k in sorted(fields)).encode("utf-8") + body
    fields["Signature"] = base64.b64encode(hmac.new(keys[1].encode(), content, hashlib.sha1).digest()).decode()
    return remoting.request(addr, code, fields, body)


def create_topic_fields(topic):
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}


def run_acl_client(ctx, name, keys, args, timeout):
    env = {"ACL_ACCESS_KEY": keys[0], "ACL_SECRET_KEY": keys[1]}
    ctx.clients.count += 1
    base = os.path.join(ctx.workdir, "client-%02d-%s" % (ctx.clients.count, name))
    argv = [harness.VENV_PYTHON, ACL_PY_CLIENT, "--namesrv", ctx.cluster.namesrv_addr] + list(args)
    proc = harness.Proc(name, argv, base + ".stderr", env=ctx.clients._env(env), cwd=ctx.clients.home,
                        stdout_path=base + ".jsonl")
    proc.base = base
    result = ctx.clients.finish(proc, timeout)
    result.pid = proc.pid
    return result


def produce(ctx, name, keys, topic, prefix, count, timeout=60):
    return run_acl_client(ctx, name, keys, ["produce", "--topic", topic, "--prefix", prefix, "--count", str(count),
                                            "--mode", "sync"], timeout)


def require_refused(ctx, result, what, reason):
    """Every send failed, and the broker's answer was NO_PERMISSION with `reason` in its remark."""
    check(not result.of_kind("sent"), "%s: a send succeeded: %s" % (what, result.of_kind("sent")[:1]))
    check(result.of_kind("send_error"), "%s: no send error reported: %s" % (what, result.describe()))
    log = ctx.clients.cpp_log(result.pid)
    answers = [line for line in log.splitlines() if "error code:%d" % NO_PERMISSION in line]
    check(answers and all(reason in line for line in answers),
          "%s: the client log shows no NO_PERMISSION answer saying %r (answers: %s)" % (what, reason, answers[:2]))


@case("acl_python_signed_clients", timeout=240)
def acl_python(ctx):
    c = start_acl_cluster(ctx)
    # Unsigned and non-admin topic creation is refused with NO_PERMISSION and a reason; admin may.
    unsigned = remoting.request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclTopic"))
    check(unsigned.code == NO_PERMISSION, "unsigned UPDATE_AND_CREATE_TOPIC answered %d %r"
          % (unsigned.code, unsigned.remark))
    by_user = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclTopic"), USER)
    check(by_user.code == NO_PERMISSION and "admin" in (by_user.remark or ""),
          "non-admin topic creation answered %d %r" % (by_user.code, by_user.remark))
    for topic in ("AclTopic", "AclDenied"):
        resp = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields(topic), ADMIN)
        check(resp.code == 0, "admin topic creation of %s answered %d %r" % (topic, resp.code, resp.remark))
        c.wait_route(topic)

    n = 20
    sent = produce(ctx, "acl-produce-ok", USER, "AclTopic", "aclok", n)
    require_sent(sent, "aclok", n)
    require_refused(ctx, produce(ctx, "acl-produce-badsecret", (USER[0], "not-the-secret"), "AclTopic", "aclbad", 3),
                    "wrong secret key", "Check signature failed")
    require_refused(ctx, produce(ctx, "acl-produce-unknown", ("nobodyAtAll", USER[1]), "AclTopic", "aclunknown", 3),
                    "unknown access key", "No acl config for nobodyAtAll")
    require_refused(ctx, produce(ctx, "acl-produce-denied", USER, "AclDenied", "acldenied", 3), "DENY topic",
                    "topic=AclDenied")

    res = run_acl_client(ctx, "acl-push", USER, ["push", "--topic", "AclTopic", "--group", "AclGroup", "--timeout",
                                                 "60", "--linger", "1", "--expect", "aclok:%d" % n], 100)
    check_received(ctx, res, {"aclok": n}, what="signed PushConsumer")

    # Hot reload: a new secret for the user takes effect without a restart; the old one stops working.
    c.write_acl(acl_yml("user-secret-2"))
    deadline = time.monotonic() + 20
    while True:
        resp = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("X"),
                              (USER[0], "user-secret-2"))
        if "signature" not in (resp.remark or ""):
            break
        check(time.monotonic() < deadline, "the changed plain_acl.yml was not picked up within 20s")
        time.sleep(0.3)
    # Each broker shard re-reads the file on its own, at most every 0.5 s: give all of them time.
    time.sleep(1.5)
    require_refused(ctx, produce(ctx, "acl-produce-oldsecret", USER, "AclTopic", "aclold", 3),
                    "old secret after reload", "Check signature failed")
    require_sent(produce(ctx, "acl-produce-newsecret", (USER[0], "user-secret-2"), "AclTopic", "aclnew", 5),
                 "aclnew", 5)


def run_rust(ctx, name, keys, args, timeout=90, serialize=None):
    env = {"ACL_ACCESS_KEY": keys[0], "ACL_SECRET_KEY": keys[1]}
    if serialize:
        env["ROCKETMQ_SERIALIZE_TYPE"] = serialize
    return ctx.clients.run("rust", name, args, timeout, env=env)


@case("acl_rust_client_hook", timeout=300)
def acl_rust(ctx):
    c = start_acl_cluster(ctx)
    resp = signed_request(c.broker_addr, remoting.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclTopic"), ADMIN)
    check(resp.code == 0, "admin topic creation answered %d %r" % (resp.code, resp.remark))
    c.wait_route("AclTopic")
    n = 20
    earlier = {}
    for serialize in (None, "ROCKETMQ"):
        label = (serialize or "json").lower()
        prefix = "rsacl%s" % label
        sent = run_rust(ctx, "rs-acl-send-%s" % label, USER,
                        ["send", "--topic", "AclTopic", "--prefix", prefix, "--count", str(n)], serialize=serialize)
        require_sent(sent, prefix, n, statuses=("SendOk",))
        bad = run_rust(ctx, "rs-acl-badsecret-%s" % label, (USER[0], "not-the-secret"),
                       ["send", "--topic", "AclTopic", "--prefix", prefix + "bad", "--count", "2"],
                       serialize=serialize)
        check(not [r for r in bad.of_kind("sent") if r.get("status") == "SendOk"],
              "rust client with a wrong secret sent: %s" % bad.describe())
        # The client redacts the broker's answer ("Broker operation failed"); the Python case checks the
        # reason. Here the same client, topic and broker succeed with the right secret just before.
        errors = bad.of_kind("send_error") + bad.of_kind("error")
        check(errors, "rust client with a wrong secret reported no error: %s" % bad.describe())
        res = run_rust(ctx, "rs-acl-consume-%s" % label, USER,
                       ["consume", "--topic", "AclTopic", "--group", "AclRs%s" % label, "--timeout", "60",
                        "--expect", "%s:%d" % (prefix, n)], timeout=100, serialize=serialize)
        # A new group starts at the first offset: it also gets what earlier rounds sent.
        check_received(ctx, res, {prefix: n}, what="signed rust push consumer (%s)" % label,
                       optional=dict(earlier))
        earlier[prefix] = n

"""Message traces as on Apache RocketMQ: a broker with `traceTopicEnable = true` and
`autoCreateTopicEnable = false` creates RMQ_SYS_TRACE_TOPIC at start and registers it, so Apache's Java
4.9.8 producer and push consumer with `enableMsgTrace` (java/TraceClient.java) store their traces there
with no topic created by hand; our `mqadmin queryMsgTraceById` then finds each message's Pub trace
(producer group, success) and Sub trace (consumer group, success) by its msgId, and so does Apache's
4.9.8 `mqadmin queryMsgTraceById` (tests/apache/mqadmin.sh) against our name server and broker."""

import json
import os
import subprocess
import time

import harness
import remoting
from caselib import case, check

APACHE = os.path.join(harness.REPO, "tests", "apache")
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
COUNT = 3


def our_mqadmin(cluster, args):
    """Our mqadmin with `--json`; (exit code, output)."""
    bin_dir = os.path.dirname(harness.binaries()[1])
    argv = [os.path.join(bin_dir, "mqadmin"), "--json"] + args + ["-n", cluster.namesrv_addr]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout + done.stderr


def _views(cluster, msg_id):
    code, out = our_mqadmin(cluster, ["queryMsgTraceById", "-i", msg_id])
    check(code == 0, "mqadmin queryMsgTraceById -i %s failed: %s" % (msg_id, out))
    return json.loads(out)


@case("java_trace_topic_and_query_msg_trace_by_id", timeout=240)
def trace_topic(ctx):
    c = ctx.start_cluster(extra_config={"traceTopicEnable": "true", "autoCreateTopicEnable": "false"})
    route = c.wait_route(TRACE_TOPIC, 20)
    queues = sorted((q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
                    for q in route["queueDatas"])
    ctx.note("trace topic route: %s" % queues)
    check(sum(q[2] for q in queues) >= 1 and all(q[3] == 6 for q in queues),
          "RMQ_SYS_TRACE_TOPIC is not routed as a read-write topic: %s" % queues)
    check(not remoting.topic_route(c.namesrv_addr, "TBW102"),
          "TBW102 is routed although autoCreateTopicEnable = false")

    topic, pgroup, cgroup = "JavaTraced", "trace_pg", "trace_cg"
    c.create_topic(topic, queue_nums=2)
    result = ctx.clients.run("java", "java-trace", ["TraceClient", c.namesrv_addr, topic, pgroup, cgroup,
                                                    str(COUNT), "90"], 150)
    errors = result.of_kind("error")
    check(not errors and result.code == 0, "Java client failed: %s %s" % (errors[:1], result.describe()))
    sent = result.of_kind("sent")
    check(len(sent) == COUNT and all(r["status"] == "SEND_OK" for r in sent),
          "sends: %s" % sent)
    got = {r["msgId"] for r in result.of_kind("recv")}
    check(all(r["msgId"] in got for r in sent), "the consumer missed messages: %s of %s" % (got, sent))

    for r in sent:
        msg_id = r["msgId"]
        end = time.monotonic() + 30
        while True:
            views = _views(c, msg_id)
            pubs = [v for v in views if v["msgType"] == "Pub"]
            subs = [v for v in views if v["msgType"] == "SubAfter"]
            if pubs and subs:
                break
            check(time.monotonic() < end, "no Pub and SubAfter trace of %s after 30 s: %s" % (msg_id, views))
            time.sleep(0.5)
        check(any(v["groupName"] == pgroup and v["topic"] == topic and v["status"] == "success"
                  and v["offSetMsgId"] == r["offsetMsgId"] for v in pubs),
              "Pub trace of %s: want group %s, topic %s, success, offsetMsgId %s: %s"
              % (msg_id, pgroup, topic, r["offsetMsgId"], pubs))
        check(any(v["groupName"] == cgroup and v["status"] == "success" for v in subs),
              "Sub trace of %s: want group %s, success: %s" % (msg_id, cgroup, subs))

    # The text as Apache's tool prints it.
    first = sent[0]["msgId"]
    bin_dir = os.path.dirname(harness.binaries()[1])
    text = subprocess.run([os.path.join(bin_dir, "mqadmin"), "queryMsgTraceById", "-i", first,
                           "-n", c.namesrv_addr], capture_output=True, text=True, timeout=30).stdout
    lines = text.splitlines()
    check(any(l.startswith("#Type      #ProducerGroup") for l in lines)
          and any(l.split()[:2] == ["Pub", pgroup] for l in lines if l.strip())
          and any(l.startswith("#Type      #ConsumerGroup") for l in lines)
          and any(l.split()[:2] == ["Sub", cgroup] for l in lines if l.strip()),
          "our queryMsgTraceById text: %r" % text)

    # Apache's own tool against our name server and broker.
    if os.path.exists(os.path.join(APACHE, "cache", "rocketmq-4.9.8", "ready")):
        done = subprocess.run([os.path.join(APACHE, "mqadmin.sh"), "rocketmq-4.9.8", "queryMsgTraceById",
                               "-n", c.namesrv_addr, "-i", first], capture_output=True, text=True, timeout=90)
        out = done.stdout
        apache_lines = [l for l in out.splitlines() if l.strip()]
        check(any(l.split()[:2] == ["Pub", pgroup] for l in apache_lines)
              and any(l.split()[:2] == ["Sub", cgroup] for l in apache_lines),
              "Apache's mqadmin queryMsgTraceById: %r %r" % (out, done.stderr[-2000:]))
        ctx.note("Apache 4.9.8 mqadmin queryMsgTraceById:\n" + out)
    else:
        ctx.note("Apache's 4.9.8 tools not fetched (tests/apache/setup.sh): their queryMsgTraceById not run")

"""Message recall (RECALL_MESSAGE, RocketMQ 5.3.2+) with Apache RocketMQ's Java client 5.5.0
(java/RecallClient.java): a timer message's SendResult carries a recall handle, DefaultMQProducer.recallMessage
cancels it (the consumer never receives it, its neighbour arrives), and the recall of an already delivered
message is refused with Apache's code and remark (ILLEGAL_OPERATION 604, "recall failed, timestamp invalid")."""

import base64

from caselib import case, check

DELAY_MS = 3000
ILLEGAL_OPERATION = 604


@case("java5_recall_timer_message", timeout=180)
def recall_timer_message(ctx):
    topic = "JavaRecall"
    c = ctx.start_cluster(extra_config={"recallMessageEnable": "true"})
    c.create_topic(topic)
    result = ctx.clients.run("java5", "java-recall", ["RecallClient", c.namesrv_addr, topic, "recall-group",
                                                      str(DELAY_MS)], 120)
    errors = result.of_kind("error")
    check(not errors and not result.timed_out and result.code == 0,
          "RecallClient failed: %s %s" % (errors[:1], result.describe()))
    sent = {r["body"]: r for r in result.of_kind("sent")}
    check(set(sent) == {"gone", "kept"} and all(r["status"] == "SEND_OK" for r in sent.values()),
          "sends: %s" % list(sent.values()))
    for body, r in sent.items():
        raw = base64.urlsafe_b64decode(r["recall_handle"]).decode()
        parts = raw.split(" ")
        check(len(parts) == 5 and parts[0] == "v1" and parts[1] == topic and parts[2] == r["broker"],
              "%s's recall handle reads %r (sent to %s)" % (body, raw, r["broker"]))
    recalled = result.of_kind("recalled")
    check(len(recalled) == 1 and recalled[0]["msg_id"] == sent["gone"]["msg_id"],
          "recallMessage answered %s, the message id was %s" % (recalled, sent["gone"]["msg_id"]))
    got = sorted(r["body"] for r in result.of_kind("recv"))
    check("gone" not in got, "the recalled message was delivered: %s" % got)
    check("kept" in got, "the message not recalled never came: %s" % got)
    refused = result.of_kind("refused")
    check(len(refused) == 1 and refused[0]["code"] == ILLEGAL_OPERATION
          and refused[0]["remark"] == "recall failed, timestamp invalid",
          "the recall of a delivered message answered %s" % refused)
    ctx.note("received %s; a delivered message's recall: %d %s" % (got, refused[0]["code"], refused[0]["remark"]))

//! Consumers against the real broker with the frames Java 5.x clients send: LITE_PULL_MESSAGE (361)
//! as `DefaultLitePullConsumer` pulls, and the subscription group's settings enforced as RocketMQ
//! does (`consumeEnable`, `consumeBroadcastEnable`, `brokerId`, `retryMaxTimes`, `retryQueueNums`,
//! `autoCreateSubscriptionGroup = false`), on both shards' queues; RocketMQ 5's `consumeMessageOrderly`
//! kept and answered by GET_SUBSCRIPTIONGROUP_CONFIG.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use protocol::body::{
    ConsumeType, ConsumerData, HeartbeatData, MessageModel, SubscriptionData,
    TopicConfigSerializeWrapper,
};
use protocol::header::{pull_sys_flag, CommandHeader, PullMessageRequestHeader};
use protocol::message::msgid;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

/// The pull `DefaultLitePullConsumer` sends (`pullSyncImpl` with block = true): code 361, sysFlag
/// SUSPEND | SUBSCRIPTION | LITE_PULL (22), no commit, `brokerSuspendMaxTimeMillis` 20 s, the
/// subscription expression, maxMsgBytes Integer.MAX_VALUE, the broker name.
fn lite_pull(group: &str, topic: &str, queue_id: i32, offset: i64, block: bool) -> RemotingCommand {
    let mut sys_flag = pull_sys_flag::SUBSCRIPTION | pull_sys_flag::LITE_PULL_MESSAGE;
    if block {
        sys_flag |= pull_sys_flag::SUSPEND;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 10,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: 20_000,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: Some(i32::MAX),
    };
    RemotingCommand::request(request_code::LITE_PULL_MESSAGE)
        .with_ext_fields(header.to_ext_fields())
        .with_ext("bname", "broker-t")
}

/// A push consumer's pull: no subscription of its own (the broker uses the group's heartbeat).
fn push_pull(group: &str, topic: &str, queue_id: i32) -> RemotingCommand {
    pull_request(group, topic, queue_id, 0, 0, None)
}

fn consumer_heartbeat(
    client_id: &str,
    group: &str,
    topic: &str,
    model: MessageModel,
) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: model,
            subscription_data_set: vec![SubscriptionData {
                topic: topic.into(),
                sub_string: "*".into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(protocol::body::to_json(&data))
}

/// `mqadmin updateSubGroup`: the group's settings, `extra` JSON fields over Java's defaults.
async fn update_group(client: &Client, group: &str, extra: serde_json::Value) {
    let mut body = serde_json::json!({"groupName": group});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = client
        .invoke(
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&body).unwrap()),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

async fn call(client: &Client, cmd: RemotingCommand) -> RemotingCommand {
    client.invoke(cmd, TIMEOUT).await.unwrap()
}

async fn topics(client: &Client) -> TopicConfigSerializeWrapper {
    let r = call(
        client,
        RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
    )
    .await;
    protocol::body::from_json(&r.body).unwrap()
}

async fn max_offset(client: &Client, topic: &str) -> i64 {
    let r = call(
        client,
        RemotingCommand::request(request_code::GET_MAX_OFFSET)
            .with_ext("topic", topic)
            .with_ext("queueId", "0"),
    )
    .await;
    r.ext("offset").map_or(0, |o| o.parse().unwrap())
}

fn back(offset: i64, group: &str, delay_level: i32, max: Option<i32>) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
        .with_ext("offset", &offset.to_string())
        .with_ext("group", group)
        .with_ext("delayLevel", &delay_level.to_string())
        .with_ext("originTopic", "GroupT")
        .with_ext("unitMode", "false");
    if let Some(max) = max {
        cmd = cmd.with_ext("maxReconsumeTimes", &max.to_string());
    }
    cmd
}

/// Sends a message that was already consumed `reconsume_times` times; answers its physical offset.
async fn send_reconsumed(client: &Client, topic: &str, reconsume_times: i32) -> i64 {
    let mut header = send_header(topic, 0, "TAGS\u{1}T\u{2}");
    header.j = Some(reconsume_times);
    let r = call(
        client,
        RemotingCommand::request(request_code::SEND_MESSAGE_V2)
            .with_ext_fields(header.to_ext_fields())
            .with_body(&b"failing"[..]),
    )
    .await;
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    msgid::parse_offset_msg_id(r.ext("msgId").unwrap())
        .unwrap()
        .1
}

#[test]
fn lite_pulls_are_served_on_the_queue_owner_and_park_only_when_asked() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        // Queues 0 and 1 of a topic belong to different shards.
        for (queue, n) in [(0, 3), (1, 2)] {
            for i in 0..n {
                let r = send(
                    &client,
                    "LiteT",
                    queue,
                    format!("m{queue}-{i}").as_bytes(),
                    "",
                )
                .await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
        }
        for (queue, n) in [(0, 3usize), (1, 2)] {
            let r = call(&client, lite_pull("LiteGroup", "LiteT", queue, 0, true)).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            let records = decode_records(&r.body);
            assert_eq!(records.len(), n);
            assert_eq!(records[0].body.as_ref(), format!("m{queue}-0").as_bytes());
            assert_eq!(r.ext("nextBeginOffset"), Some(n.to_string().as_str()));
        }
        // Without SUSPEND nothing new answers at once, whatever suspendTimeoutMillis says.
        let started = Instant::now();
        let r = call(&client, lite_pull("LiteGroup", "LiteT", 0, 3, false)).await;
        assert_eq!(r.code, response_code::PULL_NOT_FOUND, "{:?}", r.remark);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        // With SUSPEND the pull waits for the next message.
        let waiting = {
            let client = client.clone();
            glommio::spawn_local(async move {
                let started = Instant::now();
                let r = call(&client, lite_pull("LiteGroup", "LiteT", 0, 3, true)).await;
                (r, started.elapsed())
            })
        };
        glommio::timer::sleep(Duration::from_millis(400)).await;
        let sent = send(&client, "LiteT", 0, b"late", "").await;
        assert_eq!(sent.code, response_code::SUCCESS);
        let (r, waited) = waiting.await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(decode_records(&r.body)[0].body.as_ref(), b"late");
        assert!(
            waited >= Duration::from_millis(300),
            "answered after {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(10),
            "answered after {waited:?}"
        );
    });
}

#[test]
fn group_settings_are_enforced_on_every_shard() {
    let broker = Broker::start(
        "autoCreateSubscriptionGroup = false\nslaveReadEnable = true\nlitePullMessageEnable = false",
    );
    run_local(async {
        let client = connect(broker.addr()).await;
        for queue in 0..2 {
            let r = send(&client, "GroupT", queue, b"m", "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }

        // A group the broker does not know and may not create.
        for queue in 0..2 {
            let r = call(&client, push_pull("Ghost", "GroupT", queue)).await;
            assert_eq!(
                r.code,
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                "{:?}",
                r.remark
            );
        }
        let hb = call(
            &client,
            consumer_heartbeat("c@ghost", "Ghost", "GroupT", MessageModel::Clustering),
        )
        .await;
        assert_eq!(hb.code, response_code::SUCCESS, "{:?}", hb.remark);
        let list = call(
            &client,
            RemotingCommand::request(request_code::GET_CONSUMER_LIST_BY_GROUP)
                .with_ext("consumerGroup", "Ghost"),
        )
        .await;
        assert_ne!(
            list.code,
            response_code::SUCCESS,
            "an unknown group's consumer is not registered"
        );
        assert!(!topics(&client)
            .await
            .topic_config_table
            .contains_key("%RETRY%Ghost"));
        let phys = send_reconsumed(&client, "GroupT", 0).await;
        let r = call(&client, back(phys, "Ghost", 0, None)).await;
        assert_eq!(
            r.code,
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            "{:?}",
            r.remark
        );

        // consumeEnable = false refuses pulls; brokerId is the suggested broker once enabled.
        update_group(
            &client,
            "Gated",
            serde_json::json!({"consumeEnable": false}),
        )
        .await;
        for queue in 0..2 {
            let r = call(&client, push_pull("Gated", "GroupT", queue)).await;
            assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
            assert_eq!(r.ext("forbiddenType"), Some("2"));
        }
        update_group(&client, "Gated", serde_json::json!({"brokerId": 1})).await;
        for queue in 0..2 {
            let r = call(&client, push_pull("Gated", "GroupT", queue)).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            assert_eq!(r.ext("suggestWhichBrokerId"), Some("1"));
        }
        // litePullMessageEnable = false.
        let r = call(&client, lite_pull("Gated", "GroupT", 0, 0, false)).await;
        assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
        assert_eq!(r.ext("forbiddenType"), Some("1"));

        // consumeBroadcastEnable = false refuses a broadcasting group's pulls (those without a
        // subscription of their own), until its consumers cluster.
        update_group(
            &client,
            "Bcast",
            serde_json::json!({"consumeBroadcastEnable": false}),
        )
        .await;
        let hb = call(
            &client,
            consumer_heartbeat("c@b", "Bcast", "GroupT", MessageModel::Broadcasting),
        )
        .await;
        assert_eq!(hb.code, response_code::SUCCESS);
        for queue in 0..2 {
            let r = call(&client, push_pull("Bcast", "GroupT", queue)).await;
            assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
            assert_eq!(r.ext("forbiddenType"), Some("4"));
            let with_sub = pull_request("Bcast", "GroupT", queue, 0, 0, Some("*"));
            assert_eq!(call(&client, with_sub).await.code, response_code::SUCCESS);
        }
        let hb = call(
            &client,
            consumer_heartbeat("c@b", "Bcast", "GroupT", MessageModel::Clustering),
        )
        .await;
        assert_eq!(hb.code, response_code::SUCCESS);
        for queue in 0..2 {
            let r = call(&client, push_pull("Bcast", "GroupT", queue)).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
    });
}

#[test]
fn the_groups_retry_max_times_and_retry_queue_nums_apply() {
    let broker = Broker::start("autoCreateSubscriptionGroup = false");
    run_local(async {
        let client = connect(broker.addr()).await;
        update_group(&client, "Retry2", serde_json::json!({"retryMaxTimes": 2})).await;
        let dlq = "%DLQ%Retry2";
        let twice = send_reconsumed(&client, "GroupT", 2).await;
        let once = send_reconsumed(&client, "GroupT", 1).await;
        // No client maximum (the C++ client's form): the group's 2 applies.
        assert_eq!(
            call(&client, back(twice, "Retry2", 0, None)).await.code,
            response_code::SUCCESS
        );
        assert_eq!(max_offset(&client, dlq).await, 1);
        assert_eq!(
            call(&client, back(once, "Retry2", 0, None)).await.code,
            response_code::SUCCESS
        );
        assert_eq!(max_offset(&client, dlq).await, 1, "one retry left");
        // A client's own maximum wins...
        assert_eq!(
            call(&client, back(twice, "Retry2", 0, Some(5))).await.code,
            response_code::SUCCESS
        );
        assert_eq!(max_offset(&client, dlq).await, 1);
        // ...unless the client is older than 3.4.9.
        let mut old = back(twice, "Retry2", 0, Some(5));
        old.version = 100;
        assert_eq!(call(&client, old).await.code, response_code::SUCCESS);
        assert_eq!(max_offset(&client, dlq).await, 2);
        // A client's own resend to the retry topic follows the group's limit too.
        let mut header = send_header("%RETRY%Retry2", 0, "TAGS\u{1}T\u{2}");
        header.j = Some(2);
        let r = call(
            &client,
            RemotingCommand::request(request_code::SEND_MESSAGE_V2)
                .with_ext_fields(header.to_ext_fields())
                .with_body(&b"resent"[..]),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(max_offset(&client, dlq).await, 3);
        // A resend for a group that does not exist.
        let mut header = send_header("%RETRY%Ghost", 0, "");
        header.j = Some(1);
        let r = call(
            &client,
            RemotingCommand::request(request_code::SEND_MESSAGE_V2)
                .with_ext_fields(header.to_ext_fields())
                .with_body(&b"resent"[..]),
        )
        .await;
        assert_eq!(
            r.code,
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            "{:?}",
            r.remark
        );

        // retryQueueNums = 0: the group wants no retries; the message is dropped.
        update_group(&client, "NoRetry", serde_json::json!({"retryQueueNums": 0})).await;
        let r = call(&client, back(twice, "NoRetry", -1, None)).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let table = topics(&client).await.topic_config_table;
        assert!(!table.contains_key("%DLQ%NoRetry") && !table.contains_key("%RETRY%NoRetry"));
    });
}

async fn group_config(client: &Client, group: &str) -> RemotingCommand {
    call(
        client,
        RemotingCommand::request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG)
            .with_ext("group", group),
    )
    .await
}

#[test]
fn consume_message_orderly_is_kept_and_answered_by_get_subscriptiongroup_config() {
    let mut broker = Broker::start("");
    let check = |r: &RemotingCommand, orderly: bool| {
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["groupName"], "Ordered");
        assert_eq!(v["consumeMessageOrderly"], orderly, "{v}");
        assert_eq!(v["retryMaxTimes"], 3, "{v}");
    };
    run_local(async {
        let client = connect(broker.addr()).await;
        update_group(
            &client,
            "Ordered",
            serde_json::json!({"consumeMessageOrderly": true, "retryMaxTimes": 3}),
        )
        .await;
        check(&group_config(&client, "Ordered").await, true);
        let unknown = group_config(&client, "NoSuchGroup").await;
        assert_eq!(unknown.code, response_code::SUBSCRIPTION_GROUP_NOT_EXIST);
        let empty = call(
            &client,
            RemotingCommand::request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG),
        )
        .await;
        assert_eq!(empty.code, response_code::SYSTEM_ERROR);
    });
    // Persisted in subscriptionGroup.json: still orderly after a restart; a 4.x body turns it off.
    broker.stop();
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        check(&group_config(&client, "Ordered").await, true);
        update_group(&client, "Ordered", serde_json::json!({"retryMaxTimes": 3})).await;
        check(&group_config(&client, "Ordered").await, false);
    });
}

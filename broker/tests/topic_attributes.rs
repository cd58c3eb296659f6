//! Topic attributes as RocketMQ 5.x keeps them, through a real broker process: set at creation with
//! `+key=value`, changed and deleted under Apache's rules, refused when invalid, unchangeable or not
//! honoured here (MIXED without enableMixedMessageType, BatchCQ), shown by GET_TOPIC_CONFIG, kept across
//! a restart, set for several topics at once (UPDATE_AND_CREATE_TOPIC_LIST); a compaction topic refuses
//! messages without a key; a slave refuses pulls unless `slaveReadEnable`, and holds the master's
//! attributes.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use ha_common::*;
use protocol::body::{CreateTopicListRequestBody, TopicConfig};
use protocol::header::{CommandHeader, CreateTopicRequestHeader};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

fn create(topic: &str, attributes: &str) -> RemotingCommand {
    let header = CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: Some(0),
        order: Some(false),
        attributes: Some(attributes.into()).filter(|a: &String| !a.is_empty()),
        force: None,
    };
    RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
        .with_ext_fields(header.to_ext_fields())
}

async fn invoke(c: &Client, cmd: RemotingCommand) -> RemotingCommand {
    c.invoke(cmd, TIMEOUT).await.expect("answered")
}

async fn topic_config(c: &Client, topic: &str) -> RemotingCommand {
    invoke(
        c,
        RemotingCommand::request(request_code::GET_TOPIC_CONFIG).with_ext("topic", topic),
    )
    .await
}

async fn attributes_of(c: &Client, topic: &str) -> BTreeMap<String, String> {
    let r = topic_config(c, topic).await;
    assert_eq!(r.code, response_code::SUCCESS, "{topic}: {:?}", r.remark);
    let tc: TopicConfig = protocol::body::from_json(&r.body).expect("a TopicConfig body");
    assert_eq!(tc.topic_name, topic);
    tc.attributes
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Expects `code` and a remark containing `text`.
async fn refused(c: &Client, cmd: RemotingCommand, code: i32, text: &str) {
    let r = invoke(c, cmd).await;
    assert_eq!(r.code, code, "{:?}", r.remark);
    let remark = r.remark.unwrap_or_default();
    assert!(remark.contains(text), "remark {remark:?} lacks {text:?}");
}

#[test]
fn attributes_follow_rocketmq_5_rules_and_survive_a_restart() {
    let mut broker = Broker::start("");
    run_local(async {
        let c = connect(broker.addr()).await;
        let r = invoke(&c, create("Typed", "+message.type=FIFO,+reserve.time=48")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            attributes_of(&c, "Typed").await,
            map(&[("message.type", "FIFO"), ("reserve.time", "48")])
        );
        // No attribute asked: the stored ones stay (an update of the queue count only).
        assert_eq!(
            invoke(&c, create("Typed", "")).await.code,
            response_code::SUCCESS
        );
        assert_eq!(attributes_of(&c, "Typed").await.len(), 2);
        // Changeable ones change and go; unchangeable, unknown, invalid or absent ones are refused.
        let r = invoke(&c, create("Typed", "+message.type=DELAY,-reserve.time")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            attributes_of(&c, "Typed").await,
            map(&[("message.type", "DELAY")])
        );
        let sys = response_code::SYSTEM_ERROR;
        refused(
            &c,
            create("Typed", "+cleanup.policy=COMPACTION"),
            sys,
            "attempt to update an unchangeable attribute. key: cleanup.policy",
        )
        .await;
        // Each shard-broker of this process reaches the one topic table, and `updateTopic -c` sends
        // a change to each: deleting what a sibling already deleted is no error (see below for one).
        assert_eq!(
            invoke(&c, create("Typed", "-reserve.time")).await.code,
            response_code::SUCCESS
        );
        refused(&c, create("Typed", "+color=red"), sys, "unsupported key: color").await;
        refused(
            &c,
            create("Typed", "+message.type=ORDERED"),
            sys,
            "value is not in set",
        )
        .await;
        refused(
            &c,
            create("Fresh", "-message.type"),
            sys,
            "only add attribute is supported while creating topic",
        )
        .await;
        refused(
            &c,
            create("Fresh", "message.type=FIFO"),
            sys,
            "add/alter attribute format is wrong",
        )
        .await;
        refused(
            &c,
            create("Mixed", "+message.type=MIXED"),
            response_code::INVALID_PARAMETER,
            "MIXED message type is not supported.",
        )
        .await;
        refused(
            &c,
            create("Batchy", "+queue.type=BatchCQ"),
            response_code::INVALID_PARAMETER,
            "queue.type=BatchCQ is not supported",
        )
        .await;
        for refused_topic in ["Fresh", "Mixed", "Batchy"] {
            let r = topic_config(&c, refused_topic).await;
            assert_eq!(r.code, response_code::TOPIC_NOT_EXIST, "{refused_topic}");
        }
        assert_eq!(
            attributes_of(&c, "Typed").await,
            map(&[("message.type", "DELAY")]),
            "a refused change left the attributes as they were"
        );

        // Several topics at once; attributes signed as in a modification string.
        let mut list = CreateTopicListRequestBody::default();
        for (name, kind) in [("ListA", "NORMAL"), ("ListB", "TRANSACTION")] {
            let mut tc = TopicConfig::new(name, 2);
            tc.attributes.insert("+message.type".into(), kind.into());
            list.topic_config_list.push(tc);
        }
        let r = invoke(
            &c,
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC_LIST)
                .with_body(protocol::body::to_json(&list)),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            attributes_of(&c, "ListB").await,
            map(&[("message.type", "TRANSACTION")])
        );
    });

    broker.stop();
    broker.spawn();
    broker.wait_ready();
    run_local(async {
        let c = connect(broker.addr()).await;
        assert_eq!(
            attributes_of(&c, "Typed").await,
            map(&[("message.type", "DELAY")])
        );
        assert_eq!(
            attributes_of(&c, "ListA").await,
            map(&[("message.type", "NORMAL")])
        );
        // Every shard-broker holds them (GET_TOPIC_CONFIG reads the receiving shard's copy).
        for addr in broker.other_shard_brokers() {
            let other = connect(addr).await;
            assert_eq!(
                attributes_of(&other, "ListB").await,
                map(&[("message.type", "TRANSACTION")])
            );
        }
    });
}

#[test]
fn a_broker_of_one_shard_refuses_to_delete_an_absent_attribute() {
    let broker = Broker::start("shardCount = 1");
    run_local(async {
        let c = connect(broker.addr()).await;
        let r = invoke(&c, create("Typed", "+message.type=FIFO")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        refused(
            &c,
            create("Typed", "-reserve.time"),
            response_code::SYSTEM_ERROR,
            "attempt to delete a nonexistent key: reserve.time",
        )
        .await;
    });
}

#[test]
fn mixed_topics_with_enable_mixed_message_type() {
    let broker = Broker::start("enableMixedMessageType = true");
    run_local(async {
        let c = connect(broker.addr()).await;
        let r = invoke(&c, create("Mixed", "+message.type=MIXED")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            attributes_of(&c, "Mixed").await,
            map(&[("message.type", "MIXED")])
        );
    });
}

#[test]
fn a_compaction_topic_refuses_messages_without_a_key() {
    let broker = Broker::start("");
    run_local(async {
        let c = connect(broker.addr()).await;
        let r = invoke(&c, create("Compacted", "+cleanup.policy=COMPACTION")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = send(&c, "Compacted", 0, b"no key", "TAGS\u{1}a\u{2}").await;
        assert_eq!(r.code, response_code::MESSAGE_ILLEGAL, "{:?}", r.remark);
        assert_eq!(r.remark.as_deref(), Some("Required message key is missing"));
        let r = send(&c, "Compacted", 0, b"blank key", "KEYS\u{1} \u{2}").await;
        assert_eq!(r.code, response_code::MESSAGE_ILLEGAL, "{:?}", r.remark);
        let r = send(&c, "Compacted", 0, b"v1", "KEYS\u{1}user-1\u{2}").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        // Other topics take keyless messages as before.
        let r = send(&c, "Plain", 0, b"no key", "").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    });
}

async fn wait_attributes(addr: SocketAddr, topic: &str, want: &BTreeMap<String, String>) {
    let c = connect(addr).await;
    let start = Instant::now();
    loop {
        let r = topic_config(&c, topic).await;
        if r.code == response_code::SUCCESS {
            let tc: TopicConfig = protocol::body::from_json(&r.body).unwrap();
            if &tc.attributes == want {
                return;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the slave never held {topic}'s attributes {want:?} (last: {} {:?})",
            r.code,
            String::from_utf8_lossy(&r.body)
        );
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn a_slave_serves_pulls_only_with_slave_read_enable_and_holds_the_attributes() {
    let master = Broker::start(&master_extra("ASYNC_MASTER", "ASYNC_FLUSH"));
    let reading = Broker::start(&slave_extra(Some(&master), None));
    let strict_extra =
        slave_extra(Some(&master), None).replace("slaveReadEnable = true", "slaveReadEnable = false");
    let strict = Broker::start(&strict_extra);
    run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(60)).await;
        let c = connect(master.addr()).await;
        let r = invoke(&c, create("Replicated", "+message.type=FIFO")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = send(&c, "Replicated", 0, b"one", "KEYS\u{1}k\u{2}").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let want = map(&[("message.type", "FIFO")]);
        for slave in [&reading, &strict] {
            wait_attributes(slave.addr(), "Replicated", &want).await;
        }

        // RocketMQ 5: without slaveReadEnable a slave rejects pulls; the client retries later.
        let s = connect(strict.addr()).await;
        let r = pull(&s, "Replicated", 0, 0).await;
        assert_eq!(r.code, response_code::SYSTEM_BUSY, "{:?}", r.remark);
        assert_eq!(
            r.remark.as_deref(),
            Some("[REJECTREQUEST]system busy, start flow control for a while")
        );
        // With it, the replicated message is served, and the answer sends the consumer back to the
        // master (broker id 0) while it does not read slowly.
        let s = connect(reading.addr()).await;
        let start = Instant::now();
        let r = loop {
            let r = pull(&s, "Replicated", 0, 0).await;
            if r.code == response_code::SUCCESS || start.elapsed() > Duration::from_secs(30) {
                break r;
            }
            glommio::timer::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(decode_records(&r.body)[0].body.as_ref(), b"one");
        assert_eq!(r.ext("suggestWhichBrokerId"), Some("0"));
    });
}

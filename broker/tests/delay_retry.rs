//! CONSUMER_SEND_MSG_BACK: a failed message goes to `%RETRY%group` after the delay of level
//! 3 + reconsumeTimes (through the schedule topic), with RETRY_TOPIC / ORIGIN_MESSAGE_ID and one more
//! reconsume time; past maxReconsumeTimes (or with delayLevel -1) it goes to `%DLQ%group`, created
//! write-only.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::time::Duration;

use common::*;
use delay_support::*;
use protocol::message::{msgid, properties};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

/// Level 3 and up are 2 s; 1 and 2 are 1 s (a client delayLevel of 1 is then distinguishable).
const LEVELS: &str = "messageDelayLevel = \"1s 1s 2s 2s 2s 2s\"\n";

fn back(offset: i64, group: &str, delay_level: i32, max: Option<i32>) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
        .with_ext("offset", &offset.to_string())
        .with_ext("group", group)
        .with_ext("delayLevel", &delay_level.to_string());
    if let Some(max) = max {
        cmd = cmd.with_ext("maxReconsumeTimes", &max.to_string());
    }
    cmd
}

async fn topic_perm(client: &Client, topic: &str) -> Option<i64> {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
            TIMEOUT,
        )
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["topicConfigTable"][topic]["perm"].as_i64()
}

#[test]
fn failed_messages_are_retried_after_a_delay_then_dead_lettered() {
    let broker = Broker::start(LEVELS);
    run_local(async {
        let client = connect(broker.addr()).await;
        let props = properties::encode([("TAGS", "T"), ("UNIQ_KEY", "U1")]);
        let sent = send(&client, "Failing", 2, b"payload", &props).await;
        assert_eq!(sent.code, response_code::SUCCESS);
        let (_, mut phys) = msgid::parse_offset_msg_id(sent.ext("msgId").unwrap()).unwrap();
        // Two retries go to %RETRY%fg, each after 2 s (level 3 + reconsumeTimes, clamped to 6).
        for round in 1..=2usize {
            let asked = now_ms();
            let r = client
                .invoke(back(phys, "fg", 0, Some(2)), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            assert!(
                pull_from(&client, "%RETRY%fg", 0, (round - 1) as i64)
                    .await
                    .is_empty(),
                "the retry waits for its delay"
            );
            let retries =
                wait_records(&client, "%RETRY%fg", 0, round, Duration::from_secs(20)).await;
            assert_eq!(retries.len(), round);
            let (last, _) = retries.last().unwrap();
            assert!(
                last.store_timestamp >= asked + 2000,
                "retry {round} came early"
            );
            assert!(
                last.store_timestamp < asked + 4000,
                "retry {round} came late"
            );
            assert_eq!(&last.body[..], b"payload");
            assert_eq!(last.reconsume_times, round as i32);
            let p = &last.properties;
            assert_eq!(properties::get(p, "RETRY_TOPIC"), Some("Failing"));
            assert_eq!(properties::get(p, "ORIGIN_MESSAGE_ID"), Some("U1"));
            assert_eq!(properties::get(p, "TAGS"), Some("T"));
            assert_eq!(properties::get(p, "DELAY"), None);
            phys = last.physical_offset;
        }
        assert_eq!(
            topic_perm(&client, "%DLQ%fg").await,
            None,
            "no DLQ before it is needed"
        );
        // The third failure exceeds maxReconsumeTimes: dead-letter queue, at once.
        let r = client
            .invoke(back(phys, "fg", 0, Some(2)), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(max_offset(&client, "%DLQ%fg", 0).await, 1);
        assert_eq!(
            topic_perm(&client, "%DLQ%fg").await,
            Some(2),
            "DLQ is write-only"
        );
        let pulled = pull(&client, "%DLQ%fg", 0, 0).await;
        assert_eq!(pulled.code, response_code::NO_PERMISSION);
        let missing = client
            .invoke(back(12345, "fg", 0, Some(2)), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(missing.code, response_code::SYSTEM_ERROR);
    });
}

#[test]
fn client_delay_level_and_dlq_request_are_honoured() {
    let broker = Broker::start(LEVELS);
    run_local(async {
        let client = connect(broker.addr()).await;
        let sent = send(
            &client,
            "Failing2",
            0,
            b"p2",
            &properties::encode([("UNIQ_KEY", "U2")]),
        )
        .await;
        let (_, phys) = msgid::parse_offset_msg_id(sent.ext("msgId").unwrap()).unwrap();
        // delayLevel 1 from the client: 1 s, not the 2 s of level 3.
        let asked = now_ms();
        let r = client
            .invoke(back(phys, "cg", 1, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let got = wait_records(&client, "%RETRY%cg", 0, 1, Duration::from_secs(20)).await;
        assert_eq!(got.len(), 1);
        let t = got[0].0.store_timestamp;
        assert!(
            t >= asked + 1000 && t < asked + 1900,
            "client level 1 honoured: {}",
            t - asked
        );
        // delayLevel -1: straight to the DLQ, whatever the count.
        let r = client
            .invoke(back(phys, "cg", -1, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(max_offset(&client, "%DLQ%cg", 0).await, 1);
    });
}

#[test]
fn without_a_client_maximum_the_sixteenth_failure_is_dead_lettered() {
    // Zero delays keep the 16 rounds quick; the path is still the schedule topic.
    let broker = Broker::start("messageDelayLevel = \"0s 0s 0s 0s\"\n");
    run_local(async {
        let client = connect(broker.addr()).await;
        let sent = send(&client, "Failing3", 0, b"p3", "").await;
        let (_, mut phys) = msgid::parse_offset_msg_id(sent.ext("msgId").unwrap()).unwrap();
        for round in 1..=16usize {
            let r = client
                .invoke(back(phys, "dg", 0, None), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            let all = wait_records(&client, "%RETRY%dg", 0, round, Duration::from_secs(20)).await;
            assert_eq!(all.len(), round);
            let last = &all.last().unwrap().0;
            assert_eq!(last.reconsume_times, round as i32);
            phys = last.physical_offset;
        }
        assert_eq!(max_offset(&client, "%DLQ%dg", 0).await, 0);
        let r = client
            .invoke(back(phys, "dg", 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            max_offset(&client, "%DLQ%dg", 0).await,
            1,
            "dead after 16 reconsumes"
        );
        assert_eq!(max_offset(&client, "%RETRY%dg", 0).await, 16);
    });
}

/// A consumer whose send-back failed resends the message itself to `%RETRY%group` (Java's fallback):
/// with retries left it is delayed like any DELAY message, with none left it goes to `%DLQ%group`.
#[test]
fn a_client_resend_to_the_retry_topic_follows_the_same_rules() {
    let broker = Broker::start(LEVELS);
    run_local(async {
        let client = connect(broker.addr()).await;
        let resend = |reconsume: i32, max: Option<i32>, key: &str| {
            let mut h = send_header(
                "%RETRY%rg",
                0,
                &properties::encode([("UNIQ_KEY", key), ("DELAY", "3")]),
            );
            h.j = Some(reconsume);
            h.l = max;
            RemotingCommand::request(request_code::SEND_MESSAGE_V2)
                .with_ext_fields(protocol::header::CommandHeader::to_ext_fields(&h))
                .with_body(bytes::Bytes::from_static(b"again"))
        };
        let asked = now_ms();
        let r = client
            .invoke(resend(3, Some(5), "R1"), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = client
            .invoke(resend(16, None, "R2"), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = client
            .invoke(resend(5, Some(5), "R3"), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            max_offset(&client, "%DLQ%rg", 0).await,
            2,
            "R2 and R3 are out of retries"
        );
        assert_eq!(topic_perm(&client, "%DLQ%rg").await, Some(2));
        let got = wait_records(&client, "%RETRY%rg", 0, 1, Duration::from_secs(20)).await;
        assert_eq!(got.len(), 1);
        assert_eq!(
            properties::get(&got[0].0.properties, "UNIQ_KEY"),
            Some("R1")
        );
        assert!(
            got[0].0.store_timestamp >= asked + 2000,
            "delayed by its level"
        );
    });
}

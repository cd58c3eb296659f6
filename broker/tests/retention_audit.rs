//! Retention says what it deletes, on a real broker: each CommitLog segment with the rule that took
//! it, and a WARN per consumer group for the messages it had not consumed yet, with the count in
//! `rocketmq_retention_unconsumed_messages_total`; a group that had consumed everything is not named.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const TOPIC: &str = "AuditTopic";

async fn commit(client: &Client, group: &str, offset: i64) {
    let up = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", group)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", "0")
        .with_ext("commitOffset", &offset.to_string());
    let r = client.invoke(up, TIMEOUT).await.expect("answer");
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

async fn min_offset(client: &Client) -> i64 {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_MIN_OFFSET)
                .with_ext("topic", TOPIC)
                .with_ext("queueId", "0"),
            TIMEOUT,
        )
        .await
        .expect("answer");
    r.ext("offset").expect("offset").parse().expect("number")
}

/// The samples of `family` on the broker's /metrics, as (labels, value).
fn samples(metrics_port: u16, family: &str) -> Vec<(String, String)> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).expect("metrics");
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .expect("request");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("answer");
    text.lines()
        .filter_map(|l| l.strip_prefix(family)?.strip_prefix('{'))
        .filter_map(|l| {
            let (labels, value) = l.rsplit_once("} ")?;
            Some((labels.to_owned(), value.to_owned()))
        })
        .collect()
}

#[test]
fn deleted_segments_name_their_rule_and_the_unconsumed_messages_of_each_group() {
    let metrics_port = free_port();
    // Segments expire at once, deleteWhen never comes and the disk is never "full": the admin
    // request DELETE_EXPIRED_COMMITLOG runs the pass, under the `expired` rule.
    let broker = Broker::start(&format!(
        "shardCount = 1\nfileReservedTime = 0\ndeleteWhen = \"25\"\n\
         diskMaxUsedSpaceRatio = 99\ndiskSpaceCleanForciblyRatio = 99\nmetricsPort = {metrics_port}\n"
    ));
    run_local(async {
        let c = connect(broker.addr()).await;
        let body = vec![b'x'; 900 * 1024];
        // Two 4 MiB segments and a bit.
        for _ in 0..10 {
            let r = send(&c, TOPIC, 0, &body, "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        commit(&c, "SlowGroup", 1).await;
        commit(&c, "DoneGroup", 10).await;
        let start = Instant::now();
        loop {
            let r = c
                .invoke(
                    RemotingCommand::request(request_code::DELETE_EXPIRED_COMMITLOG),
                    TIMEOUT,
                )
                .await
                .expect("answer");
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            if min_offset(&c).await > 1 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no segment deleted: {:?}",
                r.remark
            );
            glommio::timer::sleep(Duration::from_millis(300)).await;
        }
        let new_min = min_offset(&c).await;
        let lost = new_min - 1;

        let log = broker.log();
        let segment_lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("retention (expired) deleted CommitLog segment"))
            .collect();
        assert!(!segment_lines.is_empty(), "{log}");
        assert!(
            segment_lines
                .iter()
                .all(|l| l.contains("fileReservedTime 0 h") && l.contains("deletion asked for")),
            "{segment_lines:?}"
        );
        let slow = format!(
            "retention (expired) deleted {lost} messages of topic {TOPIC} queue 0 that consumer group SlowGroup had not consumed (its committed offset 1; the queue now starts at {new_min})"
        );
        assert!(log.contains(&slow), "no line {slow:?} in:\n{log}");
        assert!(!log.contains("DoneGroup had not consumed"), "{log}");

        let unconsumed = samples(metrics_port, "rocketmq_retention_unconsumed_messages_total");
        assert_eq!(unconsumed.len(), 1, "{unconsumed:?}");
        assert_eq!(unconsumed[0].1, lost.to_string());
        let deleted = samples(metrics_port, "rocketmq_retention_deleted_segments_total");
        let by_rule = |rule: &str| {
            deleted
                .iter()
                .find(|(l, _)| l.contains(&format!("rule=\"{rule}\"")))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            by_rule("expired"),
            Some(segment_lines.len().to_string()),
            "{deleted:?}"
        );
        assert_eq!(by_rule("forced").as_deref(), Some("0"), "{deleted:?}");
    });
}

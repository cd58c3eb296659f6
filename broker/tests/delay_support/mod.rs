//! Helpers of the delayed-message tests: polling a queue until records arrive, delay offsets, clocks.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use protocol::message::record::MessageRecord;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use crate::common::{decode_records, now_ms, pull, TIMEOUT};

/// Every record of a queue from `offset` (pulls until nothing more).
pub async fn pull_from(
    client: &Client,
    topic: &str,
    queue_id: i32,
    mut offset: i64,
) -> Vec<MessageRecord> {
    let mut out = Vec::new();
    loop {
        let r = pull(client, topic, queue_id, offset).await;
        if r.code != response_code::SUCCESS {
            return out;
        }
        let recs = decode_records(&r.body);
        if recs.is_empty() {
            return out;
        }
        offset = r.ext("nextBeginOffset").unwrap().parse().unwrap();
        out.extend(recs);
    }
}

/// Polls a queue (every 10 ms) until it holds at least `count` records from offset 0, or `limit`
/// passes; answers the records and, for each, the wall-clock ms at which the poll first saw it.
pub async fn wait_records(
    client: &Client,
    topic: &str,
    queue_id: i32,
    count: usize,
    limit: Duration,
) -> Vec<(MessageRecord, i64)> {
    let start = Instant::now();
    let mut seen: Vec<(MessageRecord, i64)> = Vec::new();
    loop {
        let recs = pull_from(client, topic, queue_id, seen.len() as i64).await;
        let at = now_ms();
        seen.extend(recs.into_iter().map(|r| (r, at)));
        if seen.len() >= count || start.elapsed() > limit {
            return seen;
        }
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
}

/// GET_MAX_OFFSET of a queue.
pub async fn max_offset(client: &Client, topic: &str, queue_id: i32) -> i64 {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_MAX_OFFSET)
                .with_ext("topic", topic)
                .with_ext("queueId", &queue_id.to_string()),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    r.ext("offset").unwrap().parse().unwrap()
}

/// GET_ALL_DELAY_OFFSET's body as text.
pub async fn delay_offsets(client: &Client) -> String {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_ALL_DELAY_OFFSET),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The properties of a message sent with a DELAY level.
pub fn delayed_props(level: i32, uniq: &str) -> String {
    protocol::message::properties::encode([
        ("TAGS", "tagA"),
        ("KEYS", uniq),
        ("UNIQ_KEY", uniq),
        ("DELAY", &level.to_string()),
        ("custom", "kept"),
    ])
}

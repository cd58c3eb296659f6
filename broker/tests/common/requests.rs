//! Requests to a test broker as a Java client sends them, and decoding of the answers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use protocol::header::{CommandHeader, PullMessageRequestHeader, SendMessageRequestHeaderV2};
use protocol::message::record::MessageRecord;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use super::TIMEOUT;

pub async fn connect(addr: SocketAddr) -> Client {
    Client::connect(addr, TIMEOUT)
        .await
        .expect("connect to broker")
}

/// A SEND_MESSAGE_V2 request.
pub fn send_request(topic: &str, queue_id: i32, body: &[u8], properties: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::SEND_MESSAGE_V2)
        .with_ext_fields(send_header(topic, queue_id, properties).to_ext_fields())
        .with_body(Bytes::copy_from_slice(body))
}

/// The header a Java producer sends (SEND_MESSAGE_V2 short names).
pub fn send_header(topic: &str, queue_id: i32, properties: &str) -> SendMessageRequestHeaderV2 {
    SendMessageRequestHeaderV2 {
        a: "test_producer".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: queue_id,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some(properties.into()),
        j: Some(0),
        k: Some(false),
        l: None,
        m: Some(false),
        n: Some("broker-t".into()),
    }
}

pub async fn send(
    client: &Client,
    topic: &str,
    queue_id: i32,
    body: &[u8],
    properties: &str,
) -> RemotingCommand {
    client
        .invoke(send_request(topic, queue_id, body, properties), TIMEOUT)
        .await
        .expect("send answered")
}

pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    suspend_ms: i64,
    sub: Option<&str>,
) -> RemotingCommand {
    let mut sys_flag = 0;
    if suspend_ms > 0 {
        sys_flag |= protocol::header::pull_sys_flag::SUSPEND;
    }
    if sub.is_some() {
        sys_flag |= protocol::header::pull_sys_flag::SUBSCRIPTION;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: sub.map(str::to_owned),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    };
    RemotingCommand::request(request_code::PULL_MESSAGE).with_ext_fields(header.to_ext_fields())
}

pub async fn pull(client: &Client, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    client
        .invoke(
            pull_request("test_consumer", topic, queue_id, offset, 0, None),
            TIMEOUT,
        )
        .await
        .expect("pull answered")
}

/// Decodes a pull body into records (checking every CRC).
pub fn decode_records(body: &[u8]) -> Vec<MessageRecord> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let (rec, len) = MessageRecord::decode(&body[pos..], true).expect("valid record");
        out.push(rec);
        pos += len;
    }
    out
}

/// Every record of a queue from offset 0 (pulls until PULL_NOT_FOUND).
pub async fn pull_all(client: &Client, topic: &str, queue_id: i32) -> Vec<MessageRecord> {
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let r = pull(client, topic, queue_id, offset).await;
        if r.code != response_code::SUCCESS {
            return out;
        }
        let recs = decode_records(&r.body);
        assert!(!recs.is_empty());
        offset = r.ext("nextBeginOffset").unwrap().parse().unwrap();
        out.extend(recs);
    }
}

/// GET_BROKER_RUNTIME_INFO as a map (empty when the broker does not answer).
pub async fn runtime_info(addr: SocketAddr) -> BTreeMap<String, String> {
    let Ok(c) = Client::connect(addr, Duration::from_secs(2)).await else {
        return BTreeMap::new();
    };
    let req = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
    let Ok(r) = c.invoke(req, Duration::from_secs(5)).await else {
        return BTreeMap::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    v.get("table")
        .and_then(|t| t.as_object())
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// A number in [`runtime_info`]'s map.
pub fn info_i64(info: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    info.get(key).and_then(|v| v.parse().ok())
}

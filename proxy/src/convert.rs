//! Messages between the two worlds: an SDK's `apache.rocketmq.v2.Message` to the properties of a
//! remoting send, and a stored record (as POP returns it) back to a `Message`, with the property
//! names RocketMQ's own proxy uses.

use std::io::Read;

use protocol::message::properties::{self, KEYS, SHARDING_KEY, TAGS, UNIQ_KEY};
use protocol::message::record::{sys_flag, RecordView};

use md5::Digest as _;

use crate::pb::{self, Digest, DigestType, Encoding, MessageType, Resource, SystemProperties};
use crate::status::ProxyError;

/// RocketMQ 5's timer property: deliver at this absolute time, ms.
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// Set by POP on a popped message: the broker's extraInfo, which acks and invisible-time changes
/// name the message by (the receipt handle).
pub const POP_CK: &str = "POP_CK";
/// The queue offset of a prepared message in the half queue (CHECK_TRANSACTION_STATE, END_TRANSACTION).
pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";

/// Properties RocketMQ reserves: they are not the user's, so they are not handed back as user properties.
fn is_system_property(key: &str) -> bool {
    const RESERVED: &[&str] = &[
        "KEYS",
        "TAGS",
        "WAIT",
        "DELAY",
        "RETRY_TOPIC",
        "REAL_TOPIC",
        "REAL_QID",
        "TRAN_MSG",
        "PGROUP",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "BUYER_ID",
        "ORIGIN_MESSAGE_ID",
        "TRANSFER_FLAG",
        "CORRECTION_FLAG",
        "MQ2_FLAG",
        "RECONSUME_TIME",
        "MSG_REGION",
        "TRACE_ON",
        "UNIQ_KEY",
        "MAX_RECONSUME_TIMES",
        "CONSUME_START_TIME",
        "POP_CK",
        "POP_CK_OFFSET",
        "1ST_POP_TIME",
        "TRAN_PREPARED_QUEUE_OFFSET",
        "TRANSACTION_CHECK_TIMES",
        "CHECK_IMMUNITY_TIME_IN_SECONDS",
        "INSTANCE_ID",
        "CORRELATION_ID",
        "REPLY_TO_CLIENT",
        "TTL",
        "ARRIVE_TIME",
        "PUSH_REPLY_TIME",
        "CLUSTER",
        "MSG_TYPE",
        "INNER_MULTI_DISPATCH",
        "INNER_MULTI_QUEUE_OFFSET",
        "INNER_NUM",
        "INNER_BASE",
        "TRACE_CONTEXT",
        "DLQ_ORIGIN_TOPIC",
        "DLQ_ORIGIN_MESSAGE_ID",
    ];
    RESERVED.contains(&key) || key.starts_with("TIMER_") || key.starts_with("__")
}

/// What kind of send an SDK message asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendKind {
    Normal,
    Fifo,
    Delay,
    Transaction,
}

pub fn send_kind(msg: &pb::Message) -> SendKind {
    let sp = msg.system_properties.as_ref();
    let declared = sp.map(|s| s.message_type).unwrap_or_default();
    if declared == pb::MessageType::Transaction as i32 {
        SendKind::Transaction
    } else if sp.is_some_and(|s| s.message_group.as_deref().is_some_and(|g| !g.is_empty())) {
        SendKind::Fifo
    } else if sp.is_some_and(|s| s.delivery_timestamp.is_some()) {
        SendKind::Delay
    } else {
        SendKind::Normal
    }
}

/// The remoting properties of an SDK message. `deliver_at_ms` is set for delayed messages.
pub fn remoting_properties(msg: &pb::Message, producer_group: &str) -> Result<String, ProxyError> {
    let sp = msg
        .system_properties
        .as_ref()
        .ok_or_else(|| ProxyError::BadRequest("message without system properties".into()))?;
    if sp.message_id.is_empty() {
        return Err(ProxyError::Code(
            pb::Code::IllegalMessageId,
            "message id is empty".into(),
        ));
    }
    let mut props = String::new();
    for (k, v) in &msg.user_properties {
        if is_system_property(k) {
            return Err(ProxyError::Code(
                pb::Code::IllegalMessagePropertyKey,
                format!("property {k} is reserved by RocketMQ"),
            ));
        }
        properties::push(&mut props, k, v);
    }
    if let Some(tag) = sp.tag.as_deref().filter(|t| !t.is_empty()) {
        properties::push(&mut props, TAGS, tag);
    }
    if !sp.keys.is_empty() {
        properties::push(&mut props, KEYS, &sp.keys.join(" "));
    }
    properties::push(&mut props, UNIQ_KEY, &sp.message_id);
    properties::push(&mut props, "WAIT", "true");
    if let Some(group) = sp.message_group.as_deref().filter(|g| !g.is_empty()) {
        properties::push(&mut props, SHARDING_KEY, group);
    }
    if send_kind(msg) == SendKind::Transaction {
        properties::push(&mut props, properties::TRANSACTION_PREPARED, "true");
        properties::push(&mut props, properties::PRODUCER_GROUP, producer_group);
    }
    if let Some(at) = &sp.delivery_timestamp {
        properties::push(&mut props, TIMER_DELIVER_MS, &timestamp_ms(at).to_string());
    }
    if let Some(trace) = sp.trace_context.as_deref().filter(|t| !t.is_empty()) {
        properties::push(&mut props, "TRACE_CONTEXT", trace);
    }
    Ok(props)
}

pub fn timestamp_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(t.nanos / 1_000_000))
}

pub fn ms_timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

pub fn duration_ms(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos / 1_000_000))
}

pub fn ms_duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

/// The topic a stored record belongs to for its consumers: a retry copy's original topic.
pub fn user_topic(view: &RecordView<'_>) -> String {
    if view.topic.starts_with("%RETRY%") {
        if let Some(t) = properties::get(view.properties, "RETRY_TOPIC") {
            return t.to_string();
        }
    }
    view.topic.to_string()
}

/// A stored record as the SDK's `Message`. `receipt_handle` and `invisible_ms` are set for POP.
pub fn to_sdk_message(
    view: &RecordView<'_>,
    receipt_handle: Option<String>,
    invisible_ms: Option<i64>,
    namespace: &str,
) -> Result<pb::Message, ProxyError> {
    let props = view.properties;
    let mut body = view.body.to_vec();
    if view.sys_flag & sys_flag::COMPRESSED != 0 {
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(view.body)
            .read_to_end(&mut out)
            .map_err(|e| {
                ProxyError::Code(
                    pb::Code::MessageCorrupted,
                    format!("cannot inflate body: {e}"),
                )
            })?;
        body = out;
    }
    let mut user = std::collections::HashMap::new();
    for (k, v) in properties::iter(props) {
        if !is_system_property(k) {
            user.insert(k.to_string(), v.to_string());
        }
    }
    let group = properties::get(props, SHARDING_KEY).map(str::to_string);
    let kind = if properties::get(props, properties::TRANSACTION_PREPARED) == Some("true") {
        MessageType::Transaction
    } else if group.is_some() {
        MessageType::Fifo
    } else if properties::get(props, TIMER_DELIVER_MS).is_some()
        || properties::get(props, "DELAY").is_some()
    {
        MessageType::Delay
    } else {
        MessageType::Normal
    };
    let message_id = properties::get(props, UNIQ_KEY)
        .map(str::to_string)
        .unwrap_or_else(|| {
            protocol::message::msgid::offset_msg_id(view.store_host, view.physical_offset)
        });
    // MD5 in upper-case hex, as Apache's proxy sends it: every SDK checks that form the same way (they
    // disagree on how a CRC32 is written; the Node.js SDK's push consumer drops a message whose digest
    // does not match).
    let checksum: String = md5::Md5::digest(&body)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    let sp = SystemProperties {
        tag: properties::get(props, TAGS).map(str::to_string),
        keys: properties::get(props, KEYS)
            .map(|k| {
                k.split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        message_id,
        body_digest: Some(Digest {
            r#type: DigestType::Md5 as i32,
            checksum,
        }),
        body_encoding: Encoding::Identity as i32,
        message_type: kind as i32,
        born_timestamp: Some(ms_timestamp(view.born_timestamp)),
        born_host: view.born_host.ip().to_string(),
        store_timestamp: Some(ms_timestamp(view.store_timestamp)),
        store_host: view.store_host.to_string(),
        delivery_timestamp: properties::get(props, TIMER_DELIVER_MS)
            .and_then(|v| v.parse::<i64>().ok())
            .map(ms_timestamp),
        receipt_handle,
        queue_id: view.queue_id,
        queue_offset: Some(view.queue_offset),
        invisible_duration: invisible_ms.map(ms_duration),
        delivery_attempt: Some(view.reconsume_times.saturating_add(1)),
        message_group: group,
        trace_context: properties::get(props, "TRACE_CONTEXT").map(str::to_string),
        ..Default::default()
    };
    Ok(pb::Message {
        topic: Some(Resource {
            resource_namespace: namespace.to_string(),
            name: user_topic(view),
        }),
        user_properties: user,
        system_properties: Some(sp),
        body,
    })
}

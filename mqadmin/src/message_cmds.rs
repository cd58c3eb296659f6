//! Message lookups: queryMsgById (offsetMsgId via VIEW_MESSAGE_BY_ID, client msgId via the index),
//! queryMsgByKey (QUERY_MESSAGE on every master of the topic), queryMsgByOffset (a one-message pull)
//! and queryMsgByUniqueKey (a client msgId in the index; with -g -d, the message is pushed to one
//! consumer client by CONSUME_MESSAGE_DIRECTLY and its result printed).

use std::time::Duration;

use clap::Args;
use client::pull::{pull_command, PullOptions, PullResult, PullStatus};
use client::request::{expect_code, request};
use client::{ClientError, MessageQueue};
use protocol::header::{CommandHeader, QueryMessageRequestHeader, ViewMessageRequestHeader};
use protocol::message::msgid::{offset_msg_id, parse_offset_msg_id};
use protocol::message::properties;
use protocol::message::record::{decode_view, RecordView};
use protocol::{request_code, response_code, ExtFields};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::Namesrv;
use crate::stats_cmds::format_utc_ms;
use crate::table::{cell, Report, Table};

/// The consumer group RocketMQ's tools pull with (a system group every broker has).
pub const TOOLS_CONSUMER: &str = "TOOLS_CONSUMER";

/// Decodes the concatenated records of a response body; a bad record ends the list with an error.
fn decode_all(mut body: &[u8]) -> Result<Vec<Value>, ClientError> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let view = decode_view(body, false)?;
        out.push(message_json(&view));
        let rest = body
            .get(view.total_size..)
            .ok_or_else(|| ClientError::Invalid("record overruns the body".into()))?;
        if view.total_size == 0 {
            break;
        }
        body = rest;
    }
    Ok(out)
}

/// A message's properties as Java prints a map: `{KEYS=k, TAGS=t}`.
pub fn properties_text(m: &Value) -> String {
    let pairs: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    format!("{{{}}}", pairs.join(", "))
}

/// A stored message as the JSON every message command prints.
pub fn message_json(v: &RecordView<'_>) -> Value {
    let props: serde_json::Map<String, Value> = properties::iter(v.properties)
        .map(|(k, val)| (k.to_owned(), Value::String(val.to_owned())))
        .collect();
    json!({
        "topic": v.topic,
        "msgId": properties::get(v.properties, "UNIQ_KEY").unwrap_or(""),
        "offsetMsgId": offset_msg_id(v.store_host, v.physical_offset),
        "tags": properties::get(v.properties, "TAGS").unwrap_or(""),
        "keys": properties::get(v.properties, "KEYS").unwrap_or(""),
        "queueId": v.queue_id,
        "queueOffset": v.queue_offset,
        "commitLogOffset": v.physical_offset,
        "reconsumeTimes": v.reconsume_times,
        "bornTimestamp": v.born_timestamp,
        "bornHost": v.born_host.to_string(),
        "storeTimestamp": v.store_timestamp,
        "storeHost": v.store_host.to_string(),
        "sysFlag": v.sys_flag,
        "storeSize": v.total_size,
        "bodyCRC": v.body_crc,
        "preparedTransactionOffset": v.prepared_transaction_offset,
        "flag": v.flag,
        "properties": props,
        "bodyLength": v.body.len(),
        "body": String::from_utf8_lossy(v.body),
    })
}

fn message_table(messages: &[Value]) -> Table {
    let mut t = Table::new(&[
        "Message ID",
        "Offset Msg ID",
        "Topic",
        "Tags",
        "Keys",
        "QID",
        "Queue Offset",
        "Store Time",
        "Body",
    ]);
    for m in messages {
        let s = |k: &str| cell(m.get(k));
        let mut body = s("body");
        if body.chars().count() > 60 {
            body = body.chars().take(57).collect::<String>() + "...";
        }
        t.row(vec![
            s("msgId"),
            s("offsetMsgId"),
            s("topic"),
            s("tags"),
            s("keys"),
            s("queueId"),
            s("queueOffset"),
            s("storeTimestamp"),
            body,
        ]);
    }
    t
}

/// QUERY_MESSAGE for `key` on every master of the topic's route.
async fn query_key(
    admin: &Admin,
    topic: &str,
    key: &str,
    max: i32,
) -> Result<Vec<Value>, ClientError> {
    query_key_between(admin, topic, key, max, (0, i64::MAX)).await
}

/// QUERY_MESSAGE for `key` stored within `(begin, end)` (milliseconds) on every master of the
/// topic's route.
pub(crate) async fn query_key_between(
    admin: &Admin,
    topic: &str,
    key: &str,
    max: i32,
    (begin, end): (i64, i64),
) -> Result<Vec<Value>, ClientError> {
    let route = admin.route(topic).await?;
    let mut found = Vec::new();
    for b in &route.broker_datas {
        let Some(addr) = b.master_addr() else {
            continue;
        };
        let header = QueryMessageRequestHeader {
            topic: topic.to_owned(),
            key: key.to_owned(),
            max_num: max,
            begin_timestamp: begin,
            end_timestamp: end,
        };
        let client = admin.broker(addr).await?;
        let resp = client
            .invoke(
                request(request_code::QUERY_MESSAGE, header.to_ext_fields()),
                admin.timeout,
            )
            .await?;
        let resp = expect_code(
            resp,
            &[response_code::SUCCESS, response_code::QUERY_NOT_FOUND],
        )?;
        if resp.code == response_code::SUCCESS {
            found.extend(decode_all(&resp.body)?);
        }
    }
    Ok(found)
}

/// The message an offsetMsgId names, from the broker the id names.
async fn view_by_offset_id(admin: &Admin, id: &str) -> Result<Vec<Value>, ClientError> {
    let (addr, offset) =
        parse_offset_msg_id(id).map_err(|e| ClientError::Invalid(format!("msgId {id}: {e}")))?;
    let header = ViewMessageRequestHeader {
        topic: None,
        offset,
    };
    let resp = admin
        .call(
            &addr.to_string(),
            request(request_code::VIEW_MESSAGE_BY_ID, header.to_ext_fields()),
        )
        .await?;
    decode_all(&resp.body)
}

pub async fn query_by_id(
    admin: &Admin,
    ids: &str,
    topic: Option<&str>,
) -> Result<Report, ClientError> {
    let mut messages = Vec::new();
    for id in ids.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // Both id kinds are 32 hex digits: with a topic, look the client msgId (UNIQ_KEY) up in the
        // index first, then fall back to reading it as an offsetMsgId (as RocketMQ's tool does).
        let mut found = match topic {
            Some(t) => query_key(admin, t, id, 1)
                .await?
                .into_iter()
                .filter(|m| m.get("msgId").and_then(Value::as_str) == Some(id))
                .collect(),
            None => Vec::new(),
        };
        if found.is_empty() {
            found = view_by_offset_id(admin, id).await?;
        }
        messages.extend(found);
    }
    if messages.is_empty() {
        return Err(ClientError::Invalid(format!("no message found for {ids}")));
    }
    Ok(Report::new(
        message_table(&messages),
        Value::Array(messages),
    ))
}

pub async fn query_by_key(
    admin: &Admin,
    topic: &str,
    key: &str,
    max: i32,
) -> Result<Report, ClientError> {
    let messages = query_key(admin, topic, key, max.clamp(1, 64)).await?;
    Ok(Report::new(
        message_table(&messages),
        Value::Array(messages),
    ))
}

pub async fn query_by_offset(
    admin: &Admin,
    topic: &str,
    broker_name: &str,
    queue_id: i32,
    offset: i64,
) -> Result<Report, ClientError> {
    let route = admin.route(topic).await?;
    let addr = route
        .master_addr_of(broker_name)
        .ok_or_else(|| ClientError::NoBrokerAddr(broker_name.to_owned()))?
        .to_owned();
    let queue = MessageQueue {
        topic: topic.to_owned(),
        broker_name: broker_name.to_owned(),
        queue_id,
    };
    let options = PullOptions {
        max_msg_nums: 1,
        ..PullOptions::default()
    };
    let client = admin.broker(&addr).await?;
    let resp = client
        .invoke(
            pull_command(TOOLS_CONSUMER, &queue, offset, &options),
            admin.timeout,
        )
        .await?;
    let result = PullResult::from_response(resp)?;
    if result.status != PullStatus::Found {
        return Err(ClientError::Invalid(format!(
            "no message at {topic} {broker_name} queue {queue_id} offset {offset} ({:?}; queue holds {}..{})",
            result.status, result.min_offset, result.max_offset
        )));
    }
    let mut messages = Vec::new();
    for view in result.records().take(1) {
        messages.push(message_json(&view?));
    }
    Ok(Report::new(
        message_table(&messages),
        Value::Array(messages),
    ))
}

#[derive(Debug, Args)]
pub struct QueryMsgByUniqueKeyArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// The client msgId (UNIQ_KEY)
    #[arg(short = 'i', long = "msgId")]
    pub msg_id: String,
    /// With -d: push the message to this group's client
    #[arg(short = 'g', long = "consumerGroup", requires = "client_id")]
    pub group: Option<String>,
    /// With -g: the client to push the message to (its client id)
    #[arg(short = 'd', long = "clientId", requires = "group")]
    pub client_id: Option<String>,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Print every message with the id (up to 32), not only the first stored
    #[arg(short = 'a', long = "showAll", default_value_t = false)]
    pub show_all: bool,
}

pub async fn query_by_unique_key(
    args: QueryMsgByUniqueKeyArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let (topic, id) = (args.topic.trim(), args.msg_id.trim());
    let mut found: Vec<Value> = query_key(&admin, topic, id, 32)
        .await?
        .into_iter()
        .filter(|m| m.get("msgId").and_then(Value::as_str) == Some(id))
        .collect();
    if found.is_empty() {
        return Err(ClientError::Invalid(format!(
            "no message of topic {topic} has msgId {id}"
        )));
    }
    found.sort_by_key(|m| m.get("storeTimestamp").and_then(Value::as_i64));
    if let (Some(group), Some(client_id)) = (&args.group, &args.client_id) {
        return consume_directly(&admin, &found[..1], group.trim(), client_id.trim()).await;
    }
    if !args.show_all {
        found.truncate(1);
    }
    let mut lines = Vec::new();
    for (i, m) in found.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        lines.extend(message_lines(m));
    }
    Ok(Report::lines(lines, Value::Array(found)))
}

/// One message as RocketMQ's queryMsgById / queryMsgByUniqueKey print it (`Name:` padded to 20),
/// with the body itself where RocketMQ prints the path of a file it wrote the body to.
fn message_lines(m: &Value) -> Vec<String> {
    let s = |k: &str| cell(m.get(k));
    let time = |k: &str| {
        m.get(k)
            .and_then(Value::as_i64)
            .map(format_utc_ms)
            .unwrap_or_default()
    };
    [
        ("Topic:", s("topic")),
        ("Tags:", format!("[{}]", s("tags"))),
        ("Keys:", format!("[{}]", s("keys"))),
        ("Queue ID:", s("queueId")),
        ("Queue Offset:", s("queueOffset")),
        ("CommitLog Offset:", s("commitLogOffset")),
        ("Reconsume Times:", s("reconsumeTimes")),
        ("Born Timestamp:", time("bornTimestamp")),
        ("Store Timestamp:", time("storeTimestamp")),
        ("Born Host:", s("bornHost")),
        ("Store Host:", s("storeHost")),
        ("System Flag:", s("sysFlag")),
        ("Properties:", properties_text(m)),
        ("Message Body:", s("body")),
    ]
    .into_iter()
    .map(|(name, value)| format!("{name:<20} {value}"))
    .collect()
}

/// CONSUME_MESSAGE_DIRECTLY: the broker storing the message pushes it to the client, which consumes
/// it and answers a ConsumeMessageDirectlyResult.
async fn consume_directly(
    admin: &Admin,
    found: &[Value],
    group: &str,
    client_id: &str,
) -> Result<Report, ClientError> {
    let Some(offset_id) = found
        .first()
        .and_then(|m| m.get("offsetMsgId"))
        .and_then(Value::as_str)
    else {
        return Err(ClientError::Invalid(
            "the message has no offsetMsgId".into(),
        ));
    };
    let (addr, _) = parse_offset_msg_id(offset_id)
        .map_err(|e| ClientError::Invalid(format!("msgId {offset_id}: {e}")))?;
    let mut fields = ExtFields::new();
    fields.insert("consumerGroup", group);
    fields.insert("clientId", client_id);
    fields.insert("msgId", offset_id);
    let resp = admin
        .call(
            &addr.to_string(),
            request(request_code::CONSUME_MESSAGE_DIRECTLY, fields),
        )
        .await?;
    let result: Value = protocol::body::from_json(&resp.body)?;
    let field = |k: &str| {
        result.get(k).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let line = format!(
        "ConsumeMessageDirectlyResult [order={}, autoCommit={}, consumeResult={}, remark={}, spentTimeMills={}]",
        field("order").unwrap_or_else(|| "false".into()),
        field("autoCommit").unwrap_or_else(|| "true".into()),
        field("consumeResult").unwrap_or_else(|| "null".into()),
        field("remark").unwrap_or_else(|| "null".into()),
        field("spentTimeMills").unwrap_or_else(|| "0".into()),
    );
    Ok(Report::lines(vec![line], result))
}

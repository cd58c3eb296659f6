//! queryMsgTraceById: a message's traces (the Java client's `enableMsgTrace` records, stored as
//! ordinary messages in the trace topic with the traced msgId among their KEYS), found with
//! QUERY_MESSAGE by that key, decoded by `protocol::trace` and printed as Apache's tool prints its
//! `TraceView`s: a Pub block per send, then a Sub block per consumer group (SubAfter records).

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::ClientError;
use protocol::trace::{self, TraceRecord, TraceType};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::message_cmds::query_key_between;
use crate::shared_args::Namesrv;
use crate::stats_cmds::format_utc_ms;
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Query a message trace.
    #[command(name = "queryMsgTraceById")]
    QueryMsgTraceById(QueryMsgTraceByIdArgs),
}

#[derive(Debug, Args)]
pub struct QueryMsgTraceByIdArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Message Id (the client msgId the traces name)
    #[arg(short = 'i', long = "msgId")]
    pub msg_id: String,
    /// The name value of message trace topic
    #[arg(short = 't', long = "traceTopic", default_value = trace::TRACE_TOPIC)]
    pub trace_topic: String,
    /// Begin timestamp (ms)
    #[arg(short = 'b', long = "beginTimestamp", default_value_t = 0)]
    pub begin: i64,
    /// End timestamp (ms)
    #[arg(short = 'e', long = "endTimestamp", default_value_t = i64::MAX)]
    pub end: i64,
    /// The maximum number of trace messages the query returns
    #[arg(short = 'c', long = "maxNum", default_value_t = 64)]
    pub max: i32,
}

pub async fn run(command: TraceCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        TraceCommand::QueryMsgTraceById(args) => query_msg_trace_by_id(args, timeout).await,
    }
}

/// One printed trace: Apache's `TraceView`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceView {
    pub record: TraceRecord,
    /// The trace message's born host (address without port): the client that wrote the trace.
    pub client_host: String,
    /// The record's time, or the trace message's born time where the record has none.
    pub time_ms: i64,
}

impl TraceView {
    fn status(&self) -> &'static str {
        if self.record.success {
            "success"
        } else {
            "failed"
        }
    }

    fn json(&self) -> Value {
        let r = &self.record;
        json!({
            "msgType": r.trace_type.name(),
            "groupName": r.group_name,
            "clientHost": self.client_host,
            "timeStamp": self.time_ms,
            "costTime": r.cost_time,
            "status": self.status(),
            "topic": r.topic,
            "msgId": r.msg_id,
            "offSetMsgId": r.offset_msg_id,
            "tags": r.tags,
            "keys": r.keys,
            "storeHost": r.store_host,
        })
    }
}

/// The traces of `msg_id` in one stored trace message (as `message_cmds::message_json` prints it).
pub fn views_of(msg_id: &str, message: &Value) -> Vec<TraceView> {
    let text = |k: &str| message.get(k).and_then(Value::as_str).unwrap_or_default();
    let born = text("bornHost");
    let client_host = born
        .parse::<SocketAddr>()
        .map_or_else(|_| born.to_owned(), |a| a.ip().to_string());
    let born_ms = message
        .get("bornTimestamp")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    trace::decode(text("body").as_bytes())
        .into_iter()
        .filter(|r| r.msg_id == msg_id)
        .map(|record| TraceView {
            time_ms: record.timestamp.unwrap_or(born_ms),
            record,
            client_host: client_host.clone(),
        })
        .collect()
}

/// `yyyy-MM-dd HH:mm:ss` (UTC).
fn second_time(ms: i64) -> String {
    let full = format_utc_ms(ms);
    full.split(',').next().unwrap_or_default().to_owned()
}

fn line(cells: [&str; 6]) -> String {
    let [a, b, c, d, e, f] = cells;
    format!("{a:<10} {b:<20} {c:<20} {d:<20} {e:<10} {f:<10}")
}

fn view_line(kind: &str, v: &TraceView) -> String {
    line([
        kind,
        &v.record.group_name,
        &v.client_host,
        &second_time(v.time_ms),
        &format!("{}ms", v.record.cost_time),
        v.status(),
    ])
}

/// Apache's printMessageTrace: each Pub with its own header and a blank line; then per consumer
/// group (in the order first seen) a header, its Sub lines (SubAfter records) and a blank line.
pub fn render(views: &[TraceView]) -> Vec<String> {
    let mut out = Vec::new();
    let mut groups: Vec<(&str, Vec<&TraceView>)> = Vec::new();
    for v in views {
        match v.record.trace_type {
            TraceType::Pub => {
                out.push(line([
                    "#Type",
                    "#ProducerGroup",
                    "#ClientHost",
                    "#SendTime",
                    "#CostTimes",
                    "#Status",
                ]));
                out.push(view_line("Pub", v));
                out.push(String::new());
            }
            TraceType::SubAfter => {
                let group = v.record.group_name.as_str();
                match groups.iter_mut().find(|(g, _)| *g == group) {
                    Some((_, list)) => list.push(v),
                    None => groups.push((group, vec![v])),
                }
            }
            _ => {}
        }
    }
    for (_, list) in groups {
        out.push(line([
            "#Type",
            "#ConsumerGroup",
            "#ClientHost",
            "#ConsumerTime",
            "#CostTimes",
            "#Status",
        ]));
        out.extend(list.into_iter().map(|v| view_line("Sub", v)));
        out.push(String::new());
    }
    out
}

async fn query_msg_trace_by_id(
    args: QueryMsgTraceByIdArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let (topic, id) = (args.trace_topic.trim(), args.msg_id.trim());
    let messages = query_key_between(
        &admin,
        topic,
        id,
        args.max.clamp(1, 64),
        (args.begin, args.end),
    )
    .await?;
    let views: Vec<TraceView> = messages.iter().flat_map(|m| views_of(id, m)).collect();
    let json = Value::Array(views.iter().map(TraceView::json).collect());
    Ok(Report::lines(render(&views), json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(body: &str) -> Value {
        json!({"bornHost": "10.1.2.3:50123", "bornTimestamp": 1_700_000_000_000_i64, "body": body})
    }

    #[test]
    fn apache_layout_pub_then_groups() {
        let body = [
            "Pub\u{1}1733500000123\u{1}DefaultRegion\u{1}pg\u{1}T\u{1}M1\u{1}\u{1}\u{1}h\u{1}3\u{1}7\u{1}0\u{1}O\u{1}true\u{2}",
            "SubBefore\u{1}1733500000200\u{1}DefaultRegion\u{1}cg\u{1}r\u{1}M1\u{1}0\u{1}\u{2}",
            "SubAfter\u{1}r\u{1}M1\u{1}4\u{1}false\u{1}\u{1}1\u{1}1733500000205\u{1}cg\u{2}",
            "SubAfter\u{1}r\u{1}OTHER\u{1}4\u{1}true\u{1}\u{1}0\u{1}1733500000205\u{1}cg\u{2}",
            "SubAfter\u{1}r\u{1}M1\u{1}2\u{1}true\u{1}k\u{1}0\u{2}",
        ]
        .concat();
        let views = views_of("M1", &stored(&body));
        assert_eq!(views.len(), 4, "{views:?}");
        let lines = render(&views);
        let expect = [
            "#Type      #ProducerGroup       #ClientHost          #SendTime            #CostTimes #Status   ",
            "Pub        pg                   10.1.2.3             2024-12-06 15:46:40  7ms        success   ",
            "",
            "#Type      #ConsumerGroup       #ClientHost          #ConsumerTime        #CostTimes #Status   ",
            "Sub        cg                   10.1.2.3             2024-12-06 15:46:40  4ms        failed    ",
            "",
            "#Type      #ConsumerGroup       #ClientHost          #ConsumerTime        #CostTimes #Status   ",
            "Sub                             10.1.2.3             2023-11-14 22:13:20  2ms        success   ",
            "",
        ];
        assert_eq!(lines, expect);
        assert!(views_of("M1", &json!({"body": "\u{ff}garbage"})).is_empty());
    }
}

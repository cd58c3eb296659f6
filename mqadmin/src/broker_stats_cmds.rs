//! Broker statistics commands: statsAll (per topic and consumer group: backlog, put/get TPS over the
//! last minute and messages over the last day, from VIEW_BROKER_STATS_DATA, QUERY_TOPIC_CONSUME_BY_WHO
//! and GET_CONSUME_STATS) and brokerConsumeStats (every group's queues on one broker,
//! GET_BROKER_CONSUME_STATS).

use std::collections::BTreeSet;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{from_fastjson, from_json, BrokerStatsData, GroupList, MessageQueue};
use protocol::header::{
    CommandHeader, GetConsumeStatsInBrokerHeader, QueryTopicConsumeByWhoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
};
use protocol::request_code;
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::Namesrv;
use crate::stats_cmds::{consume_stats, format_utc_ms, topic_masters, RETRY_GROUP_TOPIC_PREFIX};
use crate::table::{Report, Table};

/// Dead-letter topics, left out of statsAll as RocketMQ's tool does.
const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// BrokerStatsManager's item names.
const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";

#[derive(Debug, Subcommand)]
pub enum BrokerStatsCommand {
    /// Per topic and consumer group: backlog, in/out TPS over the last minute, messages in/out over
    /// the last 24 hours.
    #[command(name = "statsAll")]
    StatsAll(StatsAllArgs),
    /// Every consumer group's queues on one broker: broker offset, consumer offset, lag.
    #[command(name = "brokerConsumeStats")]
    BrokerConsumeStats(BrokerConsumeStatsArgs),
}

#[derive(Debug, Args)]
pub struct StatsAllArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Only topics with messages in or out over the last 24 hours
    #[arg(short = 'a', long = "activeTopic", default_value_t = false)]
    pub active_topic: bool,
    /// Only this topic
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

#[derive(Debug, Args)]
pub struct BrokerConsumeStatsArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: String,
    /// Request timeout in milliseconds
    #[arg(short = 't', long = "timeoutMillis", default_value_t = 50_000)]
    pub timeout_millis: u64,
    /// Only queues whose lag is at least this
    #[arg(short = 'l', long = "level", default_value_t = 0)]
    pub level: i64,
    /// Only ordered topics
    #[arg(short = 'o', long = "order", default_value_t = false, action = clap::ArgAction::Set)]
    pub order: bool,
}

pub async fn run(command: BrokerStatsCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        BrokerStatsCommand::StatsAll(args) => {
            stats_all(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
        BrokerStatsCommand::BrokerConsumeStats(args) => {
            let timeout = Duration::from_millis(args.timeout_millis.max(1));
            broker_consume_stats(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
    }
}

/// One statistics item of one broker; `None` when the broker has none (nothing counted yet).
async fn stats_data(
    admin: &Admin,
    addr: &str,
    name: &str,
    key: &str,
) -> Result<Option<BrokerStatsData>, ClientError> {
    let header = ViewBrokerStatsDataRequestHeader {
        stats_name: name.to_owned(),
        stats_key: key.to_owned(),
    };
    let cmd = request(request_code::VIEW_BROKER_STATS_DATA, header.to_ext_fields());
    match admin.call(addr, cmd).await {
        Ok(resp) => Ok(Some(from_json(&resp.body)?)),
        Err(ClientError::Response { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Messages over the last day, as RocketMQ's tool counts them: the day's sum, else the hour's, else
/// the minute's.
fn day_sum(d: &BrokerStatsData) -> u64 {
    [d.stats_day.sum, d.stats_hour.sum, d.stats_minute.sum]
        .into_iter()
        .find(|s| *s != 0)
        .unwrap_or(0)
}

/// (minute TPS, messages over the day) of an item summed over `addrs`.
async fn summed(
    admin: &Admin,
    addrs: &[String],
    name: &str,
    key: &str,
) -> Result<(f64, u64), ClientError> {
    let (mut tps, mut sum) = (0.0, 0u64);
    for addr in addrs {
        if let Some(d) = stats_data(admin, addr, name, key).await? {
            tps += d.stats_minute.tps;
            sum = sum.saturating_add(day_sum(&d));
        }
    }
    Ok((tps, sum))
}

async fn stats_all(admin: &Admin, args: &StatsAllArgs) -> Result<Report, ClientError> {
    let list = crate::topic_cmds::all_topics(admin).await?;
    let only = args
        .topic
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let mut table = Table::new(&[
        "Topic",
        "Consumer Group",
        "Accumulation",
        "InTPS",
        "OutTPS",
        "InMsg24Hour",
        "OutMsg24Hour",
    ]);
    let mut rows = Vec::new();
    let mut topics: Vec<&String> = list
        .topic_list
        .iter()
        .filter(|t| {
            !t.starts_with(RETRY_GROUP_TOPIC_PREFIX) && !t.starts_with(DLQ_GROUP_TOPIC_PREFIX)
        })
        .filter(|t| only.is_none_or(|o| o == t.as_str()))
        .collect();
    topics.sort();
    for topic in topics {
        // A topic without a route (being deleted) is skipped, as RocketMQ's tool does.
        let Ok(masters) = topic_masters(admin, topic).await else {
            continue;
        };
        let addrs: Vec<String> = masters.into_iter().map(|(_, a)| a).collect();
        let (in_tps, in_day) = summed(admin, &addrs, TOPIC_PUT_NUMS, topic).await?;
        let mut groups = BTreeSet::new();
        for addr in &addrs {
            let header = QueryTopicConsumeByWhoRequestHeader {
                topic: topic.clone(),
            };
            let cmd = request(
                request_code::QUERY_TOPIC_CONSUME_BY_WHO,
                header.to_ext_fields(),
            );
            let resp = admin.call(addr, cmd).await?;
            groups.extend(from_json::<GroupList>(&resp.body)?.group_list);
        }
        if groups.is_empty() {
            if !args.active_topic || in_day > 0 {
                table.row(vec![
                    topic.clone(),
                    String::new(),
                    "0".into(),
                    format!("{in_tps:.2}"),
                    String::new(),
                    in_day.to_string(),
                    "NO_CONSUMER".into(),
                ]);
                rows.push(json!({
                    "topic": topic, "group": null, "accumulation": 0, "inTps": in_tps,
                    "inMsg24Hour": in_day,
                }));
            }
            continue;
        }
        for group in &groups {
            let key = format!("{topic}@{group}");
            let (out_tps, out_day) = summed(admin, &addrs, GROUP_GET_NUMS, &key).await?;
            let mut accumulation = 0i64;
            for addr in &addrs {
                // A broker that cannot say adds nothing (RocketMQ's tool goes on too).
                if let Ok(stats) = consume_stats(admin, addr, group, Some(topic)).await {
                    accumulation = accumulation.saturating_add(stats.total_diff());
                }
            }
            let accumulation = accumulation.max(0);
            if args.active_topic && in_day == 0 && out_day == 0 {
                continue;
            }
            table.row(vec![
                topic.clone(),
                group.clone(),
                accumulation.to_string(),
                format!("{in_tps:.2}"),
                format!("{out_tps:.2}"),
                in_day.to_string(),
                out_day.to_string(),
            ]);
            rows.push(json!({
                "topic": topic, "group": group, "accumulation": accumulation, "inTps": in_tps,
                "outTps": out_tps, "inMsg24Hour": in_day, "outMsg24Hour": out_day,
            }));
        }
    }
    Ok(Report::new(table, json!({ "stats": rows })))
}

async fn broker_consume_stats(
    admin: &Admin,
    args: &BrokerConsumeStatsArgs,
) -> Result<Report, ClientError> {
    let addr = args.broker.trim();
    let header = GetConsumeStatsInBrokerHeader {
        is_order: Some(args.order),
    };
    let resp = admin
        .call(
            addr,
            request(
                request_code::GET_BROKER_CONSUME_STATS,
                header.to_ext_fields(),
            ),
        )
        .await?;
    let body: Value = from_fastjson(&resp.body)?;
    let mut table = Table::new(&[
        "Topic",
        "Group",
        "Broker Name",
        "QID",
        "Broker Offset",
        "Consumer Offset",
        "Diff",
        "LastTime",
    ]);
    let mut rows = Vec::new();
    let lists = body.get("consumeStatsList").and_then(Value::as_array);
    for (group, stats) in lists
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flatten()
    {
        for one in stats.as_array().into_iter().flatten() {
            let mut queues: Vec<(MessageQueue, &Value)> = one
                .get("offsetTable")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((serde_json::from_str(k).ok()?, v)))
                .collect();
            queues.sort_by(|a, b| a.0.cmp(&b.0));
            for (mq, w) in queues {
                let n = |k: &str| w.get(k).and_then(Value::as_i64).unwrap_or(0);
                let (broker_offset, consumer_offset, last) =
                    (n("brokerOffset"), n("consumerOffset"), n("lastTimestamp"));
                let diff = broker_offset.saturating_sub(consumer_offset);
                // As RocketMQ's tool: queues below the level, or never consumed from, are left out.
                if diff < args.level || last <= 0 {
                    continue;
                }
                let mut time = format_utc_ms(last);
                time.truncate(19);
                table.row(vec![
                    mq.topic.clone(),
                    group.clone(),
                    mq.broker_name.clone(),
                    mq.queue_id.to_string(),
                    broker_offset.to_string(),
                    consumer_offset.to_string(),
                    diff.to_string(),
                    time,
                ]);
                rows.push(json!({
                    "topic": mq.topic, "group": group, "brokerName": mq.broker_name,
                    "queueId": mq.queue_id, "brokerOffset": broker_offset,
                    "consumerOffset": consumer_offset, "diff": diff, "lastTimestamp": last,
                }));
            }
        }
    }
    let total = body.get("totalDiff").and_then(Value::as_i64).unwrap_or(0);
    Ok(Report::new(
        table,
        json!({"brokerAddr": addr, "queues": rows, "totalDiff": total}),
    )
    .with_footer(String::new())
    .with_footer(format!("Diff Total: {total}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::BrokerStatsItem;

    #[test]
    fn day_sum_falls_back_to_shorter_windows() {
        let item = |sum| BrokerStatsItem {
            sum,
            ..BrokerStatsItem::default()
        };
        let mut d = BrokerStatsData {
            stats_minute: item(3),
            ..BrokerStatsData::default()
        };
        assert_eq!(day_sum(&d), 3);
        d.stats_hour = item(7);
        assert_eq!(day_sum(&d), 7);
        d.stats_day = item(9);
        assert_eq!(day_sum(&d), 9);
        assert_eq!(day_sum(&BrokerStatsData::default()), 0);
    }
}

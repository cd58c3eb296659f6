//! Consumer-group commands: consumerProgress (per queue broker offset, consumer offset, lag),
//! resetOffsetByTime and updateSubGroup.

use std::collections::BTreeMap;

use client::broker_api;
use client::request::request;
use client::ClientError;
use protocol::body::{
    from_json, split_offset_table_key, ConsumerOffsetSerializeWrapper, TopicRouteData,
};
use protocol::{request_code, ExtFields};
use serde_json::json;

use crate::admin::Admin;
use crate::table::{Report, Table};

/// (broker name, master address, queue count) of each broker group of a route, by name.
fn route_masters(route: &TopicRouteData) -> Vec<(String, String, i32)> {
    let mut out: Vec<(String, String, i32)> = route
        .queue_datas
        .iter()
        .filter_map(|q| {
            let addr = route.master_addr_of(&q.broker_name)?;
            Some((
                q.broker_name.clone(),
                addr.to_owned(),
                q.read_queue_nums.max(q.write_queue_nums),
            ))
        })
        .collect();
    out.sort();
    out
}

/// Committed offsets of `group` on one broker, by topic then queue (GET_ALL_CONSUMER_OFFSET).
async fn group_offsets(
    admin: &Admin,
    addr: &str,
    group: &str,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, ClientError> {
    let resp = admin
        .call(
            addr,
            request(request_code::GET_ALL_CONSUMER_OFFSET, ExtFields::new()),
        )
        .await?;
    let wrapper: ConsumerOffsetSerializeWrapper = from_json(&resp.body)?;
    let mut out = BTreeMap::new();
    for (key, queues) in wrapper.offset_table {
        if let Some((topic, g)) = split_offset_table_key(&key) {
            if g == group {
                out.insert(topic.to_owned(), queues);
            }
        }
    }
    Ok(out)
}

pub async fn consumer_progress(
    admin: &Admin,
    group: &str,
    only_topic: Option<&str>,
) -> Result<Report, ClientError> {
    // The topics to show: the one asked for, or every topic the group has offsets for on any master.
    let mut offsets: BTreeMap<(String, String), BTreeMap<i32, i64>> = BTreeMap::new();
    let mut topics = std::collections::BTreeSet::new();
    for (name, addr) in admin.masters(None).await? {
        for (topic, queues) in group_offsets(admin, &addr, group).await? {
            topics.insert(topic.clone());
            offsets.insert((topic, name.clone()), queues);
        }
    }
    if let Some(t) = only_topic {
        topics.retain(|x| x == t);
        topics.insert(t.to_owned());
    }
    let mut table = Table::new(&[
        "Topic",
        "Broker Name",
        "QID",
        "Broker Offset",
        "Consumer Offset",
        "Diff",
    ]);
    let mut rows = Vec::new();
    let mut diff_total: i64 = 0;
    for topic in &topics {
        let route = match admin.route(topic).await {
            Ok(r) => r,
            // A group's offsets can outlive its topic (deleted): nothing to measure against.
            Err(ClientError::Response { .. }) | Err(ClientError::NoRoute(_))
                if only_topic.is_none() =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        for (name, addr, queues) in route_masters(&route) {
            let client = admin.broker(&addr).await?;
            let committed = offsets.get(&(topic.clone(), name.clone()));
            for queue_id in 0..queues {
                let broker_offset =
                    broker_api::max_offset(&client, topic, queue_id, admin.timeout).await?;
                // As RocketMQ's consume stats: a queue without a committed offset counts from 0.
                let consumer_offset = committed
                    .and_then(|q| q.get(&queue_id))
                    .copied()
                    .unwrap_or(0)
                    .max(0);
                let diff = broker_offset.saturating_sub(consumer_offset).max(0);
                diff_total = diff_total.saturating_add(diff);
                table.row(vec![
                    topic.clone(),
                    name.clone(),
                    queue_id.to_string(),
                    broker_offset.to_string(),
                    consumer_offset.to_string(),
                    diff.to_string(),
                ]);
                rows.push(json!({
                    "topic": topic, "brokerName": name, "queueId": queue_id,
                    "brokerOffset": broker_offset, "consumerOffset": consumer_offset, "diff": diff,
                }));
            }
        }
    }
    Ok(Report::new(
        table,
        json!({"group": group, "queues": rows, "diffTotal": diff_total}),
    )
    .with_footer(format!("Diff Total: {diff_total}")))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Epoch milliseconds from `now`, a number of milliseconds, or `yyyy-MM-dd#HH:mm:ss:SSS` (UTC).
pub fn parse_timestamp(text: &str, now_ms: i64) -> Result<i64, ClientError> {
    let bad = || {
        ClientError::Invalid(format!(
            "timestamp {text:?}: expected epoch ms, now, or yyyy-MM-dd#HH:mm:ss:SSS"
        ))
    };
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return Ok(now_ms);
    }
    if let Ok(ms) = text.parse::<i64>() {
        return if ms >= 0 { Ok(ms) } else { Err(bad()) };
    }
    let (date, time) = text.split_once('#').ok_or_else(bad)?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse::<i64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let (&[year, month, day], &[hour, minute, second, milli]) = (d.as_slice(), t.as_slice()) else {
        return Err(bad());
    };
    let valid = (1970..=9999).contains(&year)
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second)
        && (0..1000).contains(&milli);
    if !valid {
        return Err(bad());
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Ok(secs * 1000 + milli)
}

pub async fn reset_offset_by_time(
    admin: &Admin,
    group: &str,
    topic: &str,
    timestamp: i64,
) -> Result<Report, ClientError> {
    let route = admin.route(topic).await?;
    let mut table = Table::new(&["Broker Name", "QID", "Old Offset", "New Offset"]);
    let mut rows = Vec::new();
    for (name, addr, queues) in route_masters(&route) {
        let client = admin.broker(&addr).await?;
        for queue_id in 0..queues {
            let new_offset = admin
                .search_offset(&addr, topic, queue_id, timestamp)
                .await?;
            let old =
                broker_api::query_consumer_offset(&client, group, topic, queue_id, admin.timeout)
                    .await?;
            broker_api::update_consumer_offset(
                &client,
                group,
                topic,
                queue_id,
                new_offset,
                false,
                admin.timeout,
            )
            .await?;
            table.row(vec![
                name.clone(),
                queue_id.to_string(),
                old.map_or("-".into(), |o| o.to_string()),
                new_offset.to_string(),
            ]);
            rows.push(json!({"brokerName": name, "queueId": queue_id, "oldOffset": old, "newOffset": new_offset}));
        }
    }
    Ok(Report::new(
        table,
        json!({"group": group, "topic": topic, "timestamp": timestamp, "queues": rows}),
    ))
}

/// RocketMQ's `SubscriptionGroupConfig` as updateSubGroup sends it.
pub struct SubGroupSettings {
    pub group: String,
    pub consume_enable: bool,
    pub consume_from_min_enable: bool,
    pub consume_broadcast_enable: bool,
    pub consume_message_orderly: bool,
    pub retry_queue_nums: i32,
    pub retry_max_times: i32,
    pub broker_id: i64,
    pub which_broker_when_consume_slowly: i64,
    pub notify_consumer_ids_changed_enable: bool,
}

pub async fn update_sub_group(
    admin: &Admin,
    addrs: Vec<String>,
    s: SubGroupSettings,
) -> Result<Report, ClientError> {
    if s.group.trim().is_empty() {
        return Err(ClientError::Invalid("group name is empty".into()));
    }
    let body = json!({
        "groupName": s.group,
        "consumeEnable": s.consume_enable,
        "consumeFromMinEnable": s.consume_from_min_enable,
        "consumeBroadcastEnable": s.consume_broadcast_enable,
        "consumeMessageOrderly": s.consume_message_orderly,
        "retryQueueNums": s.retry_queue_nums,
        "retryMaxTimes": s.retry_max_times,
        "brokerId": s.broker_id,
        "whichBrokerWhenConsumeSlowly": s.which_broker_when_consume_slowly,
        "notifyConsumerIdsChangedEnable": s.notify_consumer_ids_changed_enable,
    });
    let bytes = serde_json::to_vec(&body).map_err(|e| ClientError::Invalid(e.to_string()))?;
    let mut table = Table::new(&["Broker Addr", "Result"]);
    for addr in &addrs {
        let cmd = request(
            request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            ExtFields::new(),
        )
        .with_body(bytes.clone());
        admin.call(addr, cmd).await?;
        table.row(vec![addr.clone(), "success".into()]);
    }
    Ok(Report::new(
        table,
        json!({"config": body, "brokers": addrs}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_in_rocketmq_formats() {
        assert_eq!(parse_timestamp("now", 42).unwrap(), 42);
        assert_eq!(
            parse_timestamp("1700000000123", 0).unwrap(),
            1_700_000_000_123
        );
        // 2023-11-14T22:13:20.123Z is 1700000000123 ms.
        assert_eq!(
            parse_timestamp("2023-11-14#22:13:20:123", 0).unwrap(),
            1_700_000_000_123
        );
        assert_eq!(parse_timestamp("1970-01-01#00:00:00:000", 0).unwrap(), 0);
        assert_eq!(
            parse_timestamp("2024-02-29#00:00:00:000", 0).unwrap(),
            1_709_164_800_000
        );
        for bad in [
            "",
            "-5",
            "2023-13-01#00:00:00:000",
            "2023-11-14",
            "2023-11-14#22:13",
            "x#y",
        ] {
            assert!(parse_timestamp(bad, 0).is_err(), "{bad}");
        }
    }
}

//! topicStatus, consumerProgress and resetOffsetByTime through the brokers' own admin statistics
//! (GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, INVOKE_BROKER_TO_RESET_OFFSET), as Java's mqadmin asks
//! them. A broker that does not serve these requests (REQUEST_CODE_NOT_SUPPORTED, or a Java broker
//! answering CONSUMER_NOT_ONLINE to a reset) is handled by the older per-queue commands.

use std::collections::BTreeMap;

use client::broker_api;
use client::request::request;
use client::ClientError;
use protocol::body::{
    from_json, ConsumeStats, ConsumerConnection, MessageQueue, ResetOffsetBody, TopicStatsTable,
};
use protocol::header::{
    CommandHeader, GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader, ResetOffsetRequestHeader,
};
use protocol::{request_code, response_code, LanguageCode, RemotingCommand};
use serde_json::json;

use crate::admin::{held_queues, Admin};
use crate::table::{Report, Table};

/// Retry topics are named after their group: `%RETRY%group`.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";

/// (broker name, master address) of every broker group serving `topic`, by name.
pub async fn topic_masters(
    admin: &Admin,
    topic: &str,
) -> Result<Vec<(String, String)>, ClientError> {
    let route = admin.route(topic).await?;
    let mut out: Vec<(String, String)> = route
        .broker_datas
        .iter()
        .filter(|b| {
            route
                .queue_datas
                .iter()
                .any(|q| q.broker_name == b.broker_name)
        })
        .filter_map(|b| Some((b.broker_name.clone(), b.master_addr()?.to_owned())))
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether an error says the broker does not serve the request (so the older way is used).
fn not_served(e: &ClientError) -> bool {
    matches!(e, ClientError::Response { code, .. } if *code == response_code::REQUEST_CODE_NOT_SUPPORTED)
}

/// `yyyy-MM-dd HH:mm:ss,SSS` in UTC (Java's mqadmin prints local time in this shape).
pub fn format_utc_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02},{:03}",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

fn time_or_blank(ms: i64) -> String {
    if ms > 0 {
        format_utc_ms(ms)
    } else {
        String::new()
    }
}

pub async fn topic_status(admin: &Admin, topic: &str) -> Result<Report, ClientError> {
    let mut all = TopicStatsTable::default();
    for (_, addr) in topic_masters(admin, topic).await? {
        let header = GetTopicStatsInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let cmd = request(request_code::GET_TOPIC_STATS_INFO, header.to_ext_fields());
        match admin.call(&addr, cmd).await {
            Ok(resp) => {
                let table = TopicStatsTable::from_json(&resp.body)?;
                all.topic_put_tps += table.topic_put_tps;
                all.offset_table.extend(table.offset_table);
            }
            Err(e) if not_served(&e) => return crate::topic_cmds::topic_status(admin, topic).await,
            Err(e) => return Err(e),
        }
    }
    let mut table = Table::new(&[
        "Broker Name",
        "QID",
        "Min Offset",
        "Max Offset",
        "Last Updated",
    ]);
    let mut rows = Vec::new();
    for (mq, t) in &all.offset_table {
        table.row(vec![
            mq.broker_name.clone(),
            mq.queue_id.to_string(),
            t.min_offset.to_string(),
            t.max_offset.to_string(),
            time_or_blank(t.last_update_timestamp),
        ]);
        rows.push(json!({
            "brokerName": mq.broker_name, "queueId": mq.queue_id, "minOffset": t.min_offset,
            "maxOffset": t.max_offset, "lastUpdateTimestamp": t.last_update_timestamp,
        }));
    }
    Ok(Report::new(
        table,
        json!({"topic": topic, "queues": rows, "topicPutTps": all.topic_put_tps}),
    )
    .with_footer(String::new())
    // Java prints the double as it is (0.0).
    .with_footer(format!("Topic Put TPS: {:?}", all.topic_put_tps)))
}

/// GET_CONSUME_STATS of `group` (on `topic`, or every topic it has offsets for) from one broker.
pub async fn consume_stats(
    admin: &Admin,
    addr: &str,
    group: &str,
    topic: Option<&str>,
) -> Result<ConsumeStats, ClientError> {
    let header = GetConsumeStatsRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.map(str::to_owned),
        topic_list: None,
    };
    let resp = admin
        .call(
            addr,
            request(request_code::GET_CONSUME_STATS, header.to_ext_fields()),
        )
        .await?;
    Ok(ConsumeStats::from_json(&resp.body)?)
}

/// Which client holds each queue of `group`, by the client's IP (the client id before `@`), from
/// each online client's running info (consumerProgress -s).
async fn queue_holders(
    admin: &Admin,
    group: &str,
) -> Result<BTreeMap<MessageQueue, String>, ClientError> {
    let addrs = admin.master_addrs(None).await?;
    let mut holders = BTreeMap::new();
    let Some((via, cc)) = connections(admin, &addrs, group).await? else {
        return Ok(holders);
    };
    for c in &cc.connection_set {
        // A client that does not answer holds nothing we can show.
        let Ok(info) = admin.running_info(&via, group, &c.client_id, false).await else {
            continue;
        };
        let ip = c.client_id.split('@').next().unwrap_or_default().to_owned();
        for (mq, _) in held_queues(&info) {
            holders.insert(mq, ip.clone());
        }
    }
    Ok(holders)
}

pub async fn consumer_progress(
    admin: &Admin,
    group: &str,
    topic: Option<&str>,
    show_client_ip: bool,
) -> Result<Report, ClientError> {
    let brokers = match topic {
        Some(t) => topic_masters(admin, t).await?,
        None => admin.masters(None).await?,
    };
    let mut all = ConsumeStats::default();
    for (_, addr) in brokers {
        match consume_stats(admin, &addr, group, topic).await {
            Ok(stats) => {
                all.consume_tps += stats.consume_tps;
                all.offset_table.extend(stats.offset_table);
            }
            Err(e) if not_served(&e) => {
                return crate::consumer_cmds::consumer_progress(admin, group, topic).await
            }
            Err(e) => return Err(e),
        }
    }
    let holders = if show_client_ip {
        Some(queue_holders(admin, group).await?)
    } else {
        None
    };
    let mut headers = vec![
        "Topic",
        "Broker Name",
        "QID",
        "Broker Offset",
        "Consumer Offset",
    ];
    if holders.is_some() {
        headers.push("Client IP");
    }
    headers.extend(["Diff", "Inflight", "LastTime"]);
    let mut table = Table::new(&headers);
    let mut rows = Vec::new();
    let (mut diff_total, mut inflight_total) = (0i64, 0i64);
    for (mq, w) in &all.offset_table {
        let diff = w.broker_offset.saturating_sub(w.consumer_offset);
        let inflight = w.pull_offset.saturating_sub(w.consumer_offset);
        diff_total = diff_total.saturating_add(diff);
        inflight_total = inflight_total.saturating_add(inflight);
        let last = if w.last_timestamp > 0 {
            format_utc_ms(w.last_timestamp)
        } else {
            "N/A".to_owned()
        };
        let mut cells = vec![
            mq.topic.clone(),
            mq.broker_name.clone(),
            mq.queue_id.to_string(),
            w.broker_offset.to_string(),
            w.consumer_offset.to_string(),
        ];
        let client_ip = holders
            .as_ref()
            .map(|h| h.get(mq).cloned().unwrap_or_else(|| "N/A".to_owned()));
        cells.extend(client_ip.clone());
        cells.extend([diff.to_string(), inflight.to_string(), last]);
        table.row(cells);
        rows.push(json!({
            "topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id,
            "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
            "pullOffset": w.pull_offset, "diff": diff, "inflight": inflight,
            "lastTimestamp": w.last_timestamp, "clientIp": client_ip,
        }));
    }
    Ok(Report::new(
        table,
        json!({
            "group": group, "queues": rows, "consumeTps": all.consume_tps,
            "diffTotal": diff_total, "inflightTotal": inflight_total,
        }),
    )
    .with_footer(String::new())
    .with_footer(format!("Consume TPS: {:.2}", all.consume_tps))
    .with_footer(format!("Consume Diff Total: {diff_total}"))
    .with_footer(format!("Consume Inflight Total: {inflight_total}")))
}

/// GET_CONSUMER_CONNECTION_LIST of `group` from the first of `addrs` that knows it online, with
/// that broker's address.
pub async fn connections(
    admin: &Admin,
    addrs: &[String],
    group: &str,
) -> Result<Option<(String, ConsumerConnection)>, ClientError> {
    let header = GetConsumerConnectionListRequestHeader {
        consumer_group: group.to_owned(),
    };
    for addr in addrs {
        let cmd = request(
            request_code::GET_CONSUMER_CONNECTION_LIST,
            header.to_ext_fields(),
        );
        match admin.call(addr, cmd).await {
            Ok(resp) => return Ok(Some((addr.clone(), from_json(&resp.body)?))),
            // Not online there (or an older broker): try the next one.
            Err(ClientError::Response { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// consumerProgress without `-g`: every group that has a retry topic, with its online clients, lowest
/// client version, type, model and total lag (Java's group summary).
pub async fn group_progress(admin: &Admin) -> Result<Report, ClientError> {
    let list = crate::topic_cmds::all_topics(admin).await?;
    let mut groups: Vec<String> = list
        .topic_list
        .iter()
        .filter_map(|t| t.strip_prefix(RETRY_GROUP_TOPIC_PREFIX))
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    groups.sort();
    groups.dedup();
    let addrs = admin.master_addrs(None).await?;
    let mut table = Table::new(&[
        "Group",
        "Count",
        "Version",
        "Type",
        "Model",
        "TPS",
        "Diff Total",
    ]);
    let mut rows = Vec::new();
    for group in &groups {
        let mut diff_total = 0i64;
        let mut tps = 0f64;
        for addr in &addrs {
            // A broker that cannot say adds nothing (Java logs and goes on).
            if let Ok(stats) = consume_stats(admin, addr, group, None).await {
                diff_total = diff_total.saturating_add(stats.total_diff());
                tps += stats.consume_tps;
            }
        }
        let cc = connections(admin, &addrs, group).await?.map(|(_, c)| c);
        let count = cc.as_ref().map_or(0, |c| c.connection_set.len());
        let version = cc
            .as_ref()
            .and_then(|c| c.connection_set.iter().map(|x| x.version).min());
        let consume_type = cc.as_ref().map_or("", |c| match c.consume_type.as_str() {
            "CONSUME_ACTIVELY" => "PULL",
            "CONSUME_PASSIVELY" => "PUSH",
            other => other,
        });
        let model = cc.as_ref().map_or("", |c| c.message_model.as_str());
        table.row(vec![
            group.clone(),
            count.to_string(),
            match version {
                Some(v) if count > 0 => v.to_string(),
                _ => "OFFLINE".to_owned(),
            },
            consume_type.to_owned(),
            model.to_owned(),
            format!("{}", tps as i64),
            diff_total.to_string(),
        ]);
        rows.push(json!({
            "group": group, "count": count, "minVersion": version, "consumeType": consume_type,
            "messageModel": model, "consumeTps": tps, "diffTotal": diff_total,
        }));
    }
    Ok(Report::new(table, json!({ "groups": rows })))
}

/// What resetOffsetByTime asks of each broker.
pub struct ResetSpec<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    pub timestamp: i64,
    pub force: bool,
    /// Sent as a C++ request, so the brokers push the body C++ clients read.
    pub cplus: bool,
}

fn reset_request(spec: &ResetSpec<'_>) -> RemotingCommand {
    let header = ResetOffsetRequestHeader {
        group: spec.group.to_owned(),
        topic: spec.topic.to_owned(),
        queue_id: Some(-1),
        offset: None,
        timestamp: spec.timestamp,
        is_force: Some(spec.force),
    };
    let cmd = request(
        request_code::INVOKE_BROKER_TO_RESET_OFFSET,
        header.to_ext_fields(),
    );
    if spec.cplus {
        cmd.with_language(LanguageCode::Cpp)
    } else {
        cmd
    }
}

pub async fn reset_offset_by_time(
    admin: &Admin,
    spec: ResetSpec<'_>,
) -> Result<Report, ClientError> {
    let mut old: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    let mut new: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    for (_, addr) in topic_masters(admin, spec.topic).await? {
        // The offsets before, for the report; a broker without consume stats just shows none.
        if let Ok(stats) = consume_stats(admin, &addr, spec.group, Some(spec.topic)).await {
            old.extend(
                stats
                    .offset_table
                    .into_iter()
                    .map(|(mq, w)| (mq, w.consumer_offset)),
            );
        }
        match admin.call(&addr, reset_request(&spec)).await {
            Ok(resp) => new.extend(ResetOffsetBody::from_json(&resp.body)?.offset_table),
            // As Java's mqadmin: a broker that cannot reset through its clients gets the old way.
            Err(e)
                if not_served(&e)
                    || matches!(&e, ClientError::Response { code, .. }
                        if *code == response_code::CONSUMER_NOT_ONLINE) =>
            {
                return crate::consumer_cmds::reset_offset_by_time(
                    admin,
                    spec.group,
                    spec.topic,
                    spec.timestamp,
                )
                .await
            }
            Err(e) => return Err(e),
        }
    }
    let mut table = Table::new(&["Broker Name", "QID", "Old Offset", "New Offset"]);
    let mut rows = Vec::new();
    for (mq, offset) in &new {
        let before = old.get(mq).copied();
        table.row(vec![
            mq.broker_name.clone(),
            mq.queue_id.to_string(),
            before.map_or("-".into(), |o| o.to_string()),
            offset.to_string(),
        ]);
        rows.push(json!({
            "brokerName": mq.broker_name, "queueId": mq.queue_id,
            "oldOffset": before, "newOffset": offset,
        }));
    }
    Ok(Report::new(
        table,
        json!({
            "group": spec.group, "topic": spec.topic, "timestamp": spec.timestamp,
            "force": spec.force, "queues": rows,
        }),
    ))
}

/// resetOffsetByTime with `-b brokerAddr -q queueId`: one queue of one broker, to `-o offset` or to
/// the first message stored at or after the time. The committed offset is written
/// (UPDATE_CONSUMER_OFFSET), then the broker tells the group's online clients
/// (INVOKE_BROKER_TO_RESET_OFFSET for that queue; no client online is not a failure).
pub async fn reset_queue_offset(
    admin: &Admin,
    spec: &ResetSpec<'_>,
    addr: &str,
    queue_id: i32,
    offset: Option<i64>,
) -> Result<Report, ClientError> {
    let target = match offset {
        Some(o) if o >= 0 => o,
        Some(o) => return Err(ClientError::Invalid(format!("offset {o} is negative"))),
        None => {
            admin
                .search_offset(addr, spec.topic, queue_id, spec.timestamp)
                .await?
        }
    };
    let client = admin.broker(addr).await?;
    let old =
        broker_api::query_consumer_offset(&client, spec.group, spec.topic, queue_id, admin.timeout)
            .await?;
    broker_api::update_consumer_offset(
        &client,
        spec.group,
        spec.topic,
        queue_id,
        target,
        false,
        admin.timeout,
    )
    .await?;
    let header = ResetOffsetRequestHeader {
        group: spec.group.to_owned(),
        topic: spec.topic.to_owned(),
        queue_id: Some(queue_id),
        offset: Some(target),
        timestamp: 0,
        is_force: Some(true),
    };
    let notify = request(
        request_code::INVOKE_BROKER_TO_RESET_OFFSET,
        header.to_ext_fields(),
    );
    match admin.call(addr, notify).await {
        Ok(_) => {}
        Err(ClientError::Response { code, .. }) if code == response_code::CONSUMER_NOT_ONLINE => {}
        Err(e) if not_served(&e) => {}
        Err(e) => return Err(e),
    }
    let lines = vec![
        format!(
            "start reset consumer offset by specified, group[{}], topic[{}], queueId[{queue_id}], broker[{addr}], timestamp(long)[{}]",
            spec.group, spec.topic, spec.timestamp
        ),
        format!("reset consumer offset to {target}"),
    ];
    Ok(Report::lines(
        lines,
        json!({
            "group": spec.group, "topic": spec.topic, "brokerAddr": addr, "queueId": queue_id,
            "timestamp": spec.timestamp, "oldOffset": old, "newOffset": target,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_print_as_java_does() {
        assert_eq!(format_utc_ms(0), "1970-01-01 00:00:00,000");
        assert_eq!(format_utc_ms(1_700_000_000_123), "2023-11-14 22:13:20,123");
        assert_eq!(format_utc_ms(1_709_164_800_000), "2024-02-29 00:00:00,000");
        assert_eq!(
            crate::consumer_cmds::parse_timestamp(
                &format_utc_ms(951_825_599_999)
                    .replace(' ', "#")
                    .replace(',', ":"),
                0
            )
            .unwrap(),
            951_825_599_999
        );
        assert_eq!(time_or_blank(0), "");
    }
}

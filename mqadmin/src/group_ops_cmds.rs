//! Consumer-group commands as Apache's mqadmin prints them: getConsumerConfig (each broker's
//! subscription-group config, GET_SUBSCRIPTIONGROUP_CONFIG) and skipAccumulatedMessage (the group's
//! offsets on a topic moved to the end of every queue: INVOKE_BROKER_TO_RESET_OFFSET with timestamp
//! -1; a broker that cannot reset through its clients gets the offsets committed one by one).

use std::time::Duration;

use clap::{Args, Subcommand};
use client::broker_api;
use client::request::request;
use client::ClientError;
use protocol::body::ResetOffsetBody;
use protocol::header::{CommandHeader, ResetOffsetRequestHeader};
use protocol::{request_code, response_code, ExtFields};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::Namesrv;
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum GroupOpsCommand {
    /// Get consumer config by subscription group name, from every broker that has it.
    #[command(name = "getConsumerConfig")]
    GetConsumerConfig(GetConsumerConfigArgs),
    /// Skip all messages that are accumulated (not consumed) currently.
    #[command(name = "skipAccumulatedMessage")]
    SkipAccumulatedMessage(SkipAccumulatedArgs),
}

#[derive(Debug, Args)]
pub struct GetConsumerConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Subscription group name
    #[arg(short = 'g', long = "groupName")]
    pub group: String,
}

#[derive(Debug, Args)]
pub struct SkipAccumulatedArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 'g', long = "group")]
    pub group: String,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Force the reset (also move offsets forward)
    #[arg(short = 'f', long = "force", default_value_t = true, action = clap::ArgAction::Set)]
    pub force: bool,
    /// Cluster name (routes LMQ and rmq_sys_wheel_timer topics, as Apache's tool does)
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
}

pub async fn run(command: GroupOpsCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        GroupOpsCommand::GetConsumerConfig(args) => get_consumer_config(args, timeout).await,
        GroupOpsCommand::SkipAccumulatedMessage(args) => skip_accumulated(args, timeout).await,
    }
}

/// SubscriptionGroupConfig's fields in Java's declaration order (what Apache's tool prints).
const GROUP_FIELDS: [&str; 15] = [
    "groupName",
    "consumeEnable",
    "consumeFromMinEnable",
    "consumeBroadcastEnable",
    "consumeMessageOrderly",
    "retryQueueNums",
    "retryMaxTimes",
    "groupRetryPolicy",
    "brokerId",
    "whichBrokerWhenConsumeSlowly",
    "notifyConsumerIdsChangedEnable",
    "groupSysFlag",
    "consumeTimeoutMinute",
    "subscriptionDataSet",
    "attributes",
];

/// Apache's `%-40s=  %s` lines of one config: Java's fields first, then any other key.
pub fn config_field_lines(config: &Value) -> Vec<String> {
    let Some(map) = config.as_object() else {
        return Vec::new();
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let known = GROUP_FIELDS
        .iter()
        .filter_map(|k| map.get(*k).map(|v| (*k, v)));
    let others = map
        .iter()
        .filter(|(k, _)| !GROUP_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v));
    known
        .chain(others)
        .map(|(k, v)| format!("{k:<40}=  {}", text(v)))
        .collect()
}

async fn get_consumer_config(
    args: GetConsumerConfigArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let group = args.group.trim();
    let info = admin.cluster_info().await?;
    let mut lines = Vec::new();
    let mut found = Vec::new();
    for (name, broker) in &info.broker_addr_table {
        let Some(addr) = broker
            .master_addr()
            .or_else(|| broker.broker_addrs.values().next().map(String::as_str))
        else {
            continue;
        };
        let cluster = info
            .cluster_addr_table
            .iter()
            .find(|(_, names)| names.contains(name))
            .map_or("null", |(c, _)| c.as_str());
        let mut fields = ExtFields::new();
        fields.insert("group", group);
        let cmd = request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG, fields);
        let config: Value = match admin.call(addr, cmd).await {
            Ok(resp) => protocol::body::from_json(&resp.body)?,
            Err(ClientError::Response { code, .. })
                if code == response_code::SUBSCRIPTION_GROUP_NOT_EXIST =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        lines.push(format!(
            "============================={cluster}:{name}============================="
        ));
        lines.extend(config_field_lines(&config));
        found.push(json!({"clusterName": cluster, "brokerName": name, "brokerAddr": addr, "config": config}));
    }
    Ok(Report::lines(
        lines,
        json!({"group": group, "brokers": found}),
    ))
}

/// Apache's `UtilAll.frontStringAtLeast`: at most `len` leading characters.
fn front(s: &str, len: usize) -> String {
    s.chars().take(len).collect()
}

async fn skip_accumulated(
    args: SkipAccumulatedArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let (group, topic) = (args.group.trim(), args.topic.trim());
    let cluster = args
        .cluster
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    // LMQ topics and the timer wheel are routed by the cluster's name, as Apache's tool does.
    let route_topic = match cluster {
        Some(c) if topic.starts_with("%LMQ%") || topic == "rmq_sys_wheel_timer" => c,
        _ => topic,
    };
    let route = admin.route(route_topic).await?;
    let header = ResetOffsetRequestHeader {
        group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id: Some(-1),
        offset: None,
        timestamp: -1,
        is_force: Some(args.force),
    };
    let mut table = std::collections::BTreeMap::new();
    let mut brokers: Vec<(String, String)> = route
        .broker_datas
        .iter()
        .filter_map(|b| Some((b.broker_name.clone(), b.master_addr()?.to_owned())))
        .collect();
    brokers.sort();
    for (_, addr) in &brokers {
        let cmd = request(
            request_code::INVOKE_BROKER_TO_RESET_OFFSET,
            header.to_ext_fields(),
        );
        match admin.call(addr, cmd).await {
            Ok(resp) => table.extend(ResetOffsetBody::from_json(&resp.body)?.offset_table),
            Err(ClientError::Response { code, .. })
                if code == response_code::CONSUMER_NOT_ONLINE
                    || code == response_code::REQUEST_CODE_NOT_SUPPORTED =>
            {
                return skip_by_commits(&admin, group, topic, &brokers, &route).await;
            }
            Err(e) => return Err(e),
        }
    }
    let mut lines = vec![format!(
        "{:<40}  {:<40}  {:<40}",
        "#brokerName", "#queueId", "#offset"
    )];
    let mut rows = Vec::new();
    for (mq, offset) in &table {
        lines.push(format!(
            "{:<40}  {:<40}  {:<40}",
            front(&mq.broker_name, 32),
            mq.queue_id,
            offset
        ));
        rows.push(json!({"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": offset}));
    }
    Ok(Report::lines(
        lines,
        json!({"group": group, "topic": topic, "queues": rows}),
    ))
}

/// Apache's `resetOffsetByTimestampOld` with timestamp -1: each queue's committed offset set to its
/// max offset, printed as RollbackStats.
async fn skip_by_commits(
    admin: &Admin,
    group: &str,
    topic: &str,
    brokers: &[(String, String)],
    route: &protocol::body::TopicRouteData,
) -> Result<Report, ClientError> {
    let mut lines = vec![format!(
        "{:<20}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}",
        "#brokerName",
        "#queueId",
        "#brokerOffset",
        "#consumerOffset",
        "#timestampOffset",
        "#rollbackOffset"
    )];
    let mut rows = Vec::new();
    for (name, addr) in brokers {
        let Some(q) = route.queue_datas.iter().find(|q| &q.broker_name == name) else {
            continue;
        };
        let client = admin.broker(addr).await?;
        for queue_id in 0..q.read_queue_nums.max(q.write_queue_nums).max(0) {
            let max = broker_api::max_offset(&client, topic, queue_id, admin.timeout).await?;
            let old =
                broker_api::query_consumer_offset(&client, group, topic, queue_id, admin.timeout)
                    .await?
                    .unwrap_or(0);
            broker_api::update_consumer_offset(
                &client,
                group,
                topic,
                queue_id,
                max,
                false,
                admin.timeout,
            )
            .await?;
            lines.push(format!(
                "{:<20}  {:<20}  {:<20}  {:<20}  {:<20}  {:<20}",
                front(name, 32),
                queue_id,
                max,
                old,
                max,
                max
            ));
            rows.push(
                json!({"brokerName": name, "queueId": queue_id, "brokerOffset": max,
                "consumerOffset": old, "timestampOffset": max, "rollbackOffset": max}),
            );
        }
    }
    Ok(Report::lines(
        lines,
        json!({"group": group, "topic": topic, "queues": rows}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lines_follow_java_field_order() {
        let config = json!({
            "retryMaxTimes": 16, "groupName": "G", "consumeEnable": true,
            "subscriptionDataSet": null, "extra": "x",
        });
        let lines = config_field_lines(&config);
        assert_eq!(lines[0], format!("{:<40}=  G", "groupName"));
        assert_eq!(lines[1], format!("{:<40}=  true", "consumeEnable"));
        assert_eq!(lines[2], format!("{:<40}=  16", "retryMaxTimes"));
        assert_eq!(lines[3], format!("{:<40}=  ", "subscriptionDataSet"));
        assert_eq!(lines[4], format!("{:<40}=  x", "extra"));
        assert!(config_field_lines(&json!(3)).is_empty());
    }
}

//! Store and group maintenance commands, with Apache's flags and output lines:
//! `cleanExpiredCQ` (CLEAN_EXPIRED_CONSUMEQUEUE), `deleteExpiredCommitLog` (DELETE_EXPIRED_COMMITLOG),
//! `cleanUnusedTopic` (CLEAN_UNUSED_TOPIC) on one broker (`-b`), every broker of a cluster (`-c`)
//! or of every cluster; `queryCq` (QUERY_CONSUME_QUEUE: ConsumeQueue units of one queue);
//! `updateSubGroupList` (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST from a JSON file of groups);
//! `setConsumeMode` (SET_MESSAGE_REQUEST_MODE) and `exportPopRecord` (POP_ROLLBACK).

use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{from_json, QueryConsumeQueueResponseBody};
use protocol::header::{CommandHeader, QueryConsumeQueueRequestHeader};
use protocol::{request_code, ExtFields, RemotingCommand};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::{Namesrv, Target};
use crate::table::Report;

const SEPARATOR: &str = "======================================";

#[derive(Debug, Subcommand)]
pub enum MaintenanceCommand {
    /// Clean expired ConsumeQueue files on brokers.
    #[command(name = "cleanExpiredCQ")]
    CleanExpiredCq(BrokerOrCluster),
    /// Delete expired CommitLog files now (a retention pass outside deleteWhen).
    #[command(name = "deleteExpiredCommitLog")]
    DeleteExpiredCommitLog(BrokerOrCluster),
    /// Remove the queues of topics the brokers no longer have.
    #[command(name = "cleanUnusedTopic")]
    CleanUnusedTopic(BrokerOrCluster),
    /// Query cq command: ConsumeQueue units of one queue.
    #[command(name = "queryCq")]
    QueryCq(QueryCqArgs),
    /// Create or update many subscription groups from a JSON file.
    #[command(name = "updateSubGroupList")]
    UpdateSubGroupList(UpdateSubGroupListArgs),
    /// Set a topic's consume mode (PULL or POP) for a group.
    #[command(name = "setConsumeMode")]
    SetConsumeMode(SetConsumeModeArgs),
    /// Export POP records from a broker's RocksDB store to its revive log.
    #[command(name = "exportPopRecord")]
    ExportPopRecord(ExportPopRecordArgs),
}

#[derive(Debug, Args)]
pub struct BrokerOrCluster {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Broker address
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// cluster name (every broker of every cluster when neither -b nor -c is given)
    #[arg(short = 'c', long = "cluster")]
    pub cluster: Option<String>,
}

#[derive(Debug, Args)]
pub struct QueryCqArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// topic name
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// queue num, ie. 1
    #[arg(short = 'q', long = "queue")]
    pub queue: i32,
    /// start queue index.
    #[arg(short = 'i', long = "index")]
    pub index: i64,
    /// how many.
    #[arg(short = 'c', long = "count", default_value_t = 10)]
    pub count: i32,
    /// broker addr (default: the topic's first broker's master).
    #[arg(short = 'b', long = "broker")]
    pub broker: Option<String>,
    /// consumer group.
    #[arg(short = 'g', long = "consumer")]
    pub group: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpdateSubGroupListArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    /// Path to a file with a JSON list of SubscriptionGroupConfig
    #[arg(short = 'f', long = "filename")]
    pub file: String,
}

#[derive(Debug, Args)]
pub struct SetConsumeModeArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    /// topic name
    #[arg(short = 't', long = "topicName")]
    pub topic: String,
    /// consumer group name
    #[arg(short = 'g', long = "groupName")]
    pub group: String,
    /// consume mode. PULL/POP
    #[arg(short = 'm', long = "mode")]
    pub mode: String,
    /// num of queue which share in pop mode
    #[arg(short = 'q', long = "popShareQueueNum", default_value_t = 0)]
    pub pop_share_queue_num: i32,
}

#[derive(Debug, Args)]
pub struct ExportPopRecordArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// choose one broker to export
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// choose one cluster to export
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
    /// no actual changes will be made (true/false)
    #[arg(short = 'd', long = "dryRun", default_value_t = false, action = clap::ArgAction::Set)]
    pub dry_run: bool,
}

/// Every (broker name, address) of `cluster`, or of every cluster.
async fn every_broker(
    admin: &Admin,
    cluster: Option<&str>,
) -> Result<Vec<(String, String)>, ClientError> {
    let info = admin.cluster_info().await?;
    let out: Vec<(String, String)> = info
        .broker_addr_table
        .values()
        .filter(|b| cluster.is_none_or(|c| b.cluster == c))
        .flat_map(|b| {
            b.broker_addrs
                .values()
                .map(|a| (b.broker_name.clone(), a.clone()))
        })
        .collect();
    if out.is_empty() {
        return Err(ClientError::Invalid(match cluster {
            Some(c) => format!("cluster {c} has no registered broker"),
            None => "no broker is registered".into(),
        }));
    }
    Ok(out)
}

async fn addrs_of(admin: &Admin, args: &BrokerOrCluster) -> Result<Vec<String>, ClientError> {
    match &args.broker {
        Some(b) => Ok(vec![b.trim().to_owned()]),
        None => Ok(every_broker(admin, args.cluster.as_deref().map(str::trim))
            .await?
            .into_iter()
            .map(|(_, a)| a)
            .collect()),
    }
}

/// Sends a header-less maintenance request to every address; Apache's `success` when all succeed.
async fn maintain(
    args: BrokerOrCluster,
    code: i32,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let mut results = Vec::new();
    for addr in addrs_of(&admin, &args).await? {
        let resp = admin.call(&addr, request(code, ExtFields::new())).await?;
        results.push(json!({"brokerAddr": addr, "remark": resp.remark}));
    }
    Ok(Report::lines(vec!["success".into()], json!(results)))
}

/// Apache's `queryCq` lines.
pub fn query_cq_lines(index: i64, body: &QueryConsumeQueueResponseBody) -> Vec<String> {
    let mut text = String::new();
    if let Some(sub) = &body.subscription_data {
        let pretty = serde_json::to_string_pretty(sub).unwrap_or_default();
        text.push_str(&format!("Subscription data: \n{pretty}\n{SEPARATOR}\n"));
    }
    if let Some(filter) = &body.filter_data {
        text.push_str(&format!("Filter data: \n{filter}\n{SEPARATOR}\n"));
    }
    text.push_str(&format!(
        "Queue data: \nmax: {}, min: {}\n{SEPARATOR}\n",
        body.max_queue_index, body.min_queue_index
    ));
    for (i, unit) in body.queue_data.iter().flatten().enumerate() {
        let idx = index.saturating_add(i as i64);
        text.push_str(&format!("idx: {idx}\n{}\n{SEPARATOR}\n", unit.java_text()));
    }
    text.lines().map(str::to_owned).collect()
}

async fn query_cq(args: QueryCqArgs, timeout: Duration) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let topic = args.topic.trim().to_owned();
    let broker = match args
        .broker
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty())
    {
        Some(b) => b.to_owned(),
        None => {
            let route = admin.route(&topic).await?;
            route
                .broker_datas
                .first()
                .and_then(|b| b.master_addr())
                .map(str::to_owned)
                .ok_or_else(|| ClientError::Invalid("No topic route data!".into()))?
        }
    };
    let header = QueryConsumeQueueRequestHeader {
        topic,
        queue_id: args.queue,
        index: args.index,
        count: args.count,
        consumer_group: args.group.map(|g| g.trim().to_owned()),
    };
    let resp = admin
        .call(
            &broker,
            request(request_code::QUERY_CONSUME_QUEUE, header.to_ext_fields()),
        )
        .await?;
    let body: QueryConsumeQueueResponseBody = from_json(&resp.body)?;
    Ok(Report::lines(
        query_cq_lines(args.index, &body),
        json!({"brokerAddr": broker, "remark": resp.remark, "body": body}),
    ))
}

async fn update_sub_group_list(
    args: UpdateSubGroupListArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let path = args.file.trim();
    let text = std::fs::read(path)
        .map_err(|e| ClientError::Invalid(format!("the file path {path} cannot be read: {e}")))?;
    let groups: Vec<Value> = serde_json::from_slice(&text).map_err(|e| {
        ClientError::Invalid(format!(
            "{path} is not a JSON list of SubscriptionGroupConfig: {e}"
        ))
    })?;
    if groups.is_empty() {
        return Ok(Report::lines(Vec::new(), json!([])));
    }
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let body = serde_json::to_vec(&json!({ "groupConfigList": groups }))
        .map_err(|e| ClientError::Invalid(format!("cannot encode the group list: {e}")))?;
    let (addrs, line): (Vec<String>, &str) = match (&args.target.broker, &args.target.cluster) {
        (Some(b), _) => (
            vec![b.trim().to_owned()],
            "submit batch of group config to {} success, please check the result later.",
        ),
        (None, Some(c)) => (
            admin.master_addrs(Some(c.trim())).await?,
            "submit batch of subscription group config to {} success, please check the result later.",
        ),
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -b brokerAddr or -c clusterName".into(),
            ))
        }
    };
    let mut lines = Vec::new();
    for addr in &addrs {
        let cmd = request(
            request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
            ExtFields::new(),
        )
        .with_body(body.clone());
        admin.call(addr, cmd).await?;
        lines.push(line.replace("{}", addr));
    }
    Ok(Report::lines(
        lines,
        json!({"brokers": addrs, "groups": groups.len()}),
    ))
}

async fn set_consume_mode(
    args: SetConsumeModeArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let mode = args.mode.trim().to_ascii_uppercase();
    if mode != "PULL" && mode != "POP" {
        return Err(ClientError::Invalid(format!(
            "mode {mode:?}: expected PULL or POP"
        )));
    }
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let addrs = admin
        .target_addrs(
            args.target.broker.as_deref(),
            args.target.cluster.as_deref(),
        )
        .await?;
    let body = json!({
        "consumerGroup": args.group.trim(),
        "mode": mode,
        "popShareQueueNum": args.pop_share_queue_num,
        "topic": args.topic.trim(),
    });
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| ClientError::Invalid(format!("cannot encode the request: {e}")))?;
    let mut lines = Vec::new();
    for addr in &addrs {
        let cmd = request(request_code::SET_MESSAGE_REQUEST_MODE, ExtFields::new())
            .with_body(bytes.clone());
        admin.call(addr, cmd).await?;
        lines.push(format!("set consume mode to {addr} success."));
    }
    lines.push(format!(
        "topic[{}] group[{}] consume mode[{mode}] popShareQueueNum[{}]",
        args.topic.trim(),
        args.group.trim(),
        args.pop_share_queue_num
    ));
    Ok(Report::lines(
        lines,
        json!({"brokers": addrs, "request": body}),
    ))
}

/// The `brokerName` of a broker's config (GET_BROKER_CONFIG, Java properties text).
async fn broker_name(admin: &Admin, addr: &str) -> Result<String, ClientError> {
    let resp = admin
        .call(
            addr,
            request(request_code::GET_BROKER_CONFIG, ExtFields::new()),
        )
        .await?;
    Ok(String::from_utf8_lossy(&resp.body)
        .lines()
        .find_map(|l| l.strip_prefix("brokerName="))
        .unwrap_or_default()
        .trim()
        .to_owned())
}

async fn export_pop_record(
    args: ExportPopRecordArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let targets: Vec<(String, String)> = match (&args.broker, &args.cluster) {
        (Some(b), _) => {
            let addr = b.trim().to_owned();
            vec![(broker_name(&admin, &addr).await?, addr)]
        }
        (None, Some(c)) => every_broker(&admin, Some(c.trim())).await?,
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -b brokerAddr or -c clusterName".into(),
            ))
        }
    };
    let mut lines = Vec::new();
    let mut results = Vec::new();
    for (name, addr) in targets {
        let dry = args.dry_run;
        let outcome = if dry {
            Ok(None)
        } else {
            admin
                .call(&addr, RemotingCommand::request(request_code::POP_ROLLBACK))
                .await
                .map(|r| r.remark)
        };
        match outcome {
            Ok(remark) => {
                lines.push(format!(
                    "Export broker records, brokerName={name}, brokerAddr={addr}, dryRun={dry}"
                ));
                results.push(json!({"brokerName": name, "brokerAddr": addr, "dryRun": dry, "remark": remark}));
            }
            Err(e) => {
                lines.push(format!(
                    "Export broker records error, brokerName={name}, brokerAddr={addr}, dryRun={dry}"
                ));
                lines.push(e.to_string());
                results.push(json!({"brokerName": name, "brokerAddr": addr, "dryRun": dry, "error": e.to_string()}));
            }
        }
    }
    Ok(Report::lines(lines, json!(results)))
}

pub async fn run(command: MaintenanceCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        MaintenanceCommand::CleanExpiredCq(args) => {
            maintain(args, request_code::CLEAN_EXPIRED_CONSUMEQUEUE, timeout).await
        }
        MaintenanceCommand::DeleteExpiredCommitLog(args) => {
            maintain(args, request_code::DELETE_EXPIRED_COMMITLOG, timeout).await
        }
        MaintenanceCommand::CleanUnusedTopic(args) => {
            maintain(args, request_code::CLEAN_UNUSED_TOPIC, timeout).await
        }
        MaintenanceCommand::QueryCq(args) => query_cq(args, timeout).await,
        MaintenanceCommand::UpdateSubGroupList(args) => update_sub_group_list(args, timeout).await,
        MaintenanceCommand::SetConsumeMode(args) => set_consume_mode(args, timeout).await,
        MaintenanceCommand::ExportPopRecord(args) => export_pop_record(args, timeout).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::ConsumeQueueData;

    #[test]
    fn query_cq_lines_are_apaches() {
        let body = QueryConsumeQueueResponseBody {
            filter_data: Some("g@t is not online!".into()),
            max_queue_index: 2,
            min_queue_index: 0,
            queue_data: Some(vec![ConsumeQueueData {
                physic_offset: 0,
                physic_size: 180,
                tags_code: 0,
                ..Default::default()
            }]),
            subscription_data: None,
        };
        assert_eq!(
            query_cq_lines(0, &body),
            [
                "Filter data: ",
                "g@t is not online!",
                SEPARATOR,
                "Queue data: ",
                "max: 2, min: 0",
                SEPARATOR,
                "idx: 0",
                "ConsumeQueueData{physicOffset=0, physicSize=180, tagsCode=0, extendDataJson='null', bitMap='null', eval=false, msg='null'}",
                SEPARATOR,
            ]
        );
    }
}

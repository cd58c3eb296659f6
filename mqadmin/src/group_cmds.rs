//! Group and client commands: deleteSubGroup (DELETE_SUBSCRIPTIONGROUP), producerConnection
//! (GET_PRODUCER_CONNECTION_LIST), consumerConnection (GET_CONSUMER_CONNECTION_LIST), consumerStatus
//! (GET_CONSUMER_RUNNING_INFO, which the broker relays to the client and answers with the client's
//! answer) and cloneGroupOffset (CLONE_GROUP_OFFSET on every master of the topic).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{from_json, ProducerConnection};
use protocol::header::{
    CloneGroupOffsetRequestHeader, CommandHeader, DeleteSubscriptionGroupRequestHeader,
    GetProducerConnectionListRequestHeader,
};
use protocol::request_code;
use serde_json::{json, Value};

use crate::admin::{held_queues, Admin};
use crate::shared_args::{Namesrv, Target};
use crate::stats_cmds::{connections, topic_masters};
use crate::table::{cell, Report, Table};
use crate::version::version_desc;

/// Dead-letter topics are named after their group: `%DLQ%group`.
const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Delete a consumer group's subscription config from a broker or from every master of a
    /// cluster (with -c, also its retry and dead-letter topics).
    #[command(name = "deleteSubGroup")]
    DeleteSubGroup(DeleteSubGroupArgs),
    /// The online clients of a producer group, from the masters of a topic.
    #[command(name = "producerConnection")]
    ProducerConnection(ProducerConnectionArgs),
    /// The online clients of a consumer group and what it subscribes.
    #[command(name = "consumerConnection")]
    ConsumerConnection(ConsumerConnectionArgs),
    /// A consumer's internal state (properties, subscriptions, queues held and their offsets, TPS),
    /// asked of the client itself through the broker.
    #[command(name = "consumerStatus")]
    ConsumerStatus(ConsumerStatusArgs),
    /// Copy one group's committed offsets on a topic to another group.
    #[command(name = "cloneGroupOffset")]
    CloneGroupOffset(CloneGroupOffsetArgs),
}

#[derive(Debug, Args)]
pub struct DeleteSubGroupArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'g', long = "groupName")]
    pub group: String,
    /// Also drop the group's committed offsets
    #[arg(short = 'r', long = "removeOffset", default_value_t = false, action = clap::ArgAction::Set)]
    pub remove_offset: bool,
}

#[derive(Debug, Args)]
pub struct ProducerConnectionArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 'g', long = "producerGroup")]
    pub group: String,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(Debug, Args)]
pub struct ConsumerConnectionArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 'g', long = "consumerGroup")]
    pub group: String,
    /// Ask this broker (default: the masters of the cluster)
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
}

#[derive(Debug, Args)]
pub struct ConsumerStatusArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 'g', long = "consumerGroup")]
    pub group: String,
    /// Only this client (its client id)
    #[arg(short = 'i', long = "clientId")]
    pub client_id: Option<String>,
    /// Ask this broker (default: the masters of the cluster)
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// Ask the client for its threads' stacks too
    #[arg(short = 's', long = "jstack", default_value_t = false)]
    pub jstack: bool,
}

#[derive(Debug, Args)]
pub struct CloneGroupOffsetArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 's', long = "srcGroup")]
    pub src_group: String,
    #[arg(short = 'd', long = "destGroup")]
    pub dest_group: String,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The source group is offline (skip the check that it subscribes the topic)
    #[arg(short = 'o', long = "offline", default_value_t = true, action = clap::ArgAction::Set)]
    pub offline: bool,
}

pub async fn run(command: GroupCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        GroupCommand::DeleteSubGroup(args) => {
            delete_sub_group(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
        GroupCommand::ProducerConnection(args) => {
            producer_connection(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
        GroupCommand::ConsumerConnection(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            consumer_connection(&admin, args.group.trim(), args.broker.as_deref()).await
        }
        GroupCommand::ConsumerStatus(args) => {
            consumer_status(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
        GroupCommand::CloneGroupOffset(args) => {
            clone_group_offset(&Admin::new(&args.ns.namesrv, timeout)?, &args).await
        }
    }
}

async fn delete_sub_group(admin: &Admin, args: &DeleteSubGroupArgs) -> Result<Report, ClientError> {
    let group = args.group.trim();
    let addrs = admin
        .target_addrs(
            args.target.broker.as_deref(),
            args.target.cluster.as_deref(),
        )
        .await?;
    let header = DeleteSubscriptionGroupRequestHeader {
        group_name: group.to_owned(),
        remove_offset: Some(args.remove_offset),
    };
    let mut lines = Vec::new();
    for addr in &addrs {
        let cmd = request(
            request_code::DELETE_SUBSCRIPTIONGROUP,
            header.to_ext_fields(),
        );
        admin.call(addr, cmd).await?;
        lines.push(match &args.target.cluster {
            Some(c) if args.target.broker.is_none() => format!(
                "delete subscription group [{group}] from broker [{addr}] in cluster [{c}] success."
            ),
            _ => format!("delete subscription group [{group}] from broker [{addr}] success."),
        });
    }
    // As RocketMQ's tool: with a cluster, the group's retry and dead-letter topics go too (either
    // may not exist; that is not a failure of the command).
    let mut topics_deleted = Vec::new();
    if let (None, Some(cluster)) = (&args.target.broker, &args.target.cluster) {
        for prefix in [
            crate::stats_cmds::RETRY_GROUP_TOPIC_PREFIX,
            DLQ_GROUP_TOPIC_PREFIX,
        ] {
            let topic = format!("{prefix}{group}");
            match crate::topic_cmds::delete_topic(admin, cluster, &topic).await {
                Ok(_) => topics_deleted.push(topic),
                Err(e) => lines.push(format!("delete topic [{topic}] failed: {e}")),
            }
        }
    }
    Ok(Report::lines(
        lines,
        json!({"group": group, "brokers": addrs, "topicsDeleted": topics_deleted}),
    ))
}

async fn producer_connection(
    admin: &Admin,
    args: &ProducerConnectionArgs,
) -> Result<Report, ClientError> {
    let group = args.group.trim();
    let header = GetProducerConnectionListRequestHeader {
        producer_group: group.to_owned(),
    };
    // A producer heartbeats every broker it sends to: the union over the topic's masters.
    let mut clients = BTreeMap::new();
    for (_, addr) in topic_masters(admin, args.topic.trim()).await? {
        let cmd = request(
            request_code::GET_PRODUCER_CONNECTION_LIST,
            header.to_ext_fields(),
        );
        let resp = admin.call(&addr, cmd).await?;
        let pc: ProducerConnection = from_json(&resp.body)?;
        for c in pc.connection_set {
            clients.insert(c.client_id.clone(), c);
        }
    }
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for (i, c) in clients.values().enumerate() {
        let version = version_desc(c.version);
        lines.push(format!(
            "{:04}  {:<32} {:<22} {:<8} {version}",
            i + 1,
            c.client_id,
            c.client_addr,
            c.language
        ));
        rows.push(json!({
            "clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
            "version": version,
        }));
    }
    Ok(Report::lines(
        lines,
        json!({"group": group, "connections": rows}),
    ))
}

/// The addresses a `-b` names, or every master.
async fn asked_brokers(admin: &Admin, broker: Option<&str>) -> Result<Vec<String>, ClientError> {
    match broker {
        Some(b) => Ok(vec![b.trim().to_owned()]),
        None => admin.master_addrs(None).await,
    }
}

async fn consumer_connection(
    admin: &Admin,
    group: &str,
    broker: Option<&str>,
) -> Result<Report, ClientError> {
    let addrs = asked_brokers(admin, broker).await?;
    let (_, cc) = connections(admin, &addrs, group)
        .await?
        .ok_or_else(|| ClientError::Invalid(format!("the consumer group {group} is not online")))?;
    let mut table = Table::new(&["ClientId", "ClientAddr", "Language", "Version"]);
    let mut clients = Vec::new();
    for c in &cc.connection_set {
        let version = version_desc(c.version);
        table.row(vec![
            c.client_id.clone(),
            c.client_addr.clone(),
            c.language.clone(),
            version.clone(),
        ]);
        clients.push(json!({
            "clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language,
            "version": version,
        }));
    }
    let mut subs = Table::new(&["Topic", "SubExpression"]);
    for sd in cc.subscription_table.values() {
        subs.row(vec![sd.topic.clone(), sd.sub_string.clone()]);
    }
    let mut report = Report::new(
        table,
        json!({
            "group": group, "connections": clients, "subscriptions": cc.subscription_table,
            "consumeType": cc.consume_type, "messageModel": cc.message_model,
            "consumeFromWhere": cc.consume_from_where,
        }),
    )
    .with_footer(String::new())
    .with_footer("Below is subscription:".into());
    report = report.with_footers(subs.render().lines().map(str::to_owned));
    Ok(report
        .with_footer(String::new())
        .with_footer(format!("ConsumeType: {}", cc.consume_type))
        .with_footer(format!("MessageModel: {}", cc.message_model))
        .with_footer(format!("ConsumeFromWhere: {}", cc.consume_from_where)))
}

/// ConsumerRunningInfo as RocketMQ's `formatString` prints it.
fn format_running_info(info: &Value) -> Vec<String> {
    let text = cell;
    let number = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let mut out = vec!["#Consumer Properties#".to_owned()];
    if let Some(props) = info.get("properties").and_then(Value::as_object) {
        let sorted: BTreeMap<&String, &Value> = props.iter().collect();
        for (k, v) in sorted {
            out.push(format!("{k:<40}: {}", text(Some(v))));
        }
    }
    out.extend([
        String::new(),
        String::new(),
        "#Consumer Subscription#".into(),
    ]);
    let subs = info.get("subscriptionSet").and_then(Value::as_array);
    for (i, sd) in subs.into_iter().flatten().enumerate() {
        out.push(format!(
            "{:03} Topic: {:<40} ClassFilter: {:<8} SubExpression: {}",
            i + 1,
            text(sd.get("topic")),
            sd.get("classFilterMode")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            text(sd.get("subString"))
        ));
    }
    let queues = held_queues(info);
    out.extend([String::new(), String::new(), "#Consumer Offset#".into()]);
    out.push(format!(
        "{:<64}  {:<32}  {:<4}  {:<20}",
        "#Topic", "#Broker Name", "#QID", "#Consumer Offset"
    ));
    for (mq, pq) in &queues {
        let offset = pq.get("commitOffset").and_then(Value::as_i64).unwrap_or(0);
        out.push(format!(
            "{:<32}  {:<32}  {:<4}  {offset:<20}",
            mq.topic, mq.broker_name, mq.queue_id
        ));
    }
    out.extend([String::new(), String::new(), "#Consumer MQ Detail#".into()]);
    out.push(format!(
        "{:<64}  {:<32}  {:<4}  {:<20}",
        "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo"
    ));
    for (mq, pq) in &queues {
        out.push(format!(
            "{:<64}  {:<32}  {:<4}  {pq}",
            mq.topic, mq.broker_name, mq.queue_id
        ));
    }
    out.extend([String::new(), String::new(), "#Consumer RT&TPS#".into()]);
    out.push(format!(
        "{:<64}  {:>14} {:>14} {:>14} {:>14} {:>18} {:>25}",
        "#Topic",
        "#Pull RT",
        "#Pull TPS",
        "#Consume RT",
        "#ConsumeOK TPS",
        "#ConsumeFailed TPS",
        "#ConsumeFailedMsgsInHour"
    ));
    if let Some(status) = info.get("statusTable").and_then(Value::as_object) {
        for (topic, s) in status {
            out.push(format!(
                "{topic:<32}  {:>14.2} {:>14.2} {:>14.2} {:>14.2} {:>18.2} {:>25}",
                number(s, "pullRT"),
                number(s, "pullTPS"),
                number(s, "consumeRT"),
                number(s, "consumeOKTPS"),
                number(s, "consumeFailedTPS"),
                s.get("consumeFailedMsgs")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            ));
        }
    }
    if let Some(jstack) = info.get("jstack").and_then(Value::as_str) {
        out.extend([String::new(), String::new(), "#Consumer jstack#".into()]);
        out.extend(jstack.lines().map(str::to_owned));
    }
    out
}

/// (topic, expression) pairs a running info subscribes.
fn subscriptions(info: &Value) -> BTreeSet<(String, String)> {
    info.get("subscriptionSet")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|sd| {
            let s = |k: &str| sd.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            (s("topic"), s("subString"))
        })
        .collect()
}

async fn consumer_status(admin: &Admin, args: &ConsumerStatusArgs) -> Result<Report, ClientError> {
    let group = args.group.trim();
    let addrs = asked_brokers(admin, args.broker.as_deref()).await?;
    // The broker the group is online on relays the question to the client.
    let (via, cc) = connections(admin, &addrs, group)
        .await?
        .ok_or_else(|| ClientError::Invalid(format!("the consumer group {group} is not online")))?;
    if let Some(client_id) = args.client_id.as_deref().map(str::trim) {
        let info = admin
            .running_info(&via, group, client_id, args.jstack)
            .await?;
        return Ok(Report::lines(format_running_info(&info), info));
    }
    let mut table = Table::new(&["Index", "ClientId", "Version"]);
    let mut infos: BTreeMap<String, Value> = BTreeMap::new();
    let mut failed = Vec::new();
    for c in &cc.connection_set {
        match admin
            .running_info(&via, group, &c.client_id, args.jstack)
            .await
        {
            Ok(info) => {
                table.row(vec![
                    (infos.len() + 1).to_string(),
                    c.client_id.clone(),
                    version_desc(c.version),
                ]);
                infos.insert(c.client_id.clone(), info);
            }
            Err(e) => failed.push(format!("{}: {e}", c.client_id)),
        }
    }
    let mut report = Report::new(
        table,
        json!({"group": group, "clients": infos, "failed": failed}),
    );
    report = report.with_footers(failed.iter().map(|f| format!("no running info from {f}")));
    if !infos.is_empty() {
        let mut subs = infos.values().map(subscriptions);
        let first = subs.next().unwrap_or_default();
        let same = subs.all(|s| s == first);
        if same {
            // Rebalance is OK when no queue is held by two clients.
            let mut held = BTreeSet::new();
            let rebalance_ok = infos
                .values()
                .flat_map(held_queues)
                .all(|(mq, _)| held.insert(mq));
            report = report
                .with_footer(String::new())
                .with_footer("Same subscription in the same group of consumer".into())
                .with_footer(String::new())
                .with_footer(format!(
                    "Rebalance {}",
                    if rebalance_ok { "OK" } else { "Failed" }
                ));
        } else {
            report = report.with_footer(String::new()).with_footer(
                "WARN: Different subscription in the same group of consumer!!!".into(),
            );
        }
        for (client_id, info) in &infos {
            report = report
                .with_footer(String::new())
                .with_footer(format!("============{client_id}============"));
            report = report.with_footers(format_running_info(info));
        }
    }
    Ok(report)
}

async fn clone_group_offset(
    admin: &Admin,
    args: &CloneGroupOffsetArgs,
) -> Result<Report, ClientError> {
    let (src, dest, topic) = (
        args.src_group.trim(),
        args.dest_group.trim(),
        args.topic.trim(),
    );
    let header = CloneGroupOffsetRequestHeader {
        src_group: src.to_owned(),
        dest_group: dest.to_owned(),
        topic: Some(topic.to_owned()),
        offline: Some(args.offline),
    };
    let mut brokers = Vec::new();
    for (_, addr) in topic_masters(admin, topic).await? {
        let cmd = request(request_code::CLONE_GROUP_OFFSET, header.to_ext_fields());
        admin.call(&addr, cmd).await?;
        brokers.push(addr);
    }
    Ok(Report::lines(
        vec![format!(
            "clone group offset success. srcGroup[{src}], destGroup=[{dest}], topic[{topic}]"
        )],
        json!({"srcGroup": src, "destGroup": dest, "topic": topic, "brokers": brokers}),
    ))
}

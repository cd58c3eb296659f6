//! Topic maintenance as Apache's mqadmin does it: updateTopicPerm (UPDATE_AND_CREATE_TOPIC with the
//! route's queue counts and a new perm), topicClusterList (the clusters whose brokers serve a topic),
//! updateTopicList (UPDATE_AND_CREATE_TOPIC_LIST from a JSON file of TopicConfigs) and allocateMQ
//! (how AllocateMessageQueueAveragely spreads a topic's queues over a list of client ids).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{perm, to_json, CreateTopicListRequestBody, MessageQueue, TopicConfig};
use protocol::header::{CommandHeader, CreateTopicRequestHeader};
use protocol::{request_code, ExtFields};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::{Namesrv, Target};
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum TopicOpsCommand {
    /// Update topic perm (2 W, 4 R, 6 RW) on a master or on every master of a cluster.
    #[command(name = "updateTopicPerm")]
    UpdateTopicPerm(UpdateTopicPermArgs),
    /// Get cluster info for topic: the clusters whose brokers serve it.
    #[command(name = "topicClusterList")]
    TopicClusterList(TopicArgs),
    /// Create or update topics in batch from a JSON file (a list of TopicConfig, or an exported
    /// topic.json / metadata.json).
    #[command(name = "updateTopicList")]
    UpdateTopicList(UpdateTopicListArgs),
    /// Allocate MQ: the queues each client id gets under AllocateMessageQueueAveragely.
    #[command(name = "allocateMQ")]
    AllocateMq(AllocateMqArgs),
}

#[derive(Debug, Args)]
pub struct UpdateTopicPermArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// The topic's new permission: 2 W, 4 R, 6 RW
    #[arg(short = 'p', long = "perm")]
    pub perm: i32,
}

#[derive(Debug, Args)]
pub struct TopicArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(Debug, Args)]
pub struct UpdateTopicListArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    /// Path to a file with a JSON list of TopicConfig
    #[arg(short = 'f', long = "filename")]
    pub file: String,
}

#[derive(Debug, Args)]
pub struct AllocateMqArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Client ids (ips), comma separated
    #[arg(short = 'i', long = "ipList")]
    pub ip_list: String,
}

pub async fn run(command: TopicOpsCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        TopicOpsCommand::UpdateTopicPerm(args) => update_topic_perm(args, timeout).await,
        TopicOpsCommand::TopicClusterList(args) => topic_cluster_list(args, timeout).await,
        TopicOpsCommand::UpdateTopicList(args) => update_topic_list(args, timeout).await,
        TopicOpsCommand::AllocateMq(args) => allocate_mq(args, timeout).await,
    }
}

/// Apache's `PermName.perm2String`: `R`, `W`, `X` (inherit) or `-` each.
pub fn perm_to_string(p: i32) -> String {
    [
        (perm::is_readable(p), 'R'),
        (perm::is_writeable(p), 'W'),
        (p & perm::INHERIT != 0, 'X'),
    ]
    .iter()
    .map(|(on, c)| if *on { *c } else { '-' })
    .collect()
}

/// Java's `TopicConfig.toString()`.
pub fn topic_config_text(tc: &TopicConfig) -> String {
    let attributes: Vec<String> = tc
        .attributes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, \
         topicFilterType={}, topicSysFlag={}, order={}, attributes={{{}}}]",
        tc.topic_name,
        tc.read_queue_nums,
        tc.write_queue_nums,
        perm_to_string(tc.perm),
        tc.topic_filter_type,
        tc.topic_sys_flag,
        tc.order,
        attributes.join(", ")
    )
}

/// UPDATE_AND_CREATE_TOPIC of `tc` (no attribute change) on one broker. Its order flag and filter
/// type are the broker's current ones where it serves GET_TOPIC_CONFIG (Apache's tool resets them
/// to the defaults).
async fn create_or_update(admin: &Admin, addr: &str, tc: &TopicConfig) -> Result<(), ClientError> {
    let mut tc = tc.clone();
    if let Ok(current) = crate::topic_cmds::topic_config(admin, addr, &tc.topic_name).await {
        tc.order = current.order;
        tc.topic_filter_type = current.topic_filter_type;
    }
    let header = CreateTopicRequestHeader {
        topic: tc.topic_name.clone(),
        default_topic: client::broker_api::DEFAULT_TOPIC.to_owned(),
        read_queue_nums: tc.read_queue_nums,
        write_queue_nums: tc.write_queue_nums,
        perm: tc.perm,
        topic_filter_type: tc.topic_filter_type.clone(),
        topic_sys_flag: Some(tc.topic_sys_flag),
        order: Some(tc.order),
        attributes: None,
        force: None,
    };
    admin
        .call(
            addr,
            request(
                request_code::UPDATE_AND_CREATE_TOPIC,
                header.to_ext_fields(),
            ),
        )
        .await?;
    Ok(())
}

async fn update_topic_perm(
    args: UpdateTopicPermArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    if ![2, 4, 6].contains(&args.perm) {
        return Err(ClientError::Invalid(format!(
            "perm {} must be 2 (W), 4 (R) or 6 (RW)",
            args.perm
        )));
    }
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let topic = args.topic.trim();
    let route = admin.route(topic).await?;
    let Some(first) = route.queue_datas.first() else {
        return Err(ClientError::Invalid(format!("topic {topic} has no queues")));
    };
    let tc = TopicConfig {
        topic_name: topic.to_owned(),
        read_queue_nums: first.read_queue_nums,
        write_queue_nums: first.write_queue_nums,
        topic_sys_flag: first.topic_sys_flag,
        perm: args.perm,
        ..TopicConfig::default()
    };
    match (&args.target.broker, &args.target.cluster) {
        (Some(addr), _) => {
            let addr = addr.trim();
            let broker_name = route
                .broker_datas
                .iter()
                .find(|b| b.broker_addrs.get(&0).is_some_and(|a| a == addr))
                .map(|b| b.broker_name.clone());
            let Some(name) = broker_name else {
                return Err(ClientError::Invalid(
                    "updateTopicPerm error broker not exit or broker is not master!".into(),
                ));
            };
            let old = route
                .queue_datas
                .iter()
                .find(|q| q.broker_name == name)
                .map_or(0, |q| q.perm);
            if old == args.perm {
                return Ok(Report::lines(
                    vec!["new perm equals to the old one!".into()],
                    json!({"topic": topic, "brokerAddr": addr, "oldPerm": old, "perm": args.perm, "changed": false}),
                ));
            }
            create_or_update(&admin, addr, &tc).await?;
            Ok(Report::lines(
                vec![
                    format!(
                        "update topic perm from {old} to {} in {addr} success.",
                        args.perm
                    ),
                    format!("{}.", topic_config_text(&tc)),
                ],
                json!({"topic": topic, "brokerAddr": addr, "oldPerm": old, "perm": args.perm, "changed": true}),
            ))
        }
        (None, Some(cluster)) => {
            let mut lines = Vec::new();
            let mut done = Vec::new();
            for addr in admin.master_addrs(Some(cluster.trim())).await? {
                create_or_update(&admin, &addr, &tc).await?;
                lines.push(format!(
                    "update topic perm from {} to {} in {addr} success.",
                    first.perm, args.perm
                ));
                done.push(addr);
            }
            Ok(Report::lines(
                lines,
                json!({"topic": topic, "oldPerm": first.perm, "perm": args.perm, "brokers": done}),
            ))
        }
        (None, None) => Err(ClientError::Invalid(
            "give -b brokerAddr or -c clusterName".into(),
        )),
    }
}

/// The clusters that hold a broker of the topic's route (Apache's `getTopicClusterList`).
pub async fn topic_clusters(admin: &Admin, topic: &str) -> Result<BTreeSet<String>, ClientError> {
    let route = admin.route(topic).await?;
    let info = admin.cluster_info().await?;
    let mut clusters = BTreeSet::new();
    for b in &route.broker_datas {
        for (cluster, names) in &info.cluster_addr_table {
            if names.contains(&b.broker_name) {
                clusters.insert(cluster.clone());
            }
        }
    }
    Ok(clusters)
}

async fn topic_cluster_list(args: TopicArgs, timeout: Duration) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let clusters = topic_clusters(&admin, args.topic.trim()).await?;
    Ok(Report::lines(
        clusters.iter().cloned().collect(),
        json!({"topic": args.topic.trim(), "clusters": clusters}),
    ))
}

/// The TopicConfigs of an updateTopicList file: Apache's JSON list, or an exported `topic.json` /
/// `metadata.json` (their `topicConfigTable`). Attributes written as stored (`key`, no sign) are
/// sent as additions (`+key`), as the broker expects a modification.
pub fn read_topic_list(text: &str) -> Result<Vec<TopicConfig>, ClientError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ClientError::Invalid(format!("the file is not JSON: {e}")))?;
    let list: Vec<Value> = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("topicConfigTable") {
            Some(Value::Object(table)) => table.into_iter().map(|(_, v)| v).collect(),
            _ => {
                return Err(ClientError::Invalid(
                    "the file holds neither a list of TopicConfig nor a topicConfigTable".into(),
                ))
            }
        },
        _ => {
            return Err(ClientError::Invalid(
                "the file holds neither a list of TopicConfig nor a topicConfigTable".into(),
            ))
        }
    };
    let mut out = Vec::with_capacity(list.len());
    for item in list {
        let mut tc: TopicConfig = serde_json::from_value(item)
            .map_err(|e| ClientError::Invalid(format!("bad TopicConfig: {e}")))?;
        if tc.topic_name.trim().is_empty() {
            return Err(ClientError::Invalid(
                "a TopicConfig has no topicName".into(),
            ));
        }
        tc.attributes = tc
            .attributes
            .into_iter()
            .map(|(k, v)| {
                if k.starts_with('+') || k.starts_with('-') {
                    (k, v)
                } else {
                    (format!("+{k}"), v)
                }
            })
            .collect::<BTreeMap<_, _>>();
        out.push(tc);
    }
    Ok(out)
}

async fn update_topic_list(
    args: UpdateTopicListArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let path = args.file.trim();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Report::lines(
                vec![format!("the file path {path} does not exists")],
                json!({"file": path, "exists": false}),
            ))
        }
        Err(e) => return Err(ClientError::Invalid(format!("cannot read {path}: {e}"))),
    };
    let topics = read_topic_list(&text)?;
    if topics.is_empty() {
        return Ok(Report::lines(
            Vec::new(),
            json!({"file": path, "topics": []}),
        ));
    }
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let addrs = admin
        .target_addrs(
            args.target.broker.as_deref().map(str::trim),
            args.target.cluster.as_deref().map(str::trim),
        )
        .await?;
    let body = to_json(&CreateTopicListRequestBody {
        topic_config_list: topics.clone(),
    });
    let mut lines = Vec::new();
    for addr in &addrs {
        let cmd = request(request_code::UPDATE_AND_CREATE_TOPIC_LIST, ExtFields::new())
            .with_body(body.clone());
        admin.call(addr, cmd).await?;
        lines.push(format!(
            "submit batch of topic config to {addr} success, please check the result later."
        ));
    }
    let names: Vec<&str> = topics.iter().map(|t| t.topic_name.as_str()).collect();
    Ok(Report::lines(
        lines,
        json!({"file": path, "topics": names, "brokers": addrs}),
    ))
}

/// AllocateMessageQueueAveragely: the queues client `index` of `clients` gets out of `all`.
pub fn allocate_averagely<T: Clone>(all: &[T], clients: usize, index: usize) -> Vec<T> {
    if all.is_empty() || clients == 0 || index >= clients {
        return Vec::new();
    }
    let n = all.len();
    let rem = n % clients;
    let size = if n <= clients {
        1
    } else if rem > 0 && index < rem {
        n / clients + 1
    } else {
        n / clients
    };
    let start = if rem > 0 && index < rem {
        index * size
    } else {
        index * size + rem
    };
    let range = size.min(n.saturating_sub(start));
    (0..range)
        .filter_map(|i| all.get((start + i) % n).cloned())
        .collect()
}

async fn allocate_mq(args: AllocateMqArgs, timeout: Duration) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let topic = args.topic.trim();
    let route = admin.route(topic).await?;
    // The consumer's view: every read queue of a readable broker (topicRouteData2TopicSubscribeInfo).
    let mut queues: Vec<MessageQueue> = route
        .queue_datas
        .iter()
        .filter(|q| perm::is_readable(q.perm))
        .flat_map(|q| {
            (0..q.read_queue_nums.max(0)).map(|id| MessageQueue {
                topic: topic.to_owned(),
                broker_name: q.broker_name.clone(),
                queue_id: id,
            })
        })
        .collect();
    queues.sort();
    let ips: Vec<&str> = args.ip_list.trim().split(',').collect();
    let mut result = serde_json::Map::new();
    for ip in &ips {
        let index = ips.iter().position(|i| i == ip).unwrap_or(0);
        let mine = allocate_averagely(&queues, ips.len(), index);
        let list: Vec<Value> = mine
            .iter()
            .map(|q| json!({"brokerName": q.broker_name, "queueId": q.queue_id, "topic": q.topic}))
            .collect();
        result.insert((*ip).to_owned(), Value::Array(list));
    }
    let json = json!({ "result": result });
    Ok(Report::lines(vec![json.to_string()], json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averagely_spreads_as_apache_does() {
        let all: Vec<i32> = (0..8).collect();
        assert_eq!(allocate_averagely(&all, 3, 0), vec![0, 1, 2]);
        assert_eq!(allocate_averagely(&all, 3, 1), vec![3, 4, 5]);
        assert_eq!(allocate_averagely(&all, 3, 2), vec![6, 7]);
        assert_eq!(allocate_averagely(&all[..2], 3, 2), Vec::<i32>::new());
        assert_eq!(allocate_averagely(&all[..2], 3, 1), vec![1]);
        assert!(allocate_averagely(&all, 0, 0).is_empty());
    }

    #[test]
    fn perms_and_topic_configs_print_as_java() {
        assert_eq!(perm_to_string(6), "RW-");
        assert_eq!(perm_to_string(4), "R--");
        let tc = TopicConfig::new("T", 4);
        assert_eq!(
            topic_config_text(&tc),
            "TopicConfig [topicName=T, readQueueNums=4, writeQueueNums=4, perm=RW-, \
             topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={}]"
        );
    }

    #[test]
    fn topic_list_files_read_lists_and_exports() {
        let list = read_topic_list(
            r#"[{"topicName":"A","readQueueNums":2,"writeQueueNums":2,"perm":6,"attributes":{"message.type":"FIFO"}}]"#,
        )
        .unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].read_queue_nums, 2);
        assert_eq!(
            list[0].attributes.get("+message.type").map(String::as_str),
            Some("FIFO")
        );
        let export = read_topic_list(
            r#"{"exportTime":1,"topicConfigTable":{"B":{"topicName":"B","attributes":{"-x":""}}}}"#,
        )
        .unwrap();
        assert_eq!(export[0].topic_name, "B");
        assert!(export[0].attributes.contains_key("-x"));
        assert!(read_topic_list("{}").is_err());
        assert!(read_topic_list("[{}]").is_err());
        assert!(read_topic_list("not json").is_err());
    }
}

//! Exports as Apache's mqadmin writes them, for migrations and capacity reviews: exportMetadata
//! (topics with their attributes, subscription groups and, ours beside Apache's keys, every
//! group's committed offsets per broker), exportConfigs (the broker keys Apache picks, the cluster's
//! size and, ours beside them, each broker's and name server's whole config) and exportMetrics
//! (per broker: environment, TPS, messages over the day, topic and group counts, client versions).
//! Each writes one JSON file into `-f` (default `/tmp/rocketmq/export`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::body::{
    from_json, split_offset_table_key, BrokerStatsData, ConsumerConnection,
    ConsumerOffsetSerializeWrapper, KVTable, TopicConfig, TopicConfigSerializeWrapper, TopicList,
};
use protocol::header::{
    CommandHeader, GetConsumerConnectionListRequestHeader, ViewBrokerStatsDataRequestHeader,
};
use protocol::{request_code, ExtFields};
use serde_json::{json, Map, Value};

use crate::admin::Admin;
use crate::broker_config_cmds::parse_properties;
use crate::shared_args::Namesrv;
use crate::table::Report;

/// Apache's default export directory.
pub const DEFAULT_EXPORT_DIR: &str = "/tmp/rocketmq/export";

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Export metadata: topics (with attributes), subscription groups and consumer offsets.
    #[command(name = "exportMetadata")]
    ExportMetadata(ExportMetadataArgs),
    /// Export configs: broker configs and the cluster's scale.
    #[command(name = "exportConfigs")]
    ExportConfigs(ExportClusterArgs),
    /// Export metrics: per broker runtime figures and the cluster's totals.
    #[command(name = "exportMetrics")]
    ExportMetrics(ExportClusterArgs),
}

#[derive(Debug, Args)]
pub struct ExportMetadataArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Choose a cluster to export
    #[arg(short = 'c', long = "clusterName", conflicts_with = "broker")]
    pub cluster: Option<String>,
    /// Choose a broker to export
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// Directory of the exported file
    #[arg(short = 'f', long = "filePath", default_value = DEFAULT_EXPORT_DIR)]
    pub dir: String,
    /// Only export topic metadata (topic.json)
    #[arg(short = 't', long = "topic", conflicts_with = "groups_only")]
    pub topics_only: bool,
    /// Only export subscriptionGroup metadata (subscriptionGroup.json)
    #[arg(short = 'g', long = "subscriptionGroup")]
    pub groups_only: bool,
    /// Also export retry and DLQ topics
    #[arg(short = 's', long = "specialTopic")]
    pub special_topics: bool,
}

#[derive(Debug, Args)]
pub struct ExportClusterArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Choose a cluster to export
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: String,
    /// Directory of the exported file
    #[arg(short = 'f', long = "filePath", default_value = DEFAULT_EXPORT_DIR)]
    pub dir: String,
}

pub async fn run(command: ExportCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        ExportCommand::ExportMetadata(args) => export_metadata(args, timeout).await,
        ExportCommand::ExportConfigs(args) => export_configs(args, timeout).await,
        ExportCommand::ExportMetrics(args) => export_metrics(args, timeout).await,
    }
}

/// Apache's `MixAll` predefined groups.
const PREDEFINED_GROUPS: [&str; 14] = [
    "DEFAULT_CONSUMER",
    "DEFAULT_PRODUCER",
    "TOOLS_CONSUMER",
    "SCHEDULE_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
    "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PULL",
    "CID_RMQ_SYS_TRANS",
];

/// A topic Apache's exports leave out: its system topics, and the broker's own (cluster and broker
/// names) in `own`.
pub fn is_system_topic(topic: &str, own: &BTreeSet<String>) -> bool {
    protocol::system_topics::is_system_topic(topic) || own.contains(topic)
}

/// A group Apache's exports leave out.
pub fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_") || PREDEFINED_GROUPS.contains(&group)
}

/// Whether a topic stays in an export (Apache's `getUserTopicConfig`).
pub fn keep_topic(tc: &TopicConfig, own: &BTreeSet<String>, special: bool) -> bool {
    let name = tc.topic_name.as_str();
    if is_system_topic(name, own) {
        return false;
    }
    if !special && (name.starts_with("%RETRY%") || name.starts_with("%DLQ%")) {
        return false;
    }
    // PermName.isValid.
    (0..8).contains(&tc.perm)
}

async fn call(admin: &Admin, addr: &str, code: i32) -> Result<Vec<u8>, ClientError> {
    Ok(admin
        .call(addr, request(code, ExtFields::new()))
        .await?
        .body
        .to_vec())
}

/// The names a broker counts as its own system topics: what it answers to
/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER (where served) and every cluster and broker name.
async fn own_topics(admin: &Admin, addr: &str) -> Result<BTreeSet<String>, ClientError> {
    let info = admin.cluster_info().await?;
    let mut own: BTreeSet<String> = info.cluster_addr_table.keys().cloned().collect();
    own.extend(info.broker_addr_table.keys().cloned());
    if let Ok(body) = call(admin, addr, request_code::GET_SYSTEM_TOPIC_LIST_FROM_BROKER).await {
        if let Ok(list) = from_json::<TopicList>(&body) {
            own.extend(list.topic_list);
        }
    }
    Ok(own)
}

/// A broker's user topics (GET_ALL_TOPIC_CONFIG, filtered).
async fn user_topics(
    admin: &Admin,
    addr: &str,
    special: bool,
) -> Result<TopicConfigSerializeWrapper, ClientError> {
    let own = own_topics(admin, addr).await?;
    let mut wrapper: TopicConfigSerializeWrapper =
        from_json(&call(admin, addr, request_code::GET_ALL_TOPIC_CONFIG).await?)?;
    wrapper
        .topic_config_table
        .retain(|_, tc| keep_topic(tc, &own, special));
    Ok(wrapper)
}

/// A broker's user subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, filtered), the whole
/// wrapper as the broker wrote it.
async fn user_groups(admin: &Admin, addr: &str) -> Result<Value, ClientError> {
    let mut wrapper: Value =
        from_json(&call(admin, addr, request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG).await?)?;
    if let Some(table) = wrapper
        .get_mut("subscriptionGroupTable")
        .and_then(Value::as_object_mut)
    {
        table.retain(|group, _| !is_system_group(group));
    }
    Ok(wrapper)
}

/// A broker's committed offsets of user groups (GET_ALL_CONSUMER_OFFSET), `topic@group` keyed.
async fn user_offsets(
    admin: &Admin,
    addr: &str,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, ClientError> {
    let wrapper: ConsumerOffsetSerializeWrapper =
        from_json(&call(admin, addr, request_code::GET_ALL_CONSUMER_OFFSET).await?)?;
    let own = BTreeSet::new();
    Ok(wrapper
        .offset_table
        .into_iter()
        .filter(|(key, _)| {
            split_offset_table_key(key).is_some_and(|(topic, group)| {
                !is_system_group(group) && !is_system_topic(topic, &own)
            })
        })
        .collect())
}

fn group_table(wrapper: &Value) -> Map<String, Value> {
    wrapper
        .get("subscriptionGroupTable")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Writes `value` as pretty JSON to `dir/name`, creating `dir`.
fn write_json(dir: &str, name: &str, value: &Value) -> Result<String, ClientError> {
    let dir = Path::new(dir.trim());
    std::fs::create_dir_all(dir)
        .map_err(|e| ClientError::Invalid(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ClientError::Invalid(format!("cannot write JSON: {e}")))?;
    std::fs::write(&path, text)
        .map_err(|e| ClientError::Invalid(format!("cannot write {}: {e}", path.display())))?;
    Ok(path.display().to_string())
}

fn now_ms() -> i64 {
    client::uniq_key::now_millis()
}

/// Adds `add`'s count (a queue count, a retry queue count) to `into`'s, as Apache's cluster export
/// sums each master's.
fn sum_field(into: &mut Value, add: &Value, field: &str) {
    let sum = into.get(field).and_then(Value::as_i64).unwrap_or(0)
        + add.get(field).and_then(Value::as_i64).unwrap_or(0);
    if let Some(obj) = into.as_object_mut() {
        obj.insert(field.to_owned(), json!(sum));
    }
}

async fn export_metadata(
    args: ExportMetadataArgs,
    timeout: Duration,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let special = args.special_topics;
    // (broker name, master address) of every broker exported.
    let brokers: Vec<(String, String)> = match (&args.broker, &args.cluster) {
        (Some(addr), _) => {
            let addr = addr.trim().to_owned();
            if args.topics_only {
                let wrapper = user_topics(&admin, &addr, special).await?;
                let path = write_json(&args.dir, "topic.json", &json!(wrapper))?;
                return Ok(exported(path, json!(wrapper)));
            }
            if args.groups_only {
                let wrapper = user_groups(&admin, &addr).await?;
                let path = write_json(&args.dir, "subscriptionGroup.json", &wrapper)?;
                return Ok(exported(path, wrapper));
            }
            let info = admin.cluster_info().await?;
            let name = info
                .broker_addr_table
                .values()
                .find(|b| b.broker_addrs.values().any(|a| *a == addr))
                .map_or_else(|| addr.clone(), |b| b.broker_name.clone());
            vec![(name, addr)]
        }
        (None, Some(cluster)) => admin.masters(Some(cluster.trim())).await?,
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -c clusterName or -b brokerAddr".into(),
            ))
        }
    };
    let mut topics: Map<String, Value> = Map::new();
    let mut groups: Map<String, Value> = Map::new();
    let mut offsets: Map<String, Value> = Map::new();
    for (name, addr) in &brokers {
        if !args.groups_only {
            for (topic, tc) in user_topics(&admin, addr, special).await?.topic_config_table {
                let mut value = json!(tc);
                if let Some(before) = topics.get(&topic) {
                    sum_field(&mut value, before, "readQueueNums");
                    sum_field(&mut value, before, "writeQueueNums");
                }
                topics.insert(topic, value);
            }
        }
        if !args.topics_only {
            for (group, mut config) in group_table(&user_groups(&admin, addr).await?) {
                if let Some(before) = groups.get(&group) {
                    sum_field(&mut config, before, "retryQueueNums");
                }
                groups.insert(group, config);
            }
        }
        if !args.topics_only && !args.groups_only {
            offsets.insert(name.clone(), json!(user_offsets(&admin, addr).await?));
        }
    }
    let mut result = Map::new();
    let file = if args.topics_only {
        result.insert("topicConfigTable".into(), Value::Object(topics));
        "topic.json"
    } else if args.groups_only {
        result.insert("subscriptionGroupTable".into(), Value::Object(groups));
        "subscriptionGroup.json"
    } else {
        result.insert("topicConfigTable".into(), Value::Object(topics));
        result.insert("subscriptionGroupTable".into(), Value::Object(groups));
        result.insert("consumerOffsetTable".into(), Value::Object(offsets));
        "metadata.json"
    };
    result.insert("exportTime".into(), json!(now_ms()));
    let result = Value::Object(result);
    let path = write_json(&args.dir, file, &result)?;
    Ok(exported(path, result))
}

fn exported(path: String, content: Value) -> Report {
    Report::lines(
        vec![format!("export {path} success")],
        json!({"path": path, "content": content}),
    )
}

/// The broker keys Apache's exportConfigs keeps.
const EXPORTED_BROKER_KEYS: [&str; 16] = [
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
];

async fn broker_config(admin: &Admin, addr: &str) -> Result<BTreeMap<String, String>, ClientError> {
    let body = call(admin, addr, request_code::GET_BROKER_CONFIG).await?;
    Ok(parse_properties(&String::from_utf8_lossy(&body))
        .into_iter()
        .collect())
}

/// Each broker group of the cluster: its master (if registered) and its slave count.
async fn masters_and_slaves(
    admin: &Admin,
    cluster: &str,
) -> Result<Vec<(Option<String>, usize)>, ClientError> {
    let info = admin.cluster_info().await?;
    let Some(names) = info.cluster_addr_table.get(cluster) else {
        return Err(ClientError::Invalid(format!(
            "cluster [{cluster}] not exist"
        )));
    };
    Ok(names
        .iter()
        .filter_map(|name| info.broker_addr_table.get(name))
        .map(|b| {
            let slaves = b.broker_addrs.keys().filter(|id| **id != 0).count();
            (b.master_addr().map(str::to_owned), slaves)
        })
        .collect())
}

async fn export_configs(args: ExportClusterArgs, timeout: Duration) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let cluster = args.cluster.trim();
    let (mut masters, mut slaves) = (0usize, 0usize);
    let mut picked: Map<String, Value> = Map::new();
    let mut whole: Map<String, Value> = Map::new();
    for (master, slave_count) in masters_and_slaves(&admin, cluster).await? {
        let Some(addr) = master else {
            continue;
        };
        let config = broker_config(&admin, &addr).await?;
        masters += 1;
        slaves += slave_count;
        let name = config
            .get("brokerName")
            .cloned()
            .unwrap_or_else(|| addr.clone());
        let keys: BTreeMap<&str, &String> = EXPORTED_BROKER_KEYS
            .iter()
            .filter_map(|k| config.get(*k).map(|v| (*k, v)))
            .collect();
        picked.insert(name, json!(keys));
        whole.insert(addr, json!(config));
    }
    let cmd = request(request_code::GET_NAMESRV_CONFIG, ExtFields::new());
    let mut namesrvs: Map<String, Value> = Map::new();
    for (addr, resp) in admin.invoke_every_namesrv(&cmd).await {
        // A name server that does not answer is noted, not fatal (Apache's export asks none).
        let config = match resp {
            Ok(r) => json!(parse_properties(&String::from_utf8_lossy(&r.body))
                .into_iter()
                .collect::<BTreeMap<String, String>>()),
            Err(e) => json!({ "error": e.to_string() }),
        };
        namesrvs.insert(addr.to_string(), config);
    }
    let result = json!({
        "brokerConfigs": picked,
        "clusterScale": {
            "namesrvSize": admin.namesrv_addrs.len(),
            "masterBrokerSize": masters,
            "slaveBrokerSize": slaves,
        },
        "brokerConfigsByAddr": whole,
        "namesrvConfigs": namesrvs,
    });
    let path = write_json(&args.dir, "configs.json", &result)?;
    Ok(exported(path, result))
}

/// The first figure of a runtime rate ("x.xx y.yy z.zz"), or 0.
fn first_rate(kv: &KVTable, key: &str) -> f64 {
    kv.table
        .get(key)
        .and_then(|v| v.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn kv_i64(kv: &KVTable, key: &str) -> i64 {
    kv.table
        .get(key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// TOPIC_PUT_NUMS of one topic: (TPS over the last minute, messages over the last day).
async fn topic_put(admin: &Admin, addr: &str, topic: &str) -> (f64, u64) {
    let header = ViewBrokerStatsDataRequestHeader {
        stats_name: "TOPIC_PUT_NUMS".to_owned(),
        stats_key: topic.to_owned(),
    };
    let cmd = request(request_code::VIEW_BROKER_STATS_DATA, header.to_ext_fields());
    let Ok(resp) = admin.call(addr, cmd).await else {
        return (0.0, 0);
    };
    let Ok(data) = from_json::<BrokerStatsData>(&resp.body) else {
        return (0.0, 0);
    };
    let day = [
        data.stats_day.sum,
        data.stats_hour.sum,
        data.stats_minute.sum,
    ]
    .into_iter()
    .find(|s| *s != 0)
    .unwrap_or(0);
    (data.stats_minute.tps, day)
}

/// `LANGUAGE%VERSION` of every client of the broker's groups.
async fn client_versions(
    admin: &Admin,
    addr: &str,
    groups: &Map<String, Value>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for group in groups.keys() {
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.clone(),
        };
        let cmd = request(
            request_code::GET_CONSUMER_CONNECTION_LIST,
            header.to_ext_fields(),
        );
        let Ok(resp) = admin.call(addr, cmd).await else {
            continue;
        };
        if let Ok(cc) = from_json::<ConsumerConnection>(&resp.body) {
            out.extend(
                cc.connection_set
                    .iter()
                    .map(|c| format!("{}%{}", c.language, crate::version::version_desc(c.version))),
            );
        }
    }
    out
}

async fn export_metrics(args: ExportClusterArgs, timeout: Duration) -> Result<Report, ClientError> {
    let admin = Admin::new(&args.ns.namesrv, timeout)?;
    let cluster = args.cluster.trim();
    let info = admin.cluster_info().await?;
    let Some(names) = info.cluster_addr_table.get(cluster) else {
        return Err(ClientError::Invalid(format!(
            "cluster [{cluster}] not exist"
        )));
    };
    let mut report: Map<String, Value> = Map::new();
    let mut total_tps = [0.0f64; 4];
    let mut total_day = [0i64; 4];
    for name in names {
        let Some(addr) = info
            .broker_addr_table
            .get(name)
            .and_then(|b| b.master_addr())
        else {
            continue;
        };
        let kv = admin.runtime_info(addr).await?;
        let config = broker_config(&admin, addr).await?;
        let groups = group_table(&user_groups(&admin, addr).await?);
        let topics = user_topics(&admin, addr, false).await?;
        let (trans_tps, trans_day) = topic_put(&admin, addr, "RMQ_SYS_TRANS_HALF_TOPIC").await;
        let (sched_tps, sched_day) = topic_put(&admin, addr, "SCHEDULE_TOPIC_XXXX").await;
        let in_tps = first_rate(&kv, "putTps");
        let out_tps = if kv.table.contains_key("getTransferredTps") {
            first_rate(&kv, "getTransferredTps")
        } else {
            first_rate(&kv, "getTransferedTps")
        };
        let in_day =
            kv_i64(&kv, "msgPutTotalTodayMorning") - kv_i64(&kv, "msgPutTotalYesterdayMorning");
        let out_day =
            kv_i64(&kv, "msgGetTotalTodayMorning") - kv_i64(&kv, "msgGetTotalYesterdayMorning");
        let (trans_day, sched_day) = (
            i64::try_from(trans_day).unwrap_or(i64::MAX),
            i64::try_from(sched_day).unwrap_or(i64::MAX),
        );
        for (t, v) in total_tps
            .iter_mut()
            .zip([in_tps, out_tps, trans_tps, sched_tps])
        {
            *t += v;
        }
        for (t, v) in total_day
            .iter_mut()
            .zip([in_day, out_day, trans_day, sched_day])
        {
            *t = t.saturating_add(v);
        }
        let version = kv
            .table
            .get("brokerVersionDesc")
            .cloned()
            .unwrap_or_else(|| format!("V{}", env!("CARGO_PKG_VERSION").replace('.', "_")));
        report.insert(
            name.clone(),
            json!({
                "runtimeEnv": {
                    "cpuNum": config.get("clientCallbackExecutorThreads"),
                    "totalMemKBytes": kv.table.get("totalMemKBytes"),
                },
                "runtimeQuota": {
                    "diskRatio": {
                        "commitLogDiskRatio": kv.table.get("commitLogDiskRatio"),
                        "consumeQueueDiskRatio": kv.table.get("consumeQueueDiskRatio"),
                    },
                    "tps": {
                        "normalInTps": in_tps, "normalOutTps": out_tps,
                        "transInTps": trans_tps, "scheduleInTps": sched_tps,
                    },
                    "oneDayNum": {
                        "normalOneDayInNum": in_day, "normalOneDayOutNum": out_day,
                        "transOneDayInNum": trans_day, "scheduleOneDayInNum": sched_day,
                    },
                    "messageAverageSize": kv.table.get("putMessageAverageSize"),
                    "topicSize": topics.topic_config_table.len(),
                    "groupSize": groups.len(),
                },
                "runtimeVersion": {
                    "rocketmqVersion": version,
                    "clientInfo": client_versions(&admin, addr, &groups).await,
                },
            }),
        );
    }
    let result = json!({
        "evaluateReport": report,
        "totalData": {
            "totalTps": {
                "totalNormalInTps": total_tps[0], "totalNormalOutTps": total_tps[1],
                "totalTransInTps": total_tps[2], "totalScheduleInTps": total_tps[3],
            },
            "totalOneDayNum": {
                "normalOneDayInNum": total_day[0], "normalOneDayOutNum": total_day[1],
                "transOneDayInNum": total_day[2], "scheduleOneDayInNum": total_day[3],
            },
        },
    });
    let path = write_json(&args.dir, "metrics.json", &result)?;
    Ok(exported(path, result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_leave_out_what_apache_leaves_out() {
        let own: BTreeSet<String> = ["DefaultCluster".to_owned(), "broker-a".to_owned()].into();
        assert!(is_system_topic("TBW102", &own));
        assert!(is_system_topic("rmq_sys_wheel_timer", &own));
        assert!(is_system_topic("broker-a", &own));
        assert!(!is_system_topic("orders", &own));
        assert!(is_system_group("TOOLS_CONSUMER"));
        assert!(is_system_group("CID_RMQ_SYS_TRANS"));
        assert!(!is_system_group("orders-consumer"));
        let retry = TopicConfig::new("%RETRY%g", 1);
        assert!(!keep_topic(&retry, &own, false));
        assert!(keep_topic(&retry, &own, true));
        let bad_perm = TopicConfig {
            perm: 9,
            ..TopicConfig::new("orders", 1)
        };
        assert!(!keep_topic(&bad_perm, &own, false));
        assert!(keep_topic(&TopicConfig::new("orders", 1), &own, false));
    }

    #[test]
    fn cluster_exports_sum_queue_counts() {
        let mut a = json!({"readQueueNums": 4, "topicName": "T"});
        sum_field(&mut a, &json!({"readQueueNums": 8}), "readQueueNums");
        assert_eq!(a["readQueueNums"], 12);
        let dir = std::env::temp_dir().join(format!("mqadmin-export-{}", std::process::id()));
        let dir = dir.display().to_string();
        let path = write_json(&dir, "x.json", &a).unwrap();
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, a);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

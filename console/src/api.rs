//! The read-only JSON API the pages call: cluster and brokers, topics, consumer groups, message
//! lookups and metrics. Each answer is built from mqadmin's commands (their JSON form), so the console
//! and `mqadmin --json` show the same figures.

use std::collections::BTreeMap;

use client::request::request;
use client::ClientError;
use mqadmin::admin::Admin;
use mqadmin::{message_cmds, stats_cmds, topic_cmds};
use protocol::request_code;
use serde_json::{json, Value};

use crate::app::Console;
use crate::clock::now_ms;
use crate::http::Request;
use crate::metrics;

/// A key/value properties text (GET_BROKER_CONFIG's body) as a map.
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// GET_BROKER_CONFIG of the broker at `addr`.
pub async fn broker_config(
    admin: &Admin,
    addr: &str,
) -> Result<BTreeMap<String, String>, ClientError> {
    let cmd = request(request_code::GET_BROKER_CONFIG, protocol::ExtFields::new());
    let resp = admin.call(addr, cmd).await?;
    Ok(parse_properties(&String::from_utf8_lossy(&resp.body)))
}

/// The first figure of a runtime-info rate ("12.5 11.0 9.8": last 10 s, 1 min, 10 min).
fn first_number(text: &str) -> f64 {
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// One broker (one address) as the cluster page shows it.
#[derive(Debug, Clone)]
pub struct BrokerRow {
    pub cluster: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub addr: String,
    /// The broker process it is a shard-broker of (`<process>-<i>`), or its own name.
    pub process: String,
    /// `host:metricsPort` of its process, when it has one.
    pub metrics_endpoint: Option<String>,
    pub json: Value,
}

/// Every registered broker with its runtime figures and config; one that does not answer is listed
/// with its error.
pub async fn brokers(admin: &Admin) -> Result<Vec<BrokerRow>, ClientError> {
    let info = admin.cluster_info().await?;
    let mut rows = Vec::new();
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                let runtime = admin.runtime_info(addr).await.map(|kv| kv.table);
                let config = broker_config(admin, addr).await;
                let get = |k: &str| {
                    runtime
                        .as_ref()
                        .ok()
                        .and_then(|t| t.get(k).cloned())
                        .unwrap_or_default()
                };
                let conf = |k: &str| config.as_ref().ok().and_then(|c| c.get(k).cloned());
                let process = runtime
                    .as_ref()
                    .ok()
                    .and_then(|t| t.get("processBrokerName").cloned())
                    .or_else(|| conf("brokerName"))
                    .unwrap_or_else(|| name.clone());
                let role = match conf("brokerRole") {
                    Some(r) if *id == 0 => r,
                    _ if *id == 0 => "MASTER".to_owned(),
                    _ => "SLAVE".to_owned(),
                };
                let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
                let metrics_endpoint = conf("metricsPort")
                    .filter(|p| p != "0" && !p.is_empty())
                    .map(|p| format!("{host}:{p}"));
                let error = match (&runtime, &config) {
                    (Err(e), _) | (_, Err(e)) => Some(e.to_string()),
                    _ => None,
                };
                let json = json!({
                    "clusterName": cluster, "brokerName": name, "brokerId": id, "addr": addr,
                    "process": process, "role": role, "version": get("brokerVersionDesc"),
                    "putTps": first_number(&get("putTps")),
                    "getTps": first_number(&get("getTransferedTps")),
                    "msgPutTotalTodayNow": get("msgPutTotalTodayNow"),
                    "msgGetTotalTodayNow": get("msgGetTotalTodayNow"),
                    "commitLogDiskRatio": get("commitLogDiskRatio"),
                    "brokerPermission": conf("brokerPermission"),
                    "metricsEndpoint": metrics_endpoint,
                    "error": error,
                });
                rows.push(BrokerRow {
                    cluster: cluster.clone(),
                    broker_name: name.clone(),
                    broker_id: *id,
                    addr: addr.clone(),
                    process,
                    metrics_endpoint,
                    json,
                });
            }
        }
    }
    rows.sort_by(|a, b| {
        (&a.cluster, &a.broker_name, a.broker_id).cmp(&(&b.cluster, &b.broker_name, b.broker_id))
    });
    Ok(rows)
}

fn missing(name: &str) -> ClientError {
    ClientError::Invalid(format!("query parameter `{name}` is required"))
}

/// Answers a GET under /api/ (the admin actions are in `actions`).
pub async fn get(console: &Console, req: &Request) -> Result<Value, ClientError> {
    let admin = console.reader()?;
    match req.path.as_str() {
        "/api/cluster" => {
            let rows = brokers(&admin).await?;
            Ok(json!({ "brokers": rows.into_iter().map(|r| r.json).collect::<Vec<_>>() }))
        }
        "/api/topics" => Ok(topic_cmds::topic_list(&admin).await?.json),
        "/api/topic" => {
            let topic = req.param("topic").ok_or_else(|| missing("topic"))?;
            let route = topic_cmds::topic_route(&admin, topic).await?.json;
            let status = stats_cmds::topic_status(&admin, topic).await?.json;
            Ok(json!({ "topic": topic, "route": route, "status": status }))
        }
        "/api/groups" => Ok(stats_cmds::group_progress(&admin).await?.json),
        "/api/group" => {
            let group = req.param("group").ok_or_else(|| missing("group"))?;
            let progress = stats_cmds::consumer_progress(&admin, group, None, false)
                .await?
                .json;
            let masters: Vec<String> = admin
                .masters(None)
                .await?
                .into_iter()
                .map(|(_, a)| a)
                .collect();
            let connection = stats_cmds::connections(&admin, &masters, group)
                .await?
                .map(|(_, c)| c);
            Ok(json!({
                "group": group,
                "progress": progress,
                "connection": serde_json::to_value(connection).unwrap_or(Value::Null),
            }))
        }
        "/api/message/id" => {
            let id = req.param("msgId").ok_or_else(|| missing("msgId"))?;
            let topic = req.param("topic").filter(|t| !t.is_empty());
            Ok(message_cmds::query_by_id(&admin, id, topic).await?.json)
        }
        "/api/message/key" => {
            let topic = req.param("topic").ok_or_else(|| missing("topic"))?;
            let key = req.param("key").ok_or_else(|| missing("key"))?;
            Ok(message_cmds::query_by_key(&admin, topic, key, 32)
                .await?
                .json)
        }
        "/api/metrics" => metrics_json(&admin).await,
        other => Err(ClientError::Invalid(format!("no such API: {other}"))),
    }
}

/// One scrape of every broker process's metrics endpoint.
async fn metrics_json(admin: &Admin) -> Result<Value, ClientError> {
    let mut endpoints: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for row in brokers(admin).await? {
        if let Some(endpoint) = row.metrics_endpoint {
            let entry = endpoints
                .entry(endpoint)
                .or_insert_with(|| (row.process.clone(), Vec::new()));
            entry.1.push(row.broker_name);
        }
    }
    let mut out = Vec::new();
    for (endpoint, (process, names)) in endpoints {
        let scrape = crate::http::get(&endpoint, "/metrics", admin.timeout).await;
        out.push(match scrape {
            Ok(text) => json!({
                "endpoint": endpoint, "process": process, "brokerNames": names,
                "figures": metrics::summary(&text),
            }),
            Err(e) => json!({
                "endpoint": endpoint, "process": process, "brokerNames": names, "error": e,
            }),
        });
    }
    Ok(json!({ "timeMs": now_ms(), "endpoints": out }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_rates_parse() {
        let p = parse_properties("#c\nbrokerRole=SYNC_MASTER\n metricsPort = 5557\nbad\n");
        assert_eq!(p.get("brokerRole").map(String::as_str), Some("SYNC_MASTER"));
        assert_eq!(p.get("metricsPort").map(String::as_str), Some("5557"));
        assert_eq!(p.len(), 2);
        assert_eq!(first_number("12.5 11.0 9.8"), 12.5);
        assert_eq!(first_number(""), 0.0);
    }
}

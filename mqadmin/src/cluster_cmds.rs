//! Cluster commands: clusterList (every broker with its totals, the shard-brokers of one process
//! under its name) and brokerStatus (runtime figures); and what a broker name given for `-b` stands
//! for (`resolve_broker_name`): Apache's `-b` is an address, ours also takes the name in a broker's
//! config, which for a process of several shard-brokers means every one of them.

use client::ClientError;
use serde_json::json;

use crate::admin::Admin;
use crate::table::{Report, Table};

pub async fn cluster_list(admin: &Admin, only: Option<&str>) -> Result<Report, ClientError> {
    let info = admin.cluster_info().await?;
    let mut table = Table::new(&[
        "Cluster Name",
        "Broker Name",
        "Process",
        "BID",
        "Addr",
        "Version",
        "InTotal",
        "OutTotal",
    ]);
    let mut rows = Vec::new();
    for (cluster, names) in &info.cluster_addr_table {
        if only.is_some_and(|c| c != cluster) {
            continue;
        }
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                // A broker that does not answer is listed, not fatal: that is what operators look for.
                let (version, put, got, process, error) = match admin.runtime_info(addr).await {
                    Ok(kv) => {
                        let get = |k: &str| kv.table.get(k).cloned().unwrap_or_default();
                        // A shard-broker names the process it is a shard of.
                        let process = kv
                            .table
                            .get("processBrokerName")
                            .cloned()
                            .unwrap_or_else(|| name.clone());
                        (
                            get("brokerVersionDesc"),
                            get("msgPutTotalTodayNow"),
                            get("msgGetTotalTodayNow"),
                            process,
                            None,
                        )
                    }
                    Err(e) => (
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        Some(e.to_string()),
                    ),
                };
                table.row(vec![
                    cluster.clone(),
                    name.clone(),
                    process.clone(),
                    id.to_string(),
                    addr.clone(),
                    version.clone(),
                    put.clone(),
                    got.clone(),
                ]);
                rows.push(json!({
                    "clusterName": cluster, "brokerName": name, "process": process, "brokerId": id,
                    "addr": addr,
                    "version": version, "inTotal": put, "outTotal": got, "error": error,
                }));
            }
        }
    }
    Ok(Report::new(table, json!({"brokers": rows})))
}

pub async fn broker_status(admin: &Admin, addrs: Vec<String>) -> Result<Report, ClientError> {
    let mut table = Table::new(&["Broker Addr", "Key", "Value"]);
    let mut all = serde_json::Map::new();
    let mut resolved = Vec::new();
    for addr in addrs {
        if is_broker_name(&addr) {
            resolved.extend(resolve_broker_name(admin, addr.trim()).await?);
        } else {
            resolved.push(addr);
        }
    }
    for addr in resolved {
        let kv = admin.runtime_info(&addr).await?;
        for (k, v) in &kv.table {
            table.row(vec![addr.clone(), k.clone(), v.clone()]);
        }
        all.insert(addr, json!(kv.table));
    }
    Ok(Report::new(table, serde_json::Value::Object(all)))
}

/// Whether a `-b` value names a broker rather than giving its address (`host:port`).
pub fn is_broker_name(value: &str) -> bool {
    !value.contains(':')
}

/// The shard id of `broker` when it is `name-<decimal id>`.
fn shard_of(broker: &str, name: &str) -> Option<u32> {
    let id = broker.strip_prefix(name)?.strip_prefix('-')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

/// The addresses a broker name given for `-b` stands for: the master (else the lowest id) of the
/// broker registered under that name; otherwise every shard-broker (`NAME-<shard>`) of the broker
/// process configured as NAME, in shard order, each confirmed by its runtime info
/// (`processBrokerName`). Refused, with the names, when none is registered or a candidate does not
/// answer.
pub async fn resolve_broker_name(admin: &Admin, name: &str) -> Result<Vec<String>, ClientError> {
    let info = admin.cluster_info().await?;
    let addr_of = |data: &protocol::body::BrokerData| {
        data.master_addr()
            .map(str::to_owned)
            .or_else(|| data.broker_addrs.values().next().cloned())
    };
    if let Some(addr) = info.broker_addr_table.get(name).and_then(addr_of) {
        return Ok(vec![addr]);
    }
    let mut candidates: Vec<(u32, String, String)> = info
        .broker_addr_table
        .iter()
        .filter_map(|(broker, data)| {
            Some((shard_of(broker, name)?, broker.clone(), addr_of(data)?))
        })
        .collect();
    candidates.sort();
    if candidates.is_empty() {
        return Err(ClientError::Invalid(format!(
            "no broker named {name} is registered, nor shard-brokers {name}-0 ..; -b takes a \
             broker address (host:port) or a broker name"
        )));
    }
    let mut shards = Vec::new();
    let mut others = Vec::new();
    for (_, broker, addr) in candidates {
        let kv = admin.runtime_info(&addr).await.map_err(|e| {
            ClientError::Invalid(format!(
                "cannot tell whether {broker} ({addr}) is a shard-broker of {name}: {e}"
            ))
        })?;
        if kv.table.get("processBrokerName").map(String::as_str) == Some(name) {
            shards.push(addr);
        } else {
            others.push(broker);
        }
    }
    if shards.is_empty() {
        return Err(ClientError::Invalid(format!(
            "no broker named {name} is registered, and {} are not shard-brokers of a process \
             named {name}: name one of them",
            others.join(", ")
        )));
    }
    Ok(shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses_and_shard_ids() {
        assert!(is_broker_name("broker-a"));
        assert!(!is_broker_name("127.0.0.1:10911"));
        assert_eq!(shard_of("broker-a-1", "broker-a"), Some(1));
        assert_eq!(shard_of("broker-a-12", "broker-a"), Some(12));
        assert_eq!(shard_of("broker-ab-0", "broker-a"), None);
        assert_eq!(shard_of("broker-a-", "broker-a"), None);
        assert_eq!(shard_of("broker-a-0-1", "broker-a"), None);
        assert_eq!(shard_of("broker-a", "broker-a"), None);
    }
}

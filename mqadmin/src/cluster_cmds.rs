//! Cluster commands: clusterList (every broker with its totals, the shard-brokers of one process
//! under its name) and brokerStatus (runtime figures; `-b` also takes a broker name, broker_names.rs).

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
        if crate::admin::is_broker_name(&addr) {
            resolved.extend(admin.resolve_broker_name(addr.trim()).await?);
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

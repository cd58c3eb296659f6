//! Broker config commands: getBrokerConfig (GET_BROKER_CONFIG: every key of a broker, or of every
//! broker of a cluster, masters and slaves; keys updated but pending a restart are marked) and
//! updateBrokerConfig (UPDATE_BROKER_CONFIG: one key on a broker or on every master of a cluster,
//! with the broker's word on whether it applied at once or takes effect after a restart). Both carry
//! Java properties text. `-b` takes an address or a broker name (`Admin::resolve_broker_name`).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::{request_code, ExtFields};
use serde_json::json;

use crate::admin::Admin;
use crate::shared_args::{Namesrv, Target};
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum BrokerConfigCommand {
    /// Every config key of a broker with the value in force (GET_BROKER_CONFIG); with -c, of every
    /// master and slave of the cluster.
    #[command(name = "getBrokerConfig")]
    GetBrokerConfig(GetBrokerConfigArgs),
    /// Change one config key of a broker, or of every master of a cluster (UPDATE_BROKER_CONFIG).
    #[command(name = "updateBrokerConfig")]
    UpdateBrokerConfig(UpdateBrokerConfigArgs),
}

#[derive(Debug, Args)]
pub struct GetBrokerConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Args)]
pub struct UpdateBrokerConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    /// Config key
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Config value
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

pub async fn run(command: BrokerConfigCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        BrokerConfigCommand::GetBrokerConfig(args) => {
            get_broker_config(&Admin::new(&args.ns.namesrv, timeout)?, &args.target).await
        }
        BrokerConfigCommand::UpdateBrokerConfig(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let addrs = admin
                .target_addrs(
                    args.target.broker.as_deref(),
                    args.target.cluster.as_deref(),
                )
                .await?;
            update_broker_config(&admin, addrs, args.key.trim(), args.value.trim()).await
        }
    }
}

pub use protocol::properties_text::parse as parse_properties;

/// The lines RocketMQ's tools print for a config: a `============title============` line, then
/// `key<padded to 50>=  value` lines sorted by key, then a blank line.
pub fn config_lines(title: &str, config: &BTreeMap<String, String>) -> Vec<String> {
    let mut lines = vec![format!("============{title}============")];
    lines.extend(config.iter().map(|(k, v)| format!("{k:<50}=  {v}")));
    lines.push(String::new());
    lines
}

/// The field of our broker's GET_BROKER_CONFIG answer naming keys pending a restart.
const PENDING_FIELD: &str = "pendingRestart";

/// A broker's config in force, and the keys updated but pending a restart with their new values.
type ConfigAndPending = (BTreeMap<String, String>, BTreeMap<String, String>);

async fn broker_config(admin: &Admin, addr: &str) -> Result<ConfigAndPending, ClientError> {
    let resp = admin
        .call(
            addr,
            request(request_code::GET_BROKER_CONFIG, ExtFields::new()),
        )
        .await?;
    let text = String::from_utf8_lossy(&resp.body);
    let pending = resp
        .ext_fields
        .get(PENDING_FIELD)
        .map(|text| parse_properties(text).into_iter().collect())
        .unwrap_or_default();
    Ok((parse_properties(&text).into_iter().collect(), pending))
}

/// `config_lines` with each key pending a restart marked with the value it will take.
fn marked_lines(
    title: &str,
    config: &BTreeMap<String, String>,
    pending: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut lines = config_lines(title, config);
    for line in &mut lines {
        let key = line.split_whitespace().next().unwrap_or_default();
        if let Some(next) = pending.get(key).filter(|_| line.contains("=  ")) {
            line.push_str(&format!("  (pending restart: {next})"));
        }
    }
    lines
}

async fn get_broker_config(admin: &Admin, target: &Target) -> Result<Report, ClientError> {
    // (title, address): one broker, or each master then its slaves, as RocketMQ's tool lists them.
    let mut asked: Vec<(String, String)> = Vec::new();
    match (&target.broker, &target.cluster) {
        (Some(name), _) if crate::admin::is_broker_name(name) => {
            for addr in admin.resolve_broker_name(name.trim()).await? {
                asked.push((addr.clone(), addr));
            }
        }
        (Some(addr), _) => asked.push((addr.clone(), addr.clone())),
        (None, Some(cluster)) => {
            let brokers = admin.cluster_brokers(cluster).await?;
            let mut names: Vec<&String> = brokers.iter().map(|(n, _, _)| n).collect();
            names.sort();
            names.dedup();
            for name in names {
                let group = || brokers.iter().filter(move |(n, _, _)| n == name);
                let master = group().find(|(_, id, _)| *id == 0).map(|(_, _, a)| a);
                if let Some(m) = master {
                    asked.push((format!("Master: {m}"), m.clone()));
                }
                for (_, _, slave) in group().filter(|(_, id, _)| *id != 0) {
                    let title = match master {
                        Some(m) => format!("My Master: {m}=====Slave: {slave}"),
                        None => format!("Slave: {slave}"),
                    };
                    asked.push((title, slave.clone()));
                }
            }
        }
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -b brokerAddr or -c clusterName".into(),
            ))
        }
    }
    let mut lines = Vec::new();
    let mut all = serde_json::Map::new();
    for (title, addr) in asked {
        let (config, pending) = broker_config(admin, &addr).await?;
        lines.extend(marked_lines(&title, &config, &pending));
        // Keys pending a restart ride along in the same object, so every key keeps its place.
        let mut entry = json!(config);
        if let Some(map) = entry.as_object_mut().filter(|_| !pending.is_empty()) {
            map.insert(PENDING_FIELD.to_owned(), json!(pending));
        }
        all.insert(addr, entry);
    }
    Ok(Report::lines(lines, serde_json::Value::Object(all)))
}

async fn update_broker_config(
    admin: &Admin,
    addrs: Vec<String>,
    key: &str,
    value: &str,
) -> Result<Report, ClientError> {
    if key.is_empty() || key.contains(['=', ':', '\n']) || value.contains('\n') {
        return Err(ClientError::Invalid(format!(
            "bad config key/value {key:?}={value:?}"
        )));
    }
    let body = format!("{key}={value}\n").into_bytes();
    let mut lines = Vec::new();
    let mut brokers = Vec::new();
    for addr in &addrs {
        let cmd =
            request(request_code::UPDATE_BROKER_CONFIG, ExtFields::new()).with_body(body.clone());
        let resp = admin.call(addr, cmd).await?;
        // Apache's line, then our broker's word on whether the key applied at once or waits for a
        // restart.
        lines.push(format!("update broker config success, {addr}"));
        let remark = resp.remark.filter(|r| !r.is_empty());
        if let Some(r) = &remark {
            lines.push(format!("  {r}"));
        }
        brokers.push(json!({"addr": addr, "outcome": remark}));
    }
    Ok(Report::lines(
        lines,
        json!({"key": key, "value": value, "brokers": brokers}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_text_reads_as_java_writes_it() {
        let pairs =
            parse_properties("# comment\nbrokerName=broker-a\nnamesrvAddr = a:1;b:2\n\n!x\nk: v\n");
        assert_eq!(
            pairs,
            vec![
                ("brokerName".to_owned(), "broker-a".to_owned()),
                ("namesrvAddr".to_owned(), "a:1;b:2".to_owned()),
                ("k".to_owned(), "v".to_owned()),
            ]
        );
        let lines = config_lines("127.0.0.1:10911", &pairs.into_iter().collect());
        assert_eq!(lines[0], "============127.0.0.1:10911============");
        assert_eq!(lines[1], format!("{:<50}=  broker-a", "brokerName"));
        assert_eq!(lines.last().map(String::as_str), Some(""));
        let pending = [("brokerName".to_owned(), "broker-b".to_owned())].into();
        let config = [
            ("brokerName".to_owned(), "broker-a".to_owned()),
            ("brokerId".to_owned(), "0".to_owned()),
        ]
        .into();
        let lines = marked_lines("t", &config, &pending);
        assert_eq!(lines[1], format!("{:<50}=  0", "brokerId"));
        assert_eq!(
            lines[2],
            format!(
                "{:<50}=  broker-a  (pending restart: broker-b)",
                "brokerName"
            )
        );
    }
}

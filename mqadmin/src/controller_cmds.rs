//! Controller commands (controller mode), sent to the controllers of `-a`: getControllerMetaData
//! (CONTROLLER_GET_METADATA_INFO), getSyncStateSet (CONTROLLER_GET_SYNC_STATE_DATA), electMaster
//! (CONTROLLER_ELECT_MASTER with designateElect), getControllerConfig / updateControllerConfig
//! (GET_CONTROLLER_CONFIG / UPDATE_CONTROLLER_CONFIG, Java properties text).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::{expect_success, request};
use client::ClientError;
use protocol::{request_code, ExtFields, RemotingCommand};
use remoting::Client;
use serde_json::{json, Value};

use crate::broker_config_cmds::{config_lines, parse_properties};
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum ControllerCommand {
    /// The controller group: its leader and peers.
    #[command(name = "getControllerMetaData")]
    GetControllerMetaData(ControllerAddr),
    /// Master, epochs and SyncStateSet of broker groups, from the controller leader.
    #[command(name = "getSyncStateSet")]
    GetSyncStateSet(GetSyncStateSetArgs),
    /// Make a replica the master of its broker group (it must be alive and, unless the
    /// controllers allow unclean elections, in the SyncStateSet).
    #[command(name = "electMaster")]
    ElectMaster(ElectMasterArgs),
    /// Every controller's config.
    #[command(name = "getControllerConfig")]
    GetControllerConfig(ControllerAddr),
    /// Change one config key on every controller of `-a`.
    #[command(name = "updateControllerConfig")]
    UpdateControllerConfig(UpdateControllerConfigArgs),
}

#[derive(Debug, Args)]
pub struct ControllerAddr {
    /// Controller address list, e.g. 127.0.0.1:9878;127.0.0.2:9878
    #[arg(short = 'a', long = "controllerAddress")]
    pub controllers: String,
}

#[derive(Debug, Args)]
pub struct GetSyncStateSetArgs {
    #[command(flatten)]
    pub addr: ControllerAddr,
    /// Broker names, comma-separated
    #[arg(short = 'b', long = "brokerName")]
    pub broker_names: String,
}

#[derive(Debug, Args)]
pub struct ElectMasterArgs {
    #[command(flatten)]
    pub addr: ControllerAddr,
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: String,
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: String,
    /// The broker id (controller-assigned) to make master
    #[arg(short = 'i', long = "brokerId")]
    pub broker_id: u64,
}

#[derive(Debug, Args)]
pub struct UpdateControllerConfigArgs {
    #[command(flatten)]
    pub addr: ControllerAddr,
    #[arg(short = 'k', long = "key")]
    pub key: String,
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

fn addr_list(list: &str) -> Result<Vec<String>, ClientError> {
    let addrs: Vec<String> = list
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if addrs.is_empty() {
        return Err(ClientError::Invalid(
            "no controller address given (-a)".into(),
        ));
    }
    Ok(addrs)
}

async fn invoke(
    addr: &str,
    cmd: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, ClientError> {
    let client = Client::connect_str(addr, timeout).await?;
    Ok(client.invoke(cmd, timeout).await?)
}

/// The leader's address, asked of the controllers of `-a` in turn.
async fn leader(list: &str, timeout: Duration) -> Result<String, ClientError> {
    let mut last_error = None;
    for addr in addr_list(list)? {
        let cmd = request(request_code::CONTROLLER_GET_METADATA_INFO, ExtFields::new());
        match invoke(&addr, cmd, timeout).await.and_then(expect_success) {
            Ok(resp) if resp.ext("isLeader") == Some("true") => return Ok(addr),
            Ok(resp) => {
                if let Some(leader) = resp
                    .ext("controllerLeaderAddress")
                    .filter(|a| !a.is_empty())
                {
                    return Ok(leader.to_owned());
                }
                last_error = Some(ClientError::Invalid(format!(
                    "controller {addr} knows no leader"
                )));
            }
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| ClientError::Invalid("no controller answered".into())))
}

fn ext(resp: &RemotingCommand, key: &str) -> String {
    resp.ext(key).unwrap_or_default().to_owned()
}

pub async fn run(command: ControllerCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        ControllerCommand::GetControllerMetaData(args) => {
            let addr = addr_list(&args.controllers)?.remove(0);
            let cmd = request(request_code::CONTROLLER_GET_METADATA_INFO, ExtFields::new());
            let resp = expect_success(invoke(&addr, cmd, timeout).await?)?;
            let peers: Vec<String> = ext(&resp, "peers")
                .split(';')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            let mut lines = vec![
                format!("{:<24}{}", "#ControllerGroup", ext(&resp, "group")),
                format!(
                    "{:<24}{}",
                    "#ControllerLeaderId",
                    ext(&resp, "controllerLeaderId")
                ),
                format!(
                    "{:<24}{}",
                    "#ControllerLeaderAddress",
                    ext(&resp, "controllerLeaderAddress")
                ),
            ];
            lines.extend(peers.iter().map(|p| format!("{:<24}{p}", "#Peer:")));
            Ok(Report::lines(
                lines,
                json!({
                    "group": ext(&resp, "group"),
                    "controllerLeaderId": ext(&resp, "controllerLeaderId"),
                    "controllerLeaderAddress": ext(&resp, "controllerLeaderAddress"),
                    "isLeader": resp.ext("isLeader") == Some("true"),
                    "peers": peers,
                }),
            ))
        }
        ControllerCommand::GetSyncStateSet(args) => {
            let names: Vec<&str> = args
                .broker_names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect();
            let leader = leader(&args.addr.controllers, timeout).await?;
            let cmd = request(
                request_code::CONTROLLER_GET_SYNC_STATE_DATA,
                ExtFields::new(),
            )
            .with_body(serde_json::to_vec(&names).unwrap_or_default());
            let resp = expect_success(invoke(&leader, cmd, timeout).await?)?;
            let body: Value = serde_json::from_slice(&resp.body)
                .map_err(|e| ClientError::Invalid(format!("bad BrokerReplicasInfo body: {e}")))?;
            let mut lines = Vec::new();
            let table = body["replicasInfoTable"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (name, info) in &table {
                let replica = |r: &Value| {
                    format!(
                        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
                        r["brokerName"].as_str().unwrap_or_default(),
                        r["brokerId"],
                        r["brokerAddress"].as_str().unwrap_or_default(),
                        r["alive"]
                    )
                };
                let in_sync = info["inSyncReplicas"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let not_in_sync = info["notInSyncReplicas"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                lines.push(format!("\n#brokerName\t{name}"));
                lines.push(format!("#MasterBrokerId\t{}", info["masterBrokerId"]));
                lines.push(format!(
                    "#MasterAddr\t{}",
                    info["masterAddress"].as_str().unwrap_or("null")
                ));
                lines.push(format!("#MasterEpoch\t{}", info["masterEpoch"]));
                lines.push(format!("#SyncStateSetEpoch\t{}", info["syncStateSetEpoch"]));
                lines.push(format!("#SyncStateSetNums\t{}", in_sync.len()));
                lines.extend(
                    in_sync
                        .iter()
                        .map(|r| format!("\n#InSyncReplica:\t{}", replica(r))),
                );
                lines.extend(
                    not_in_sync
                        .iter()
                        .map(|r| format!("\n#NotInSyncReplica:\t{}", replica(r))),
                );
            }
            for missing in names.iter().filter(|n| !table.contains_key(**n)) {
                lines.push(format!(
                    "\n#brokerName\t{missing}\tnot registered in the controller"
                ));
            }
            Ok(Report::lines(lines, body))
        }
        ControllerCommand::ElectMaster(args) => {
            let leader = leader(&args.addr.controllers, timeout).await?;
            let mut fields = ExtFields::new();
            fields.insert("clusterName", args.cluster.trim());
            fields.insert("brokerName", args.broker_name.trim());
            fields.insert_display("brokerId", args.broker_id);
            fields.insert("designateElect", "true");
            fields.insert_display("invokeTime", now_ms());
            let cmd = request(request_code::CONTROLLER_ELECT_MASTER, fields);
            let resp = expect_success(invoke(&leader, cmd, timeout).await?)?;
            let info = json!({
                "brokerName": args.broker_name.trim(),
                "masterBrokerId": ext(&resp, "masterBrokerId"),
                "masterAddress": ext(&resp, "masterAddress"),
                "masterEpoch": ext(&resp, "masterEpoch"),
                "syncStateSetEpoch": ext(&resp, "syncStateSetEpoch"),
            });
            Ok(Report::lines(
                vec![format!(
                    "elect master success, masterBrokerId={}, masterAddress={}, masterEpoch={}, syncStateSetEpoch={}",
                    ext(&resp, "masterBrokerId"),
                    ext(&resp, "masterAddress"),
                    ext(&resp, "masterEpoch"),
                    ext(&resp, "syncStateSetEpoch")
                )],
                info,
            ))
        }
        ControllerCommand::GetControllerConfig(args) => {
            let mut lines = Vec::new();
            let mut all = serde_json::Map::new();
            for addr in addr_list(&args.controllers)? {
                let cmd = request(request_code::GET_CONTROLLER_CONFIG, ExtFields::new());
                let resp = expect_success(invoke(&addr, cmd, timeout).await?)?;
                let config: BTreeMap<String, String> =
                    parse_properties(&String::from_utf8_lossy(&resp.body))
                        .into_iter()
                        .collect();
                lines.extend(config_lines(&addr, &config));
                all.insert(addr, json!(config));
            }
            Ok(Report::lines(lines, Value::Object(all)))
        }
        ControllerCommand::UpdateControllerConfig(args) => {
            let (key, value) = (args.key.trim(), args.value.trim());
            if key.is_empty() || key.contains(['=', ':', '\n']) || value.contains('\n') {
                return Err(ClientError::Invalid(format!(
                    "bad config key/value {key:?}={value:?}"
                )));
            }
            let addrs = addr_list(&args.addr.controllers)?;
            for addr in &addrs {
                let cmd = request(request_code::UPDATE_CONTROLLER_CONFIG, ExtFields::new())
                    .with_body(format!("{key}={value}\n").into_bytes());
                expect_success(invoke(addr, cmd, timeout).await?)
                    .map_err(|e| ClientError::Invalid(format!("controller {addr}: {e}")))?;
            }
            Ok(Report::lines(
                vec![format!(
                    "update controller config success!{addrs:?}\n{key} : {value}"
                )],
                json!({"key": key, "value": value, "controllers": addrs}),
            ))
        }
    }
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

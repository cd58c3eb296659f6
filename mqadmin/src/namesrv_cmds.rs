//! Name-server commands, sent to every name server of `-n`: wipeWritePerm / addWritePerm (drain a
//! broker: WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER), updateKvConfig / deleteKvConfig
//! (PUT_KV_CONFIG / DELETE_KV_CONFIG), getNamesrvConfig / updateNamesrvConfig
//! (GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG, Java properties text).

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::header::{
    AddWritePermOfBrokerResponseHeader, CommandHeader, KvConfigKeyRequestHeader,
    PutKvConfigRequestHeader, WipeWritePermOfBrokerResponseHeader, WritePermOfBrokerRequestHeader,
};
use protocol::{request_code, ExtFields, RemotingCommand};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::broker_config_cmds::{config_lines, parse_properties};
use crate::shared_args::Namesrv;
use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum NamesrvCommand {
    /// Take write permission from a broker in every name server's routes (drain it): producers
    /// stop sending to it, consumers keep reading.
    #[command(name = "wipeWritePerm")]
    WipeWritePerm(BrokerNameArgs),
    /// Give a broker its write permission back in every name server's routes.
    #[command(name = "addWritePerm")]
    AddWritePerm(BrokerNameArgs),
    /// Create or update a KV config entry on every name server.
    #[command(name = "updateKvConfig")]
    UpdateKvConfig(UpdateKvConfigArgs),
    /// Delete a KV config entry from every name server.
    #[command(name = "deleteKvConfig")]
    DeleteKvConfig(DeleteKvConfigArgs),
    /// Every name server's config.
    #[command(name = "getNamesrvConfig")]
    GetNamesrvConfig(GetNamesrvConfigArgs),
    /// Change one config key on every name server.
    #[command(name = "updateNamesrvConfig")]
    UpdateNamesrvConfig(UpdateNamesrvConfigArgs),
}

#[derive(Debug, Args)]
pub struct BrokerNameArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Broker name (a shard-broker's name, e.g. broker-a-0, for one shard)
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: String,
}

#[derive(Debug, Args)]
pub struct UpdateKvConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 's', long = "namespace")]
    pub namespace: String,
    #[arg(short = 'k', long = "key")]
    pub key: String,
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

#[derive(Debug, Args)]
pub struct DeleteKvConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[arg(short = 's', long = "namespace")]
    pub namespace: String,
    #[arg(short = 'k', long = "key")]
    pub key: String,
}

#[derive(Debug, Args)]
pub struct GetNamesrvConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
}

#[derive(Debug, Args)]
pub struct UpdateNamesrvConfigArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// Config key
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Config value
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

pub async fn run(command: NamesrvCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        NamesrvCommand::WipeWritePerm(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            write_perm(&admin, args.broker_name.trim(), PermChange::Wipe).await
        }
        NamesrvCommand::AddWritePerm(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            write_perm(&admin, args.broker_name.trim(), PermChange::Add).await
        }
        NamesrvCommand::UpdateKvConfig(args) => {
            let header = PutKvConfigRequestHeader {
                namespace: args.namespace.trim().to_owned(),
                key: args.key.trim().to_owned(),
                value: args.value.trim().to_owned(),
            };
            let done = "create or update kv config to namespace success.";
            kv_change(
                &args.ns,
                timeout,
                request_code::PUT_KV_CONFIG,
                &header,
                done,
            )
            .await
        }
        NamesrvCommand::DeleteKvConfig(args) => {
            let header = KvConfigKeyRequestHeader {
                namespace: args.namespace.trim().to_owned(),
                key: args.key.trim().to_owned(),
            };
            let done = "delete kv config from namespace success.";
            kv_change(
                &args.ns,
                timeout,
                request_code::DELETE_KV_CONFIG,
                &header,
                done,
            )
            .await
        }
        NamesrvCommand::GetNamesrvConfig(args) => {
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let cmd = request(request_code::GET_NAMESRV_CONFIG, ExtFields::new());
            let mut lines = Vec::new();
            let mut all = serde_json::Map::new();
            for (addr, resp) in every_namesrv(&admin, &cmd).await? {
                let text = String::from_utf8_lossy(&resp.body);
                let config = parse_properties(&text).into_iter().collect();
                let mut block = config_lines(&addr.to_string(), &config);
                // RocketMQ's tool prints no blank line between name servers.
                block.pop();
                lines.extend(block);
                all.insert(addr.to_string(), json!(config));
            }
            Ok(Report::lines(lines, Value::Object(all)))
        }
        NamesrvCommand::UpdateNamesrvConfig(args) => {
            let (key, value) = (args.key.trim(), args.value.trim());
            if key.is_empty() || key.contains(['=', ':', '\n']) || value.contains('\n') {
                return Err(ClientError::Invalid(format!(
                    "bad config key/value {key:?}={value:?}"
                )));
            }
            let admin = Admin::new(&args.ns.namesrv, timeout)?;
            let cmd = request(request_code::UPDATE_NAMESRV_CONFIG, ExtFields::new())
                .with_body(format!("{key}={value}\n").into_bytes());
            let addrs: Vec<String> = every_namesrv(&admin, &cmd)
                .await?
                .into_iter()
                .map(|(a, _)| a.to_string())
                .collect();
            Ok(Report::lines(
                vec![
                    format!("update name server config success![{}]", addrs.join(", ")),
                    format!("{key} : {value}"),
                ],
                json!({"key": key, "value": value, "namesrvs": addrs}),
            ))
        }
    }
}

/// A KV config change (`code` with `header`) on every name server; `done` is the line printed,
/// the header's fields the JSON.
async fn kv_change(
    ns: &Namesrv,
    timeout: Duration,
    code: i32,
    header: &impl CommandHeader,
    done: &str,
) -> Result<Report, ClientError> {
    let fields = header.to_ext_fields();
    let json = Value::Object(
        fields
            .iter()
            .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
            .collect(),
    );
    every_namesrv(&Admin::new(&ns.namesrv, timeout)?, &request(code, fields)).await?;
    Ok(Report::lines(vec![done.to_owned()], json))
}

/// Sends `cmd` to every name server; the first failure is the command's error.
async fn every_namesrv(
    admin: &Admin,
    cmd: &RemotingCommand,
) -> Result<Vec<(SocketAddr, RemotingCommand)>, ClientError> {
    let mut out = Vec::new();
    for (addr, result) in admin.invoke_every_namesrv(cmd).await {
        match result {
            Ok(resp) => out.push((addr, resp)),
            Err(e) => return Err(ClientError::Invalid(format!("name server {addr}: {e}"))),
        }
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum PermChange {
    Wipe,
    Add,
}

/// wipeWritePerm / addWritePerm: one line per name server with the number of topics changed there;
/// a name server that fails is reported on its line (the command fails only when all of them do).
async fn write_perm(
    admin: &Admin,
    broker_name: &str,
    change: PermChange,
) -> Result<Report, ClientError> {
    let header = WritePermOfBrokerRequestHeader {
        broker_name: broker_name.to_owned(),
    };
    let (code, verb) = match change {
        PermChange::Wipe => (request_code::WIPE_WRITE_PERM_OF_BROKER, "wipe"),
        PermChange::Add => (request_code::ADD_WRITE_PERM_OF_BROKER, "add"),
    };
    let cmd = request(code, header.to_ext_fields());
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    let mut first_error = None;
    for (addr, result) in admin.invoke_every_namesrv(&cmd).await {
        let count = result.and_then(|resp| {
            // For a process of shard-brokers the name server names the ones it changed.
            let shards = resp
                .remark
                .clone()
                .filter(|r| r.starts_with("shard-brokers: "));
            let count = match change {
                PermChange::Wipe => {
                    WipeWritePermOfBrokerResponseHeader::from_ext_fields(&resp.ext_fields)?
                        .wipe_topic_count
                }
                PermChange::Add => {
                    AddWritePermOfBrokerResponseHeader::from_ext_fields(&resp.ext_fields)?
                        .add_topic_count
                }
            };
            Ok((count, shards))
        });
        match count {
            Ok((n, shards)) => {
                let suffix = shards
                    .as_deref()
                    .map_or(String::new(), |s| format!(" ({s})"));
                lines.push(format!(
                    "{verb} write perm of broker[{broker_name}] in name server[{addr}] OK, {n}{suffix}"
                ));
                let names: Vec<&str> = shards
                    .as_deref()
                    .and_then(|s| s.strip_prefix("shard-brokers: "))
                    .map(|s| s.split(',').collect())
                    .unwrap_or_default();
                rows.push(
                    json!({"namesrv": addr.to_string(), "topicCount": n, "shardBrokers": names}),
                );
            }
            Err(e) => {
                lines.push(format!(
                    "{verb} write perm of broker[{broker_name}] in name server[{addr}] Failed: {e}"
                ));
                rows.push(json!({"namesrv": addr.to_string(), "error": e.to_string()}));
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error.filter(|_| rows.iter().all(|r| r.get("error").is_some())) {
        return Err(e);
    }
    Ok(Report::lines(
        lines,
        json!({"brokerName": broker_name, "namesrvs": rows}),
    ))
}

//! Controller mode: this broker's id in its group, given once by the controllers
//! (CONTROLLER_GET_NEXT_BROKER_ID, then CONTROLLER_APPLY_BROKER_ID with a check code of its own)
//! and kept in `{storePathRootDir}/config/brokerIdentity.json`, so a restart is the same replica.

use std::path::PathBuf;

use protocol::{request_code, response_code, RemotingCommand};
use serde::{Deserialize, Serialize};

use crate::shard::Shard;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    cluster_name: String,
    broker_name: String,
    broker_id: u64,
    register_check_code: String,
}

fn path(shard: &Shard) -> PathBuf {
    shard
        .cfg
        .store_path_root_dir
        .join("config")
        .join("brokerIdentity.json")
}

/// The id kept from an earlier start, when it was given for this cluster and group.
fn load(shard: &Shard) -> Result<Option<u64>, String> {
    let path = path(shard);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let id: Identity = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a broker identity: {e}", path.display()))?;
    if id.cluster_name != shard.cfg.broker_cluster_name || id.broker_name != shard.cfg.broker_name {
        return Err(format!(
            "{} belongs to {}/{}, not {}/{}: remove it to join this group as a new replica",
            path.display(),
            id.cluster_name,
            id.broker_name,
            shard.cfg.broker_cluster_name,
            shard.cfg.broker_name
        ));
    }
    Ok(Some(id.broker_id))
}

/// This broker's id: the kept one, else a new one the controllers accept (then kept).
pub async fn obtain(shard: &Shard) -> Result<u64, String> {
    if let Some(id) = load(shard)? {
        return Ok(id);
    }
    let Some(replicas) = crate::replication::replica_state::replicas(shard) else {
        return Err("not the control shard".into());
    };
    let cfg = &shard.cfg;
    let client = &replicas.client;
    let resp = client
        .invoke_leader(|| {
            RemotingCommand::request(request_code::CONTROLLER_GET_NEXT_BROKER_ID)
                .with_ext("clusterName", &cfg.broker_cluster_name)
                .with_ext("brokerName", &cfg.broker_name)
        })
        .await?;
    let next = resp
        .ext("nextBrokerId")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|_| resp.code == response_code::SUCCESS)
        .ok_or_else(|| {
            format!(
                "CONTROLLER_GET_NEXT_BROKER_ID answered code {} {}",
                resp.code,
                resp.remark.clone().unwrap_or_default()
            )
        })?;
    let check_code = format!("{};{}", cfg.broker_addr(), crate::state::topics::now_ms());
    let resp = client
        .invoke_leader(|| {
            RemotingCommand::request(request_code::CONTROLLER_APPLY_BROKER_ID)
                .with_ext("clusterName", &cfg.broker_cluster_name)
                .with_ext("brokerName", &cfg.broker_name)
                .with_ext("appliedBrokerId", &next.to_string())
                .with_ext("registerCheckCode", &check_code)
        })
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(format!(
            "CONTROLLER_APPLY_BROKER_ID {next} answered code {} {}",
            resp.code,
            resp.remark.unwrap_or_default()
        ));
    }
    let identity = Identity {
        cluster_name: cfg.broker_cluster_name.clone(),
        broker_name: cfg.broker_name.clone(),
        broker_id: next,
        register_check_code: check_code,
    };
    let json = serde_json::to_vec_pretty(&identity).map_err(|e| e.to_string())?;
    let path = path(shard);
    crate::state::persist::write_atomic(&path, &json)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(next)
}

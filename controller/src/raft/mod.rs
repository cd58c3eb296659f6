//! Consensus among the controllers: openraft's types, storage, network and the node that uses them.

pub mod network;
pub mod peer_client;
pub mod store;
pub mod types;

use std::collections::BTreeMap;
use std::sync::Arc;

use openraft::{BasicNode, SnapshotPolicy};

use crate::config::ControllerConfig;
use store::Store;
use types::Raft;

/// Election timeout bounds (ms): a dead raft leader is replaced within about a second.
const ELECTION_TIMEOUT_MIN_MS: u64 = 500;
const ELECTION_TIMEOUT_MAX_MS: u64 = 1000;
const HEARTBEAT_INTERVAL_MS: u64 = 150;

/// Starts this controller's raft node on the current tokio runtime and, when its store is empty,
/// proposes the membership of `controllerDLegerPeers` (every peer does the same, so whichever
/// starts first bootstraps the group and the others join it).
pub async fn start(config: &ControllerConfig) -> Result<(Raft, Store), String> {
    let raft_config = openraft::Config {
        cluster_name: config.group.clone(),
        heartbeat_interval: HEARTBEAT_INTERVAL_MS,
        election_timeout_min: ELECTION_TIMEOUT_MIN_MS,
        election_timeout_max: ELECTION_TIMEOUT_MAX_MS,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(config.raft_snapshot_logs),
        max_in_snapshot_log_to_keep: config.raft_snapshot_logs,
        ..Default::default()
    }
    .validate()
    .map_err(|e| e.to_string())?;
    let store = Store::open(&config.store_path)?;
    #[allow(deprecated)]
    let (log_store, state_machine) = openraft::storage::Adaptor::new(store.clone());
    let raft = Raft::new(
        config.self_id,
        Arc::new(raft_config),
        network::Network,
        log_store,
        state_machine,
    )
    .await
    .map_err(|e| e.to_string())?;
    if !raft.is_initialized().await.map_err(|e| e.to_string())? {
        let members: BTreeMap<u64, BasicNode> = config
            .peers
            .iter()
            .map(|p| (p.id, BasicNode::new(p.addr.to_string())))
            .collect();
        // Refused when a peer's vote or log already arrived: the group exists, nothing to do.
        if let Err(e) = raft.initialize(members).await {
            tracing::info!("raft group not initialized by this controller: {e}");
        }
    }
    Ok((raft, store))
}

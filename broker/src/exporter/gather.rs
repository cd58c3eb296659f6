//! Collects one scrape's figures on shard 0: every shard's counters and store stats over the mesh,
//! the hot-path slots (`local`), consumer backlog per topic and group, and the store's disk usage.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::feature::metrics::figures::{disk_figures, local_figures, DiskFigures, LocalFigures};
use crate::shard::mesh::join_all;
use crate::shard::stats::ShardStats;
use crate::shard::Shard;

/// Most (topic, group, queue) offsets measured per scrape, so a huge table cannot stall shard 0.
const MAX_BACKLOG_QUEUES: usize = 20_000;

/// Everything one scrape reports.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub broker_name: String,
    pub cluster: String,
    pub shards: Vec<ShardStats>,
    pub local: Vec<LocalFigures>,
    /// (topic, group) -> messages not yet consumed, summed over queues.
    pub backlog: BTreeMap<(String, String), i64>,
    pub disk: Option<DiskFigures>,
    /// This broker is a slave (HA figures are then the slave side's).
    pub is_slave: bool,
    /// Controller mode: the group as the controllers last said.
    pub controller: Option<crate::replication::replica_state::ReplicaFigures>,
}

/// The max offset of a queue, asked of its owner shard.
async fn max_offset(shard: &Rc<Shard>, owner: usize, topic: &str, queue_id: i32) -> Option<i64> {
    shard
        .on(owner)
        .queue_bounds(topic.to_owned(), queue_id)
        .await
        .ok()
        .map(|(_, max)| max)
}

pub async fn gather(shard: &Rc<Shard>) -> Snapshot {
    let mut snap = Snapshot {
        broker_name: shard.cfg.broker_name.clone(),
        cluster: shard.cfg.broker_cluster_name.clone(),
        local: local_figures(),
        disk: disk_figures(&shard.cfg.store_path_root_dir),
        is_slave: shard.role() == crate::config::BrokerRole::Slave,
        controller: crate::replication::replica_state::replicas(shard)
            .filter(|_| shard.cfg.controller.enabled)
            .map(|r| r.figures()),
        ..Snapshot::default()
    };
    for s in join_all(shard.every_shard().map(|s| s.stats()))
        .await
        .into_iter()
        .flatten()
    {
        snap.shards.push(s);
    }
    for q in committed_offsets(shard).await {
        let Some(max) = max_offset(shard, q.owner, &q.topic, q.queue_id).await else {
            continue;
        };
        let lag = max.saturating_sub(q.committed).max(0);
        let entry = snap.backlog.entry((q.topic, q.group)).or_insert(0);
        *entry = entry.saturating_add(lag);
    }
    snap
}

/// One consumer group's committed offset of one queue, with the shard owning the queue.
pub struct Committed {
    pub owner: usize,
    pub topic: String,
    pub group: String,
    pub queue_id: i32,
    /// Never below 0.
    pub committed: i64,
}

/// Every shard's committed offsets (each shard keeps those of the queues it owns), at most
/// `MAX_BACKLOG_QUEUES` of them, so a scrape stays bounded.
pub async fn committed_offsets(shard: &Rc<Shard>) -> Vec<Committed> {
    let mut out = Vec::new();
    let offsets = join_all(shard.every_shard().map(|s| s.consumer_offsets())).await;
    for (owner, answer) in offsets.into_iter().enumerate() {
        let Ok(entries) = answer else {
            continue;
        };
        for (key, queue_id, committed) in entries {
            if out.len() >= MAX_BACKLOG_QUEUES {
                return out;
            }
            let Some((topic, group)) = protocol::body::split_offset_table_key(&key) else {
                continue;
            };
            out.push(Committed {
                owner,
                topic: topic.to_owned(),
                group: group.to_owned(),
                queue_id,
                committed: committed.max(0),
            });
        }
    }
    out
}

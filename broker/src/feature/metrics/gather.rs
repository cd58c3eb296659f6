//! Collects one scrape's figures on shard 0: every shard's counters and store stats over the mesh,
//! the hot-path slots (`local`), consumer backlog per topic and group, and the store's disk usage.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;


use crate::shard::mesh::join_all;
use crate::shard::stats::ShardStats;
use crate::shard::Shard;

/// Most (topic, group, queue) offsets measured per scrape, so a huge table cannot stall shard 0.
const MAX_BACKLOG_QUEUES: usize = 20_000;

/// Hot-path figures of one shard, copied out of its slot.
#[derive(Debug, Clone, Default)]
pub struct LocalFigures {
    pub shard: usize,
    pub put_latency_buckets: Vec<u64>,
    pub put_latency_sum_us: u64,
    pub put_requests: u64,
    pub pull_parked: u64,
    pub connections_open: u64,
    pub connections_accepted: u64,
}

/// Filesystem figures of the store root (statvfs).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskFigures {
    pub total_bytes: u64,
    pub free_bytes: u64,
}

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

pub fn local_figures() -> Vec<LocalFigures> {
    super::local::all_shards()
        .iter()
        .map(|m| LocalFigures {
            shard: m.shard,
            put_latency_buckets: m
                .put_latency_buckets
                .iter()
                .map(|b| b.load(Relaxed))
                .collect(),
            put_latency_sum_us: m.put_latency_sum_us.load(Relaxed),
            put_requests: m.put_requests.load(Relaxed),
            pull_parked: m.pull_parked.load(Relaxed),
            connections_open: m.connections_open.load(Relaxed),
            connections_accepted: m.connections_accepted.load(Relaxed),
        })
        .collect()
}

pub fn disk_figures(path: &std::path::Path) -> Option<DiskFigures> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills a zeroed, locally owned struct from a NUL-terminated path; rc is checked.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c_path.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let frsize = st.f_frsize as u64;
    Some(DiskFigures {
        total_bytes: (st.f_blocks as u64).saturating_mul(frsize),
        free_bytes: (st.f_bavail as u64).saturating_mul(frsize),
    })
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
    // Each shard keeps the committed offsets of the queues it owns.
    let mut measured = 0usize;
    let offsets = join_all(shard.every_shard().map(|s| s.consumer_offsets())).await;
    for (owner, answer) in offsets.into_iter().enumerate() {
        let Ok(entries) = answer else {
            continue;
        };
        for (key, queue_id, committed) in entries {
            if measured >= MAX_BACKLOG_QUEUES {
                break;
            }
            let Some((topic, group)) = protocol::body::split_offset_table_key(&key) else {
                continue;
            };
            measured += 1;
            let Some(max) = max_offset(shard, owner, topic, queue_id).await else {
                continue;
            };
            let lag = max.saturating_sub(committed.max(0)).max(0);
            let entry = snap
                .backlog
                .entry((topic.to_owned(), group.to_owned()))
                .or_insert(0);
            *entry = entry.saturating_add(lag);
        }
    }
    snap
}

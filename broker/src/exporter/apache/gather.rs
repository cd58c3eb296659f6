//! Collects one scrape of Apache's metric names on shard 0: every shard's tables
//! (`feature::metrics::apache_local`) merged, every shard's store figures, consumer lag per (topic,
//! group) with the store time of the oldest unconsumed message, clients by language and version,
//! and the table sizes.

use std::collections::BTreeMap;
use std::rc::Rc;

use protocol::body::ConsumeType;

use super::labels;
use crate::feature::metrics::apache_local::{Histogram, InFigures, OutFigures};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// The lag of one (topic, group).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    /// Messages stored and not yet consumed (max offset - committed offset, over queues).
    pub messages: i64,
    /// Store time (ms) of the oldest message not yet consumed; 0 when none.
    pub oldest_unconsumed_ms: i64,
}

/// Everything one scrape reports.
#[derive(Debug, Clone, Default)]
pub struct ApacheSnapshot {
    pub cluster: String,
    pub node_id: String,
    /// Units appended to names as OpenTelemetry 1.29's exporter does (`metricsPromUnitSuffix`).
    pub unit_suffix: bool,
    pub now_ms: i64,
    pub broker_permission: u32,
    pub topics: usize,
    pub consumer_groups: usize,
    /// (topic, message type index) -> figures.
    pub messages_in: BTreeMap<(String, usize), InFigures>,
    /// (topic, group) -> figures.
    pub messages_out: BTreeMap<(String, String), OutFigures>,
    /// (group, topic) -> messages.
    pub sent_to_dlq: BTreeMap<(String, String), u64>,
    /// (request code, response code, parked as a long poll) -> latency (ms).
    pub rpc_latency: BTreeMap<(i32, i32, bool), Histogram>,
    /// (topic, group) -> lag.
    pub lag: BTreeMap<(String, String), Lag>,
    /// (language, version) -> producer clients.
    pub producers: BTreeMap<(String, String), u64>,
    /// (group, language, version, consume mode) -> consumer clients.
    pub consumers: BTreeMap<(String, String, String, &'static str), u64>,
    /// Bytes written to the CommitLog and not yet flushed, over shards.
    pub flush_behind_bytes: i64,
    /// Store time (ms) of the oldest record any shard holds; 0 when none.
    pub earliest_store_ms: i64,
    /// Used bytes of the filesystem holding the store.
    pub storage_used_bytes: Option<u64>,
}

/// Apache's `consume_mode` label (`ConsumeType.getTypeCN()`, lower-cased).
fn consume_mode(t: &ConsumeType) -> &'static str {
    match t {
        ConsumeType::ConsumeActively => "pull",
        ConsumeType::ConsumePassively => "push",
        ConsumeType::ConsumePop => "pop",
        ConsumeType::Unknown(_) => "unknown",
    }
}

/// A client's language label: lower-cased, JAVA when its heartbeat did not say.
fn language(l: &str) -> String {
    if l.is_empty() {
        "java".to_owned()
    } else {
        l.to_ascii_lowercase()
    }
}

pub async fn gather(shard: &Rc<Shard>) -> ApacheSnapshot {
    let cfg = &shard.cfg;
    let mut snap = ApacheSnapshot {
        cluster: cfg.broker_cluster_name.clone(),
        node_id: cfg.broker_name.clone(),
        unit_suffix: cfg.prom_exporter.unit_suffix,
        now_ms: crate::state::topics::now_ms(),
        broker_permission: crate::config::live::broker_permission(cfg),
        topics: shard.topics.borrow().topics.len(),
        consumer_groups: shard.groups.borrow().subscription_group_table.len(),
        storage_used_bytes: crate::feature::metrics::figures::disk_figures(
            &cfg.store_path_root_dir,
        )
        .map(|d| d.total_bytes.saturating_sub(d.free_bytes)),
        ..ApacheSnapshot::default()
    };
    for figures in join_all(shard.every_shard().map(|s| s.apache_metrics()))
        .await
        .into_iter()
        .flatten()
    {
        for (key, f) in figures.messages_in {
            let mine = snap.messages_in.entry(key).or_default();
            mine.messages = mine.messages.wrapping_add(f.messages);
            mine.bytes = mine.bytes.wrapping_add(f.bytes);
            mine.size.merge(&f.size);
        }
        for (key, f) in figures.messages_out {
            let mine = snap.messages_out.entry(key).or_default();
            mine.messages = mine.messages.wrapping_add(f.messages);
            mine.bytes = mine.bytes.wrapping_add(f.bytes);
        }
        for (key, n) in figures.sent_to_dlq {
            let mine = snap.sent_to_dlq.entry(key).or_default();
            *mine = mine.wrapping_add(n);
        }
        for (key, h) in figures.rpc_latency {
            snap.rpc_latency.entry(key).or_default().merge(&h);
        }
    }
    let stats: Vec<_> = join_all(shard.every_shard().map(|s| s.stats()))
        .await
        .into_iter()
        .flatten()
        .collect();
    snap.flush_behind_bytes = stats
        .iter()
        .map(|s| (s.commit_log_max_offset - s.commit_log_flushed_offset).max(0))
        .sum();
    snap.earliest_store_ms =
        crate::processor::runtime_fields::earliest_store_time(shard, &stats).await;
    if let Some(ctl) = &shard.control {
        let clients = ctl.clients.borrow();
        for group in clients.producer_groups() {
            for c in clients.producer_clients(&group) {
                let key = (language(&c.language), labels::version_desc(c.version));
                *snap.producers.entry(key).or_default() += 1;
            }
        }
        for group in clients.consumer_groups() {
            let Some((info, members)) = clients.consumer_group(&group) else {
                continue;
            };
            let mode = consume_mode(&info.consume_type);
            for c in members {
                let key = (
                    group.clone(),
                    language(&c.language),
                    labels::version_desc(c.version),
                    mode,
                );
                *snap.consumers.entry(key).or_default() += 1;
            }
        }
    }
    gather_lag(shard, &mut snap).await;
    snap
}

/// Lag per (topic, group) from every shard's committed offsets and each queue's owner.
async fn gather_lag(shard: &Rc<Shard>, snap: &mut ApacheSnapshot) {
    for q in crate::exporter::gather::committed_offsets(shard).await {
        let Ok((max, oldest)) = shard
            .on(q.owner)
            .queue_lag(q.topic.clone(), q.queue_id, q.committed)
            .await
        else {
            continue;
        };
        let lag = snap.lag.entry((q.topic, q.group)).or_default();
        lag.messages = lag
            .messages
            .saturating_add(max.saturating_sub(q.committed).max(0));
        if oldest > 0 && (lag.oldest_unconsumed_ms == 0 || oldest < lag.oldest_unconsumed_ms) {
            lag.oldest_unconsumed_ms = oldest;
        }
    }
}

//! Per-shard counters the broker keeps (messages in and out), and the snapshot sent across shards for
//! GET_BROKER_RUNTIME_INFO.

use std::cell::Cell;

/// Live counters of one shard.
#[derive(Debug, Default)]
pub struct ShardCounters {
    pub msgs_put: Cell<u64>,
    pub bytes_put: Cell<u64>,
    pub msgs_got: Cell<u64>,
    pub bytes_got: Cell<u64>,
    pub send_errors: Cell<u64>,
}

fn add(c: &Cell<u64>, v: u64) {
    c.set(c.get().wrapping_add(v));
}

impl ShardCounters {
    pub fn put(&self, msgs: u64, bytes: u64) {
        add(&self.msgs_put, msgs);
        add(&self.bytes_put, bytes);
    }

    pub fn got(&self, msgs: u64, bytes: u64) {
        add(&self.msgs_got, msgs);
        add(&self.bytes_got, bytes);
    }

    pub fn send_error(&self) {
        add(&self.send_errors, 1);
    }
}

/// A snapshot of one shard, sendable to shard 0.
#[derive(Debug, Clone, Default)]
pub struct ShardStats {
    pub shard: usize,
    pub msgs_put: u64,
    pub bytes_put: u64,
    pub msgs_got: u64,
    pub bytes_got: u64,
    pub send_errors: u64,
    pub commit_log_min_offset: i64,
    pub commit_log_max_offset: i64,
    pub commit_log_flushed_offset: i64,
    pub queues: usize,
    pub store: storage::StatsSnapshot,
    /// Why the shard's store refuses writes (failed write or sync, full disk), if it does.
    pub read_only: Option<String>,
    /// Filled in by replication, which owns these figures.
    pub ha: HaStats,
    /// Requests this shard sent to other shards so far, by kind (`shard::requests`).
    pub requests_sent: Vec<(&'static str, u64)>,
}

/// HA figures of one shard for GET_BROKER_RUNTIME_INFO.
#[derive(Debug, Clone, Default)]
pub struct HaStats {
    pub slaves: usize,
    pub slave_ack_offset: i64,
    pub behind_bytes: u64,
    pub behind_ms: u64,
    pub slave_connected: bool,
    pub slave_last_append_ms: i64,
    pub slave_rejected_frames: u64,
}

//! Counters of one shard's store (puts, bytes, syncs, group-commit batch sizes), read by the broker.

use std::cell::Cell;

/// Live counters; single-threaded (one shard), so plain cells.
#[derive(Debug, Default)]
pub(crate) struct StoreStats {
    pub puts: Cell<u64>,
    pub put_bytes: Cell<u64>,
    pub busy_rejects: Cell<u64>,
    pub flush_timeouts: Cell<u64>,
    pub fsyncs: Cell<u64>,
    pub fsync_nanos_total: Cell<u64>,
    pub fsync_nanos_max: Cell<u64>,
    pub flushed_bytes: Cell<u64>,
    /// Records covered by all syncs (for the mean group-commit batch).
    pub group_commit_records: Cell<u64>,
    pub group_commit_max: Cell<u64>,
    pub gets: Cell<u64>,
    pub disk_reads: Cell<u64>,
    /// CommitLog segments deleted by retention, by rule (`retention_audit::DeleteRule`).
    pub retention_expired: Cell<u64>,
    pub retention_disk_pressure: Cell<u64>,
    pub retention_forced: Cell<u64>,
    /// Messages deleted before a consumer group with a committed offset on their queue consumed them.
    pub retention_unconsumed: Cell<u64>,
    /// Messages dropped from ConsumeQueues by tail cuts (a returning master's old-epoch writes).
    pub tail_cut_messages: Cell<u64>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub puts: u64,
    pub put_bytes: u64,
    pub busy_rejects: u64,
    pub flush_timeouts: u64,
    /// Number of CommitLog write+fdatasync rounds.
    pub fsyncs: u64,
    pub fsync_nanos_total: u64,
    pub fsync_nanos_max: u64,
    pub flushed_bytes: u64,
    /// Records covered by all flush rounds; divided by `fsyncs` gives the mean group-commit batch.
    pub group_commit_records: u64,
    pub group_commit_max: u64,
    pub gets: u64,
    /// Reads that went to disk (DMA) instead of memory.
    pub disk_reads: u64,
    pub retention_expired: u64,
    pub retention_disk_pressure: u64,
    pub retention_forced: u64,
    pub retention_unconsumed: u64,
    pub tail_cut_messages: u64,
}

fn add(c: &Cell<u64>, v: u64) {
    c.set(c.get().wrapping_add(v));
}

impl StoreStats {
    pub fn inc(c: &Cell<u64>, v: u64) {
        add(c, v)
    }

    pub fn record_flush(&self, nanos: u64, records: u64, bytes: u64) {
        add(&self.fsyncs, 1);
        add(&self.fsync_nanos_total, nanos);
        self.fsync_nanos_max
            .set(self.fsync_nanos_max.get().max(nanos));
        add(&self.group_commit_records, records);
        self.group_commit_max
            .set(self.group_commit_max.get().max(records));
        add(&self.flushed_bytes, bytes);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            puts: self.puts.get(),
            put_bytes: self.put_bytes.get(),
            busy_rejects: self.busy_rejects.get(),
            flush_timeouts: self.flush_timeouts.get(),
            fsyncs: self.fsyncs.get(),
            fsync_nanos_total: self.fsync_nanos_total.get(),
            fsync_nanos_max: self.fsync_nanos_max.get(),
            flushed_bytes: self.flushed_bytes.get(),
            group_commit_records: self.group_commit_records.get(),
            group_commit_max: self.group_commit_max.get(),
            gets: self.gets.get(),
            disk_reads: self.disk_reads.get(),
            retention_expired: self.retention_expired.get(),
            retention_disk_pressure: self.retention_disk_pressure.get(),
            retention_forced: self.retention_forced.get(),
            retention_unconsumed: self.retention_unconsumed.get(),
            tail_cut_messages: self.tail_cut_messages.get(),
        }
    }
}

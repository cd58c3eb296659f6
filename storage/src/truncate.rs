//! Cutting the CommitLog's tail while the store is open (controller mode): a returning old master,
//! now a slave, drops what it wrote in its old epoch that the new master never got.
//!
//! Order, so that a crash at any point leaves either the old log or the cut one: (1) appends are held
//! off and everything written is made durable (CommitLog, ConsumeQueues, index, checkpoint); (2) the
//! checkpoint is lowered to the cut point (recovery then scans from there); (3) the CommitLog bytes
//! past the cut are zeroed and synced, later segments deleted; (4) ConsumeQueue units past the cut are
//! dropped on disk and in memory, and compacted logs that covered the cut are rewound
//! (`compaction::rewind`); (5) the checkpoint is written again and the epochs past the cut are
//! dropped. A failure after (2) leaves the store refusing every append (local and replicated) until a
//! restart, whose recovery finds the old log or the cut one. Index entries past the cut stay in their files: every key lookup re-reads the record at
//! the offset and checks its topic, key and time (`query_by_key`), so a stale entry finds nothing or
//! the new record that now holds the offset.

use std::time::Duration;

use protocol::message::record::{decode_view, peek_head, RecordHead, MIN_BLANK_LEN};

use crate::commitlog::BLOCK;
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::error::StoreError;
use crate::offset::{local_of, physical, shard_of};
use crate::store::MessageStore;

/// Longest wait for the flusher to make the log durable before a cut.
const DURABLE_WAIT: Duration = Duration::from_secs(30);

/// Clears the store's `truncating` flag however `truncate_tail` ends.
struct Truncating<'a>(&'a std::cell::Cell<bool>);

impl Truncating<'_> {
    /// Leaves the flag set for good: appends stay refused until a restart.
    fn keep_set(self) {
        std::mem::forget(self);
    }
}

impl Drop for Truncating<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl MessageStore {
    /// Cuts the CommitLog back to the physical offset `offset` (a record boundary of this shard's
    /// log): everything at and after it is gone, on disk too, and the next append (local or
    /// replicated) lands at `offset`. ConsumeQueues lose their units past it, checkpoints and the
    /// durable marks move back, caches forget the cut bytes, epochs starting at or after it are
    /// dropped. Appends are refused while it runs. Meant for a slave that is not replicating.
    ///
    /// The cut runs as a task of its own: a caller that goes away (an HA connection ended by a role
    /// change while it waited for the flush) must not stop it between the CommitLog's cut and the
    /// ConsumeQueues', which left queue units pointing at cut records (chaos seed 1127501982,
    /// 2026-12-07: the replicated records for those queue offsets were then refused, and an
    /// acknowledged message was missing from the new master's queue).
    pub async fn truncate_tail(&self, offset: i64) -> Result<(), StoreError> {
        let store = self.clone();
        glommio::spawn_local(async move { store.cut_tail(offset).await })
            .detach()
            .await
            .unwrap_or_else(|| {
                Err(StoreError::Config(
                    "the tail cut's task ended without an answer".to_owned(),
                ))
            })
    }

    async fn cut_tail(&self, offset: i64) -> Result<(), StoreError> {
        let inner = &*self.inner;
        if offset < 0 || shard_of(offset) != inner.cfg.shard_id {
            return Err(StoreError::WrongShard(offset));
        }
        let cut = local_of(offset);
        let end = inner.log.write_pos();
        if cut > end || cut < inner.log.min_offset() {
            return Err(StoreError::Config(format!(
                "cannot truncate shard {} to {cut}: its log holds [{}, {end})",
                inner.cfg.shard_id,
                inner.log.min_offset()
            )));
        }
        if inner.shutting_down.get() {
            return Err(StoreError::ReadOnly("store is shutting down".to_owned()));
        }
        if let Some(why) = inner.sync_failure.borrow().clone() {
            return Err(StoreError::ReadOnly(why));
        }
        if inner.truncating.replace(true) {
            return Err(StoreError::Config(
                "a truncation of this shard already runs".to_owned(),
            ));
        }
        let flag = Truncating(&inner.truncating);
        if let Some(e) = crate::fault::injected_error("truncate_begin", inner.cfg.shard_id) {
            return Err(StoreError::io("commitlog", e));
        }
        if cut == end {
            return self.truncate_epochs_from(offset);
        }
        if !self.is_record_boundary(cut).await? {
            return Err(StoreError::Config(format!(
                "cannot truncate shard {} to {cut}: no record starts there",
                inner.cfg.shard_id
            )));
        }
        let _permit = inner
            .maintenance
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("maintenance", e))?;
        // (1) Disk and memory agree once everything is durable.
        if inner.log.flushed.get() < end {
            self.request_flush();
            let durable = self.wait_durable(physical(inner.cfg.shard_id, end));
            let timer = async {
                glommio::timer::sleep(DURABLE_WAIT).await;
                Err(StoreError::io(
                    "commitlog",
                    format!("not durable within {DURABLE_WAIT:?}; truncation not started"),
                ))
            };
            futures_lite::future::or(durable, timer).await?;
        }
        self.flush_maintenance_locked().await?;
        // (2) Recovery after a crash from here on scans from the cut point.
        let dispatched = inner.dispatch_durable.get().min(cut);
        self.write_checkpoint(cut, dispatched).await?;
        if let Err(e) = self.cut_from(offset, dispatched).await {
            // Memory and disk may disagree now; the lowered checkpoint and the abort marker make the
            // next start's recovery rebuild everything from the cut point.
            let why = format!(
                "truncating the CommitLog to {cut} failed half-way ({e}); the store takes no writes until the broker restarts"
            );
            tracing::error!("shard {}: {why}", inner.cfg.shard_id);
            *inner.sync_failure.borrow_mut() = Some(why);
            flag.keep_set();
            return Err(e);
        }
        tracing::warn!(
            "shard {}: CommitLog truncated from {end} back to {cut} ({} bytes dropped)",
            inner.cfg.shard_id,
            end - cut
        );
        Ok(())
    }

    /// Steps (3) to (5), once the checkpoint points at the cut.
    async fn cut_from(&self, offset: i64, dispatched: u64) -> Result<(), StoreError> {
        let inner = &*self.inner;
        let cut = local_of(offset);
        // (3)
        inner.log.cut_back(cut).await?;
        inner.waiters.flushed.set(cut);
        self.confirm_cut(offset);
        // (4)
        let queues = self.queue_handles();
        let positions = inner.consumer_positions.borrow().clone();
        for q in queues {
            if let Some(e) = crate::fault::injected_error("truncate_queue", inner.cfg.shard_id) {
                return Err(StoreError::io("consumequeue", e));
            }
            let old_max = q.borrow().max_offset;
            cut_queue(&q, offset).await?;
            let (topic, queue_id, new_max) = {
                let q = q.borrow();
                (q.topic.clone(), q.queue_id, q.max_offset)
            };
            if new_max < old_max {
                let groups = positions
                    .as_ref()
                    .map(|p| p(&topic, queue_id))
                    .unwrap_or_default();
                self.say_tail_cut(&topic, queue_id, new_max, old_max, &groups);
            }
        }
        self.rewind_compacted_logs().await?;
        // (5)
        self.write_checkpoint(cut, dispatched).await?;
        self.truncate_epochs_from(offset)
    }

    /// The WARN lines for one queue's units dropped by a cut, [`new_max`, `old_max`), and what each
    /// consumer group with an offset on the queue had read of them; counted in the store's stats.
    fn say_tail_cut(
        &self,
        topic: &str,
        queue_id: i32,
        new_max: i64,
        old_max: i64,
        groups: &[(String, i64)],
    ) {
        let shard = self.inner.cfg.shard_id;
        let removed = old_max - new_max;
        crate::stats::StoreStats::inc(&self.inner.stats.tail_cut_messages, removed as u64);
        tracing::warn!(
            "shard {shard}: the tail cut removed {removed} messages of topic {topic} queue {queue_id} (queue offsets {new_max}..{old_max}, written in an epoch the new master does not have)"
        );
        for (group, committed) in groups.iter().filter(|(_, c)| *c > new_max) {
            let consumed = (*committed).min(old_max) - new_max;
            tracing::warn!(
                "shard {shard}: consumer group {group} had consumed {consumed} of them (committed offset {committed}, past the queue's new end {new_max}); the queue's next messages take those offsets again"
            );
        }
    }

    /// Why this store refuses every append until a restart (a tail cut or a sync that failed half-way),
    /// if it does. A slave with such a store must not replicate: what it would acknowledge is not what
    /// its disk and queues hold.
    pub fn unrecovered_failure(&self) -> Option<String> {
        self.inner.sync_failure.borrow().clone()
    }

    /// Whether a record (or the blank that ends a segment) starts at the physical offset `offset` of
    /// this shard's log; its end counts as a start. False outside the log.
    pub async fn record_starts_at(&self, offset: i64) -> Result<bool, StoreError> {
        let log = &self.inner.log;
        if offset < 0 || shard_of(offset) != self.inner.cfg.shard_id {
            return Ok(false);
        }
        let local = local_of(offset);
        if local > log.write_pos() || local < log.min_offset() {
            return Ok(false);
        }
        self.is_record_boundary(local).await
    }

    /// The start of the record of this shard's log that holds the physical offset `offset` (offset
    /// itself when a record starts there): where a slave can cut when the master's divergence point
    /// falls inside one of its records. Walks record heads from the latest known start at or below
    /// it (an epoch start that is a record start, or the segment's first byte).
    pub async fn record_start_at_or_before(&self, offset: i64) -> Result<i64, StoreError> {
        let inner = &*self.inner;
        let log = &inner.log;
        let shard = inner.cfg.shard_id;
        let local = local_of(offset);
        if offset < 0 || shard_of(offset) != shard {
            return Err(StoreError::WrongShard(offset));
        }
        if local > log.write_pos() || local < log.min_offset() {
            return Err(StoreError::Config(format!(
                "shard {shard}: offset {local} is outside its log [{}, {})",
                log.min_offset(),
                log.write_pos()
            )));
        }
        let segment_start = local - local % log.segment_size;
        let mut pos = segment_start.max(log.min_offset());
        let epoch_starts: Vec<u64> = self
            .epochs()
            .iter()
            .filter(|e| shard_of(e.start_offset) == shard)
            .map(|e| local_of(e.start_offset))
            .filter(|s| *s > pos && *s <= local)
            .collect();
        for start in epoch_starts.into_iter().rev() {
            if self.is_record_boundary(start).await? {
                pos = start;
                break;
            }
        }
        loop {
            if pos == local || pos >= log.write_pos() {
                return Ok(physical(shard, pos));
            }
            let Some(head) = log.read(pos, MIN_BLANK_LEN).await? else {
                return Err(StoreError::Config(format!(
                    "shard {shard}: no record head readable at {pos}"
                )));
            };
            let size = match peek_head(&head) {
                Ok(Some(RecordHead::Message { total_size })) => total_size as u64,
                Ok(Some(RecordHead::Blank { .. })) => return Ok(physical(shard, pos)),
                _ => {
                    return Err(StoreError::Config(format!(
                        "shard {shard}: no record starts at {pos} while walking to {local}"
                    )))
                }
            };
            if size == 0 || pos + size > local {
                return Ok(physical(shard, pos));
            }
            pos += size;
        }
    }

    /// Whether a record (or the blank that ends a segment) starts at shard-local `local`.
    async fn is_record_boundary(&self, local: u64) -> Result<bool, StoreError> {
        let log = &self.inner.log;
        if local == log.write_pos() || local % log.segment_size == 0 {
            return Ok(true);
        }
        let Some(head) = log.read(local, MIN_BLANK_LEN).await? else {
            return Ok(false);
        };
        match peek_head(&head) {
            Ok(Some(RecordHead::Blank { total_size })) => {
                Ok(local % log.segment_size + total_size as u64 == log.segment_size)
            }
            Ok(Some(RecordHead::Message { total_size })) => {
                let Some(rec) = log.read(local, total_size).await? else {
                    return Ok(false);
                };
                let phys = physical(self.inner.cfg.shard_id, local);
                Ok(decode_view(&rec, true).is_ok_and(|v| v.physical_offset == phys))
            }
            _ => Ok(false),
        }
    }
}

/// One unit of a queue, from memory or disk, without holding the queue borrowed across the read.
async fn unit(
    q: &std::cell::RefCell<ConsumeQueue>,
    offset: i64,
) -> Result<Option<CqEntry>, StoreError> {
    let span = {
        let q = q.borrow();
        if let Some(v) = q.mem_entries(offset, 1) {
            return Ok(v.first().and_then(|(_, e)| *e));
        }
        q.disk_span(offset, 1)
    };
    let Some((file, pos, len)) = span else {
        return Ok(None);
    };
    if len == 0 {
        return Ok(None);
    }
    let b = file
        .read_at(pos, len)
        .await
        .map_err(|e| StoreError::io(q.borrow().dir().display(), e))?;
    Ok(CqEntry::decode(&b))
}

/// Drops a queue's units whose records do not end below `cut_phys`, on disk (synced) and in memory.
/// Every unit is durable when this runs.
async fn cut_queue(
    q: &std::rc::Rc<std::cell::RefCell<ConsumeQueue>>,
    cut_phys: i64,
) -> Result<(), StoreError> {
    let (min, max) = {
        let q = q.borrow();
        (q.min_offset, q.max_offset)
    };
    // First unit whose record does not end inside the kept log (units are in log order).
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let inside = unit(q, mid)
            .await?
            .is_none_or(|e| e.phys + i64::from(e.size) <= cut_phys);
        if inside {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo >= max {
        return Ok(());
    }
    let (plan, dir) = {
        let q = q.borrow();
        (q.cut_block(lo), q.dir().to_owned())
    };
    let io = |e: glommio::GlommioError<()>| StoreError::io(dir.display(), e);
    let head = match &plan {
        Some((file, pos, at)) => {
            let keep = (*at - *pos) as usize;
            if keep == 0 {
                Vec::new()
            } else {
                let b = file.read_at(*pos, keep).await.map_err(io)?;
                if b.len() != keep {
                    return Err(StoreError::io(
                        dir.display(),
                        format!("short read before unit {lo} at {at}"),
                    ));
                }
                b.to_vec()
            }
        }
        None => Vec::new(),
    };
    let doomed = q.borrow_mut().cut(lo, head.clone());
    if let Some((file, pos, _)) = plan {
        let mut buf = file.alloc_dma_buffer(BLOCK as usize);
        let bytes = buf.as_bytes_mut();
        bytes.fill(0);
        if let Some(dst) = bytes.get_mut(..head.len()) {
            dst.copy_from_slice(&head);
        }
        file.write_at(buf, pos).await.map_err(io)?;
        file.truncate(pos + BLOCK).await.map_err(io)?;
        file.fdatasync().await.map_err(io)?;
    }
    for f in doomed {
        f.remove().await.map_err(io)?;
    }
    tracing::warn!(
        "ConsumeQueue {}: units from {lo} dropped (past the truncated CommitLog end)",
        dir.display()
    );
    Ok(())
}

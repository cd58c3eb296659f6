//! The read side of the store: pulls by queue offset, one record by physical offset, queue bounds,
//! offset by time and query by key.

use bytes::Bytes;
use protocol::message::properties::{self, UNIQ_KEY};
use protocol::message::record::{decode_view, store_timestamp_pos, SYS_FLAG_POS};

use crate::commitlog::ReadMode;
use crate::consume_queue::{CqEntry, CQ_UNIT};
use crate::error::StoreError;
use crate::offset::{local_of, shard_of};
use crate::stats::StoreStats;
use crate::store::MessageStore;
use crate::types::{GetMessageStatus, GetResult, ReadFilter};

/// Units scanned at most by one pull when a filter skips messages (RocketMQ: 16000 bytes of units).
const MAX_FILTER_SCAN: i64 = 800;

fn i32_at(b: &[u8], pos: usize) -> Option<i32> {
    b.get(pos..pos + 4)
        .and_then(|s| s.try_into().ok())
        .map(i32::from_be_bytes)
}

/// STORETIMESTAMP of a stored record.
pub fn record_store_timestamp(rec: &[u8]) -> Option<i64> {
    let flag = i32_at(rec, SYS_FLAG_POS)?;
    let pos = store_timestamp_pos(flag);
    rec.get(pos..pos + 8)
        .and_then(|s| s.try_into().ok())
        .map(i64::from_be_bytes)
}

impl MessageStore {
    /// Smallest queue offset still readable (0 for an unknown queue). For a compacted queue, the
    /// compacted log's first offset when that is lower, so that consumers starting from the beginning
    /// read the compacted records.
    pub fn min_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let cq_min = self.queue_min_offset(topic, queue_id);
        match self.compacted_log(topic, queue_id) {
            Some(log) => cq_min.min(log.first_offset().unwrap_or(log.up_to)),
            None => cq_min,
        }
    }

    /// The ConsumeQueue's own min offset.
    fn queue_min_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue(topic, queue_id)
            .map_or(0, |q| q.borrow().min_offset)
    }

    /// The next queue offset to be assigned (0 for an unknown queue).
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue(topic, queue_id)
            .map_or(0, |q| q.borrow().max_offset)
    }

    /// The max offset readers may see: `max_offset`, less the records still waiting for their flush
    /// when `consume_durable_only` holds them back. What a parked reader compares its offset with.
    pub fn visible_max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue(topic, queue_id).map_or(0, |q| {
            let q = q.borrow();
            q.announced_max
                .map_or(q.max_offset, |v| v.min(q.max_offset))
        })
    }

    /// ConsumeQueue units `[from, from+count)`: from memory, else one DMA read inside one file.
    pub(crate) async fn units(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        count: i64,
    ) -> Result<Option<Vec<(i64, Option<CqEntry>)>>, StoreError> {
        let Some(q) = self.queue(topic, queue_id) else {
            return Ok(None);
        };
        let plan = {
            let q = q.borrow();
            if let Some(v) = q.mem_entries(from, count) {
                return Ok(Some(v));
            }
            // Only units below the flush point are on disk: past it the file holds the zero padding
            // of the last flush (or stale units after a truncate), and an empty unit read there would
            // be skipped as a gap. Those units are in memory and are taken from there below.
            let count = count.min(q.max_offset - from).min(q.flushed - from);
            q.disk_span(from, count)
        };
        let Some((file, pos, len)) = plan else {
            return Ok(None);
        };
        if len == 0 {
            return Ok(None);
        }
        StoreStats::inc(&self.inner.stats.disk_reads, 1);
        let b = file
            .read_at(pos, len)
            .await
            .map_err(|e| StoreError::io(format!("consumequeue/{topic}/{queue_id}"), e))?;
        let n = b.len() / CQ_UNIT as usize;
        let mut units: Vec<(i64, Option<CqEntry>)> = (0..n)
            .map(|i| {
                let at = i * CQ_UNIT as usize;
                (
                    from + i as i64,
                    b.get(at..at + CQ_UNIT as usize).and_then(CqEntry::decode),
                )
            })
            .collect();
        // The rest of the range from memory, if the disk read reached it (a flush that completed
        // during the read may have dropped it from memory: the next pull reads it from disk).
        let done = n as i64;
        if n * CQ_UNIT as usize == len && done < count {
            if let Some(more) = q.borrow().mem_entries(from + done, count - done) {
                units.extend(more);
            }
        }
        Ok(Some(units))
    }

    /// Up to `max_count` messages of a queue from `offset`, at most `max_bytes` (at least one record),
    /// skipping those whose tagsCode `filter` rejects. Statuses and next offsets follow RocketMQ's
    /// `DefaultMessageStore.getMessage`.
    pub async fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: i32,
        max_bytes: usize,
        filter: Option<&dyn Fn(i64) -> bool>,
    ) -> Result<GetResult, StoreError> {
        let filter = ReadFilter {
            tags_code: filter,
            record: None,
        };
        self.get_messages_matching(topic, queue_id, offset, max_count, max_bytes, filter)
            .await
    }

    /// [`get_messages`](Self::get_messages) with both filters of [`ReadFilter`]. A record either
    /// rejects is skipped and consumed past, as RocketMQ's `isMatchedByCommitLog` does: the next
    /// offset moves beyond it and, when nothing matched, the status is `NoMatchedMessage`.
    pub async fn get_messages_matching(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: i32,
        max_bytes: usize,
        filter: ReadFilter<'_>,
    ) -> Result<GetResult, StoreError> {
        let ReadFilter {
            tags_code: filter,
            record: record_filter,
        } = filter;
        StoreStats::inc(&self.inner.stats.gets, 1);
        // With a confirm gate, the queue ends for readers at the last entry it covers.
        let (min, max) = (
            self.min_offset(topic, queue_id),
            self.readable_max_offset(topic, queue_id),
        );
        let result = |status, records, next| GetResult {
            status,
            records,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
        };
        if self.queue(topic, queue_id).is_none() {
            return Ok(result(GetMessageStatus::NoMatchedLogicQueue, Vec::new(), 0));
        }
        if max == 0 {
            return Ok(result(GetMessageStatus::NoMessageInQueue, Vec::new(), 0));
        }
        let mut offset = offset;
        if let Some(log) = self.compacted_log(topic, queue_id) {
            if offset < log.up_to {
                let bounds = crate::compaction::read::Bounds { min, max };
                let from = offset.max(0);
                let filter = ReadFilter {
                    tags_code: filter,
                    record: record_filter,
                };
                let got =
                    crate::compaction::read::read(&log, from, max_count, max_bytes, filter, bounds)
                        .await?;
                if let Some(got) = got {
                    return Ok(got);
                }
                // Nothing compacted at or after it: the ConsumeQueue goes on from there.
                offset = log.up_to;
            }
        }
        let cq_min = self.queue_min_offset(topic, queue_id);
        if offset < cq_min {
            return Ok(result(GetMessageStatus::OffsetTooSmall, Vec::new(), cq_min));
        }
        if offset == max {
            return Ok(result(
                GetMessageStatus::OffsetOverflowOne,
                Vec::new(),
                offset,
            ));
        }
        if offset > max {
            return Ok(result(
                GetMessageStatus::OffsetOverflowBadly,
                Vec::new(),
                // RocketMQ's `nextOffsetCorrection(offset, maxOffset)`: back to the queue's end,
                // never to its start (a consumer past the end has read everything there).
                max,
            ));
        }
        let max_count = i64::from(max_count.max(1));
        let scan = if filter.is_some() || record_filter.is_some() {
            max_count.max(MAX_FILTER_SCAN)
        } else {
            max_count
        };
        let Some(units) = self.units(topic, queue_id, offset, scan).await? else {
            // The unit's file is gone: move to the next file.
            let units_per_file = (self.inner.cfg.mapped_file_size_consume_queue / CQ_UNIT) as i64;
            let next = offset - offset.rem_euclid(units_per_file) + units_per_file;
            return Ok(result(
                GetMessageStatus::OffsetFoundNull,
                Vec::new(),
                next.min(max),
            ));
        };
        let min_phys = self.min_physical_offset();
        // See `StoreConfig::consume_durable_only`.
        let durable_end = self
            .inner
            .cfg
            .consume_durable_only
            .then(|| self.flushed_physical_offset());
        // See `confirm`: nothing past the confirm offset.
        let visible_end = match (durable_end, self.confirm_offset()) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        };
        let mut records: Vec<Bytes> = Vec::new();
        let mut bytes = 0usize;
        let mut next = offset;
        let mut filtered = false;
        let mut missing = false;
        let disk_reads = self.inner.log.disk_reads();
        for (o, unit) in units {
            let Some(unit) = unit else {
                next = o + 1;
                continue;
            };
            if records.len() as i64 >= max_count {
                break;
            }
            let size = usize::try_from(unit.size).unwrap_or(0);
            if !records.is_empty() && bytes + size > max_bytes {
                break;
            }
            if visible_end.is_some_and(|end| unit.phys.saturating_add(i64::from(unit.size)) > end) {
                // Not durable or not confirmed yet: readers get it after the flush or when the
                // confirm offset passes it (its arrival fires then).
                break;
            }
            next = o + 1;
            if unit.phys < min_phys {
                missing = true;
                continue;
            }
            if filter.is_some_and(|f| !f(unit.tags_code)) {
                filtered = true;
                continue;
            }
            match self
                .inner
                .log
                .read_record(local_of(unit.phys), ReadMode::Sequential)
                .await?
            {
                Some(rec) if rec.len() == size => {
                    if record_filter.is_some_and(|f| !f(&rec)) {
                        filtered = true;
                        continue;
                    }
                    bytes += rec.len();
                    records.push(rec);
                }
                _ => missing = true,
            }
        }
        StoreStats::inc(
            &self.inner.stats.disk_reads,
            self.inner.log.disk_reads() - disk_reads,
        );
        let status = if !records.is_empty() {
            GetMessageStatus::Found
        } else if filtered {
            GetMessageStatus::NoMatchedMessage
        } else if missing {
            GetMessageStatus::MessageWasRemoving
        } else {
            GetMessageStatus::OffsetFoundNull
        };
        Ok(result(status, records, next))
    }

    /// The stored record at a physical offset of this shard, or None if there is none.
    pub async fn read_record(&self, physical_offset: i64) -> Result<Option<Bytes>, StoreError> {
        if shard_of(physical_offset) != self.inner.cfg.shard_id || physical_offset < 0 {
            return Err(StoreError::WrongShard(physical_offset));
        }
        self.inner
            .log
            .read_record(local_of(physical_offset), ReadMode::Single)
            .await
    }

    /// One ConsumeQueue unit (memory or disk).
    pub(crate) async fn unit_at(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<Option<CqEntry>, StoreError> {
        let units = self.units(topic, queue_id, offset, 1).await?;
        Ok(units.and_then(|u| u.first().and_then(|(_, e)| *e)))
    }

    /// Store time of the record at a queue offset (None past the queue's end).
    pub async fn store_time_at(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<Option<i64>, StoreError> {
        let Some(units) = self.units(topic, queue_id, offset, 1).await? else {
            return Ok(None);
        };
        let Some(unit) = units.first().and_then(|(_, u)| *u) else {
            return Ok(None);
        };
        let rec = self
            .inner
            .log
            .read_record(local_of(unit.phys), ReadMode::Single)
            .await?;
        Ok(rec.as_deref().and_then(record_store_timestamp))
    }

    /// Store time of the oldest message of a queue (None when empty).
    pub async fn earliest_store_time(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<i64>, StoreError> {
        let min = self.min_offset(topic, queue_id);
        if min >= self.max_offset(topic, queue_id) {
            return Ok(None);
        }
        self.store_time_at(topic, queue_id, min).await
    }

    /// The first queue offset whose message was stored at or after `ts_ms` (binary search); the max
    /// offset when every message is older, the min offset when the queue is empty.
    pub async fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        ts_ms: i64,
    ) -> Result<i64, StoreError> {
        let (mut lo, mut hi) = (
            self.min_offset(topic, queue_id),
            self.max_offset(topic, queue_id),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.store_time_at(topic, queue_id, mid).await? {
                Some(t) if t >= ts_ms => hi = mid,
                _ => lo = mid + 1,
            }
        }
        Ok(lo)
    }

    /// Records of `topic` whose UNIQ_KEY or KEYS contain `key`, stored within `[begin_ms, end_ms]`,
    /// newest first, at most `max`.
    pub async fn query_by_key(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Bytes>, StoreError> {
        // Hash collisions and stale entries are filtered below, so ask the index for a few more.
        let want = max.saturating_mul(4).max(max + 16);
        let (hash, mut offsets, readers) = self
            .inner
            .index
            .borrow()
            .lookup_plan(topic, key, want, begin_ms, end_ms);
        for r in readers {
            if offsets.len() >= want {
                break;
            }
            offsets.extend(
                r.lookup(hash, want - offsets.len(), begin_ms, end_ms)
                    .await?,
            );
        }
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for phys in offsets {
            if out.len() >= max || !seen.insert(phys) {
                continue;
            }
            if shard_of(phys) != self.inner.cfg.shard_id {
                continue;
            }
            let Some(rec) = self
                .inner
                .log
                .read_record(local_of(phys), ReadMode::Single)
                .await?
            else {
                continue;
            };
            let Ok(view) = decode_view(&rec, false) else {
                continue;
            };
            let matches = view.topic == topic
                && (properties::get(view.properties, UNIQ_KEY) == Some(key)
                    || properties::keys(view.properties).any(|k| k == key));
            if matches && view.store_timestamp >= begin_ms && view.store_timestamp <= end_ms {
                out.push(rec);
            }
        }
        Ok(out)
    }
}

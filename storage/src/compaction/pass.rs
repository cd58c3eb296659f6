//! One compaction pass over a queue: the newest record of each key among the previous compacted log
//! and the ConsumeQueue entries past it (up to the CommitLog's flush point) goes into a new log.
//!
//! Steps: (1) scan the new entries, building key -> newest record, until `maxOffsetMapSize` bytes of
//! map would be exceeded (the rest waits for the next pass); (2) read the previous log's keys and keep
//! those no new record replaces; (3) write header, index and records to a temp file, sync, rename,
//! sync the directory; (4) swap the log in memory. Only then does retention's floor move.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use protocol::message::properties::{self, KEYS};
use protocol::message::record::decode_view;

use super::file::{CompactedLog, LogWriter};
use super::format::Entry;
use crate::commitlog::ReadMode;
use crate::error::StoreError;
use crate::layout::compaction_dir;
use crate::offset::local_of;
use crate::store::MessageStore;

/// Map bytes counted per key besides the key itself (hash table slot, the record's location).
const ENTRY_COST: u64 = 64;
/// ConsumeQueue units read at a time.
const SCAN_BATCH: i64 = 256;
/// Bytes of the previous log read at a time.
const READ_SPAN: u64 = 1 << 20;

/// What compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Queues whose compacted log was rewritten.
    pub queues: usize,
    /// New ConsumeQueue entries read.
    pub records_scanned: u64,
    /// Records in the new logs.
    pub records_kept: u64,
    pub bytes_written: u64,
    /// Some queue stopped early because of `maxOffsetMapSize`; the next pass goes on.
    pub limited: bool,
}

impl CompactionReport {
    fn add(&mut self, o: &CompactionReport) {
        self.queues += o.queues;
        self.records_scanned += o.records_scanned;
        self.records_kept += o.records_kept;
        self.bytes_written += o.bytes_written;
        self.limited |= o.limited;
    }
}

/// The newest record of a key among the new entries.
struct Newest {
    queue_offset: i64,
    phys: i64,
    size: i32,
    tags_code: i64,
    has_body: bool,
}

fn key_of(rec: &[u8]) -> Option<(String, bool)> {
    let view = decode_view(rec, false).ok()?;
    let key = properties::get(view.properties, KEYS)?;
    (!key.trim().is_empty()).then(|| (key.to_owned(), !view.body.is_empty()))
}

impl MessageStore {
    /// Compacts every queue of this shard's compacted topics now (what the timer runs). Passes are
    /// serialized; sends go on meanwhile.
    pub async fn compact_now(&self) -> Result<CompactionReport, StoreError> {
        let _permit = self
            .inner
            .compaction_lock
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("compaction", e))?;
        let mut report = CompactionReport::default();
        for (topic, queue_id) in self.queues() {
            if !self.compacts(&topic) || self.inner.shutting_down.get() {
                continue;
            }
            report.add(&self.compact_queue_locked(&topic, queue_id).await?);
        }
        Ok(report)
    }

    /// Compacts one queue now (whatever the topic's policy).
    pub async fn compact_queue(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<CompactionReport, StoreError> {
        let _permit = self
            .inner
            .compaction_lock
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("compaction", e))?;
        self.compact_queue_locked(topic, queue_id).await
    }

    async fn compact_queue_locked(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<CompactionReport, StoreError> {
        let mut report = CompactionReport::default();
        let Some(q) = self.queue(topic, queue_id) else {
            return Ok(report);
        };
        let began = Instant::now();
        let old = self.compacted_log(topic, queue_id);
        let old_up_to = old.as_ref().map_or(0, |l| l.up_to);
        let (cq_min, max) = {
            let q = q.borrow();
            (q.min_offset, q.max_offset)
        };
        let start = old_up_to.max(cq_min);
        if start >= max {
            return Ok(report);
        }

        // (1) The new entries: key -> newest, up to the flush point and the map's budget.
        let flushed = self.flushed_physical_offset();
        let budget = self.inner.cfg.max_offset_map_size;
        let mut newest: HashMap<String, Newest, ahash::RandomState> = HashMap::default();
        let mut map_bytes = 0u64;
        let mut end = start;
        'scan: while end < max {
            let units = match self.units(topic, queue_id, end, SCAN_BATCH).await? {
                Some(u) if !u.is_empty() => u,
                _ => break,
            };
            for (o, unit) in units {
                let Some(unit) = unit else {
                    end = o + 1;
                    continue;
                };
                if unit.phys.saturating_add(i64::from(unit.size)) > flushed {
                    break 'scan;
                }
                report.records_scanned += 1;
                let rec = self
                    .inner
                    .log
                    .read_record(local_of(unit.phys), ReadMode::Sequential)
                    .await?;
                let keyed = rec
                    .filter(|r| r.len() == usize::try_from(unit.size).unwrap_or(0))
                    .and_then(|r| key_of(&r));
                if let Some((key, has_body)) = keyed {
                    if !newest.contains_key(&key) {
                        let cost = key.len() as u64 + ENTRY_COST;
                        if !newest.is_empty() && map_bytes + cost > budget {
                            report.limited = true;
                            break 'scan;
                        }
                        map_bytes += cost;
                    }
                    newest.insert(
                        key,
                        Newest {
                            queue_offset: o,
                            phys: unit.phys,
                            size: unit.size,
                            tags_code: unit.tags_code,
                            has_body,
                        },
                    );
                }
                end = o + 1;
                glommio::yield_if_needed().await;
            }
        }
        if end <= start {
            return Ok(report);
        }

        // (2) The previous log's records that no new record replaces.
        let mut kept_old = Vec::new();
        if let Some(old) = &old {
            let mut i = 0;
            while let Some(first) = old.entries.get(i) {
                let mut j = i;
                let mut span = 0u64;
                while let Some(e) = old.entries.get(j) {
                    if j > i && span + u64::from(e.size) > READ_SPAN {
                        break;
                    }
                    span += u64::from(e.size);
                    j += 1;
                }
                let bytes = old.read(first.pos, span as usize).await?;
                for e in old.entries.get(i..j).unwrap_or_default() {
                    let at = (e.pos - first.pos) as usize;
                    let rec = bytes.get(at..at + e.size as usize).unwrap_or_default();
                    match key_of(rec) {
                        Some((key, _)) if newest.contains_key(&key) => {}
                        Some(_) => kept_old.push(*e),
                        None => tracing::warn!(
                            "{}: record at queue offset {} has no key; dropped",
                            old.path.display(),
                            e.queue_offset
                        ),
                    }
                }
                i = j;
                glommio::yield_if_needed().await;
            }
        }
        let mut kept_new: Vec<Newest> = newest.into_values().filter(|n| n.has_body).collect();
        kept_new.sort_by_key(|n| n.queue_offset);

        // (3) The new file.
        let entries: Vec<Entry> = kept_old
            .iter()
            .map(|e| Entry {
                queue_offset: e.queue_offset,
                size: e.size as i32,
                tags_code: e.tags_code,
            })
            .chain(kept_new.iter().map(|n| Entry {
                queue_offset: n.queue_offset,
                size: n.size,
                tags_code: n.tags_code,
            }))
            .collect();
        let dir = compaction_dir(&self.inner.cfg.root_dir, topic, queue_id);
        let mut w = LogWriter::create(&dir, end, entries, self.inner.cfg.shard_id).await?;
        if let Some(old) = &old {
            for e in &kept_old {
                let rec = old.read(e.pos, e.size as usize).await?;
                report.bytes_written += rec.len() as u64;
                w.push(&rec).await?;
            }
        }
        for n in &kept_new {
            let rec = self
                .inner
                .log
                .read_record(local_of(n.phys), ReadMode::Sequential)
                .await?
                .ok_or_else(|| {
                    StoreError::io(
                        topic,
                        format!(
                            "record of queue {queue_id} offset {} is gone",
                            n.queue_offset
                        ),
                    )
                })?;
            report.bytes_written += rec.len() as u64;
            w.push(&rec).await?;
            glommio::yield_if_needed().await;
        }
        let new: CompactedLog = w.finish().await?;

        // (4) Readers see the new log from now on; those reading the old one keep its open file.
        report.queues = 1;
        report.records_kept = new.entries.len() as u64;
        tracing::info!(
            "shard {}: compacted {topic}/{queue_id} up to offset {end} ({} records kept, {} new scanned{}) in {} ms",
            self.inner.cfg.shard_id,
            report.records_kept,
            report.records_scanned,
            if report.limited { ", map full: more next pass" } else { "" },
            began.elapsed().as_millis()
        );
        self.inner
            .compacted
            .borrow_mut()
            .insert((topic.to_owned(), queue_id), Rc::new(new));
        Ok(report)
    }
}

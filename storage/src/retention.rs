//! Retention: deletes whole CommitLog segments older than `fileReservedTime` at `deleteWhen` (or at once
//! when the disk is fuller than `diskMaxUsedSpaceRatio`; oldest first even if not expired when fuller
//! than `diskSpaceCleanForciblyRatio`, 85%, as RocketMQ), then the
//! ConsumeQueue and index files wholly below the new CommitLog minimum. Also keeps the disk-full flag.
//! Topics with a policy of their own hold segments back (`retention_policy`): compacted queues'
//! uncompacted records and long `reserve.time` messages are kept unless the disk is full enough for
//! forced deletion, which takes them with a WARN line.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::consume_queue::{ConsumeQueue, CqEntry, CQ_UNIT};
use crate::error::StoreError;
use crate::offset::physical;
use crate::retention_audit::{unconsumed_losses, DeleteRule, DeletedSegment, UnconsumedLoss};
use crate::stats::StoreStats;
use crate::store::MessageStore;
use crate::types::RetentionReport;

/// Percent of the file system holding `path` that is used.
pub fn disk_used_percent(path: &Path) -> Option<u32> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a live, writable statvfs for the call.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let total = st.f_blocks as u128;
    let avail = st.f_bavail as u128;
    let free = st.f_bfree as u128;
    let used = total.checked_sub(free)?;
    // Like df: used / (used + available to unprivileged users).
    let denom = used + avail;
    (denom > 0).then(|| (used * 100 / denom) as u32)
}

/// Local hour of a unix time in ms.
fn local_hour(now_ms: i64) -> Option<u32> {
    let t: libc::time_t = (now_ms / 1000) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed struct we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals for the duration of the call.
    let res = unsafe { libc::localtime_r(&t, &mut tm) };
    (!res.is_null()).then_some(tm.tm_hour as u32)
}

/// Whether `now_ms` falls in one of the `deleteWhen` hours ("04", or "04;16").
pub fn is_delete_hour(delete_when: &str, now_ms: i64) -> bool {
    let Some(hour) = local_hour(now_ms) else {
        return false;
    };
    delete_when
        .split(';')
        .filter_map(|h| h.trim().parse::<u32>().ok())
        .any(|h| h == hour)
}

impl MessageStore {
    /// Reads the disk's use and turns the store read-only at `diskSpaceWarningLevelRatio`, writable
    /// again below it; the use in percent, if the file system answers.
    pub(crate) fn check_disk_space(&self) -> Option<u32> {
        let inner = &*self.inner;
        let limit = inner.tunables.borrow().disk_space_warning_level_ratio;
        let used = disk_used_percent(&inner.cfg.root_dir)?;
        let mut full = inner.disk_full.borrow_mut();
        if used >= limit {
            if full.is_none() {
                tracing::error!(
                    "shard {}: disk {used}% used; store read-only",
                    inner.cfg.shard_id
                );
            }
            *full = Some(format!("disk {used}% used (limit {limit}%)"));
        } else if full.take().is_some() {
            tracing::warn!(
                "shard {}: disk {used}% used; store writable again",
                inner.cfg.shard_id
            );
        }
        Some(used)
    }

    /// One retention pass at `now_ms`. `force` deletes expired segments regardless of `deleteWhen`.
    pub async fn run_retention(
        &self,
        now_ms: i64,
        force: bool,
    ) -> Result<RetentionReport, StoreError> {
        let inner = &*self.inner;
        let cfg = &inner.cfg;
        let _permit = inner
            .maintenance
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("maintenance", e))?;
        let live = inner.tunables.borrow().clone();
        let used = self.check_disk_space();
        // As RocketMQ: above diskMaxUsedSpaceRatio expired segments go at once (outside deleteWhen);
        // only above diskSpaceCleanForciblyRatio do unexpired ones go too.
        let disk_pressure = used.is_some_and(|u| u >= live.disk_max_used_space_ratio);
        let clean_forcibly = cfg.clean_file_forcibly_enable
            && used.is_some_and(|u| u >= live.disk_space_clean_forcibly_ratio);
        let in_window = force || is_delete_hour(&live.delete_when, now_ms);
        let reserved = Duration::from_secs(live.file_reserved_time_hours.saturating_mul(3600));
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(now_ms.max(0) as u64);
        let mut report = RetentionReport::default();
        self.expire_short_reserve(now_ms).await?;
        let floors = self.retention_floors(now_ms).await?;
        let floor = floors.iter().map(|f| f.local).min();
        let active = inner.log.segment_start(inner.log.write_pos());
        let flushed = inner.log.flushed.get();
        for start in inner.log.segment_starts() {
            // Never the segment being written, nor one holding data not yet durable.
            if start >= active || start + cfg.mapped_file_size_commit_log > flushed {
                break;
            }
            let Some(seg) = inner.log.segment_at(start) else {
                continue;
            };
            let modified = std::fs::metadata(&seg.path).and_then(|m| m.modified()).ok();
            let expired =
                modified.is_some_and(|m| now.duration_since(m).is_ok_and(|age| age >= reserved));
            let seg_end = start + cfg.mapped_file_size_commit_log;
            // Holds records a compacted queue has not compacted yet, or unexpired reserve.time ones.
            let held = floor.is_some_and(|f| f < seg_end);
            let normal = expired && (in_window || disk_pressure) && !held;
            let forced = clean_forcibly && report.commitlog_segments.is_empty();
            if !normal && !forced {
                break;
            }
            let rule = if normal && in_window {
                DeleteRule::Expired
            } else if normal {
                DeleteRule::ExpiredDiskPressure
            } else {
                DeleteRule::Forced
            };
            if held && !normal {
                for f in floors.iter().filter(|f| f.local < seg_end) {
                    tracing::warn!(
                        "shard {}: disk full: forced deletion of {} takes records of {} topic {} queue {} not yet safe to delete",
                        cfg.shard_id,
                        seg.path.display(),
                        f.why,
                        f.topic,
                        f.queue_id
                    );
                }
            }
            inner.log.remove_segment(start);
            if let Err(e) = std::fs::remove_file(&seg.path) {
                tracing::warn!("deleting {} failed: {e}", seg.path.display());
            }
            let age_h = modified
                .and_then(|m| now.duration_since(m).ok())
                .map_or(0, |age| age.as_secs() / 3600);
            let why = match rule {
                DeleteRule::Expired => format!(
                    "last written {age_h} h ago, fileReservedTime {} h, {}",
                    live.file_reserved_time_hours,
                    if force { "deletion asked for" } else { "a deleteWhen hour" }
                ),
                DeleteRule::ExpiredDiskPressure => format!(
                    "last written {age_h} h ago, fileReservedTime {} h, disk {}% used >= diskMaxUsedSpaceRatio {}%",
                    live.file_reserved_time_hours,
                    used.unwrap_or(0),
                    live.disk_max_used_space_ratio
                ),
                DeleteRule::Forced => format!(
                    "last written {age_h} h ago, disk {}% used >= diskSpaceCleanForciblyRatio {}%, deleted before it expired",
                    used.unwrap_or(0),
                    live.disk_space_clean_forcibly_ratio
                ),
            };
            let counter = match rule {
                DeleteRule::Expired => &inner.stats.retention_expired,
                DeleteRule::ExpiredDiskPressure => &inner.stats.retention_disk_pressure,
                DeleteRule::Forced => &inner.stats.retention_forced,
            };
            StoreStats::inc(counter, 1);
            if rule == DeleteRule::Forced {
                tracing::warn!(
                    "shard {}: retention ({rule}) deleted CommitLog segment {}: {why}",
                    cfg.shard_id,
                    seg.path.display()
                );
            } else {
                tracing::info!(
                    "shard {}: retention ({rule}) deleted CommitLog segment {}: {why}",
                    cfg.shard_id,
                    seg.path.display()
                );
            }
            report.commitlog_segments.push(DeletedSegment {
                path: seg.path.display().to_string(),
                rule,
            });
        }
        if report.commitlog_segments.is_empty() {
            return Ok(report);
        }
        let min_phys = physical(cfg.shard_id, inner.log.min_offset());
        // Epochs whose data is all deleted go too (RocketMQ's truncatePrefixByOffset).
        if let Err(e) = inner.epochs.borrow_mut().truncate_before(min_phys) {
            tracing::error!("shard {}: pruning the epoch file failed: {e}", cfg.shard_id);
        }
        let queues = self.queue_handles();
        let positions = inner.consumer_positions.borrow().clone();
        // The rule that took the newest segment is the one that moved the queues' starts.
        let rule = report
            .commitlog_segments
            .last()
            .map_or(DeleteRule::Expired, |d| d.rule);
        for q in queues {
            let old_min = q.borrow().min_offset;
            report.consume_queue_files += self.trim_queue(&q, min_phys).await?;
            let (topic, queue_id, new_min) = {
                let q = q.borrow();
                (q.topic.clone(), q.queue_id, q.min_offset)
            };
            if new_min <= old_min {
                continue;
            }
            let Some(positions) = &positions else {
                continue;
            };
            let losses = unconsumed_losses(
                &topic,
                queue_id,
                old_min,
                new_min,
                &positions(&topic, queue_id),
            );
            for loss in &losses {
                warn_unconsumed(cfg.shard_id, rule, loss);
                StoreStats::inc(&inner.stats.retention_unconsumed, loss.messages as u64);
            }
            report.unconsumed.extend(losses);
        }
        let doomed = inner.index.borrow_mut().take_files_below(min_phys);
        for path in doomed {
            let _ = std::fs::remove_file(&path);
            report.index_files += 1;
        }
        Ok(report)
    }

    /// Deletes a queue's files wholly below `min_phys` and raises its min offset; borrows stay short
    /// because appends to the queue go on meanwhile.
    pub(crate) async fn trim_queue(
        &self,
        q: &std::rc::Rc<std::cell::RefCell<ConsumeQueue>>,
        min_phys: i64,
    ) -> Result<usize, StoreError> {
        let mut deleted = 0;
        loop {
            let Some((start, next_start, file, last_pos)) = q.borrow().first_full_file() else {
                break;
            };
            let b = file
                .read_at(last_pos, CQ_UNIT as usize)
                .await
                .map_err(|e| StoreError::io(q.borrow().dir().display(), e))?;
            match CqEntry::decode(&b) {
                Some(e) if e.phys + i64::from(e.size) <= min_phys => {
                    q.borrow_mut().drop_file(start, next_start);
                    let _ = file.remove().await;
                    deleted += 1;
                }
                _ => break,
            }
        }
        let (topic, queue_id, mut lo, mut hi) = {
            let q = q.borrow();
            (q.topic.clone(), q.queue_id, q.min_offset, q.max_offset)
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let unit = self.unit_at(&topic, queue_id, mid).await?;
            if unit.is_some_and(|u| u.phys >= min_phys) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let mut q = q.borrow_mut();
        q.min_offset = q.min_offset.max(lo);
        Ok(deleted)
    }
}

/// The WARN line for messages deleted before a group consumed them.
fn warn_unconsumed(shard_id: u16, rule: DeleteRule, loss: &UnconsumedLoss) {
    tracing::warn!(
        "shard {shard_id}: retention ({rule}) deleted {} messages of topic {} queue {} that consumer group {} had not consumed (its committed offset {}; the queue now starts at {})",
        loss.messages,
        loss.topic,
        loss.queue_id,
        loss.group,
        loss.committed,
        loss.new_min
    );
}

//! Opening a shard's files: after a clean stop the checkpoint is trusted and only what lies past its
//! dispatch point is re-dispatched; after an unclean stop (abort marker present) the CommitLog is scanned
//! from the segment holding the checkpoint, every record's CRC and offset checked, a torn or corrupt tail
//! cut (with a log line naming the file and offset), and ConsumeQueue/index entries rebuilt.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use protocol::message::record::{decode_view, peek_head, RecordHead};

use crate::checkpoint::Checkpoint;
use crate::commitlog::{align_down, align_up, CommitLog, BLOCK};
use crate::config::StoreConfig;
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::dispatch::{goes_to_consume_queue, goes_to_index, index_keys, tags_code};
use crate::error::StoreError;
use crate::index::IndexService;
use crate::layout::{abort_marker, commitlog_dir, consume_queue_root, set_aside_path};
use crate::offset::physical;
use crate::segment::{open_all, Segment, SegmentMap};

/// Bytes read at once while scanning.
const SCAN_WINDOW: usize = 4 << 20;

pub(crate) type PlainQueues =
    HashMap<String, HashMap<i32, ConsumeQueue, ahash::RandomState>, ahash::RandomState>;

pub(crate) struct Recovered {
    pub log: CommitLog,
    pub queues: PlainQueues,
    pub index: IndexService,
    pub checkpoint_seq: u64,
    /// The confirm offset (shard-local) the last checkpoint kept, if it kept one.
    pub confirm_offset: Option<u64>,
    /// CommitLog offset below which ConsumeQueue units and index keys were durable at open.
    pub dispatch_from: u64,
}

/// Where a scan of the CommitLog stopped.
enum ScanEnd {
    /// Zeros: the end of written data.
    Clean(u64),
    /// A record that is torn or corrupt.
    Bad {
        at: u64,
        path: String,
        reason: String,
    },
}

async fn load_queues(root: &Path, units: i64) -> Result<PlainQueues, StoreError> {
    let mut out = PlainQueues::default();
    std::fs::create_dir_all(root).map_err(|e| StoreError::io(root.display(), e))?;
    for topic in std::fs::read_dir(root).map_err(|e| StoreError::io(root.display(), e))? {
        let topic = topic.map_err(|e| StoreError::io(root.display(), e))?;
        let Some(name) = topic.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !topic.path().is_dir() {
            continue;
        }
        for q in std::fs::read_dir(topic.path())
            .map_err(|e| StoreError::io(topic.path().display(), e))?
        {
            let q = q.map_err(|e| StoreError::io(topic.path().display(), e))?;
            let Some(qid) = q.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let cq = ConsumeQueue::load(root, &name, qid, units).await?;
            out.entry(name.clone()).or_default().insert(qid, cq);
        }
    }
    Ok(out)
}

pub(crate) async fn recover(cfg: &StoreConfig) -> Result<Recovered, StoreError> {
    let root = &cfg.root_dir;
    let unclean = abort_marker(root).exists();
    let checkpoint = Checkpoint::read(root);
    let seg_size = cfg.mapped_file_size_commit_log;
    let log_dir = commitlog_dir(root);
    let mut segments = open_all(&log_dir, seg_size).await?;
    let units = (cfg.mapped_file_size_consume_queue / 20) as i64;
    let mut queues = load_queues(&consume_queue_root(root), units).await?;
    let mut index = IndexService::load(root, cfg.max_hash_slot_num, cfg.max_index_num).await?;

    let first = segments.keys().next().copied().unwrap_or(0);
    let (scan_from, dispatch_from) = match checkpoint {
        Some(cp) if !unclean => (
            cp.dispatch_durable.min(cp.commitlog_flushed).max(first),
            cp.dispatch_durable.max(first),
        ),
        Some(cp) => {
            let p = cp.dispatch_durable.min(cp.commitlog_flushed).max(first);
            (p - p % seg_size, cp.dispatch_durable.max(first))
        }
        None => (first, first),
    };
    if unclean {
        tracing::warn!(
            "shard {}: unclean stop detected; scanning CommitLog from offset {scan_from}",
            cfg.shard_id
        );
    }
    let mut pending = PendingUnits::default();
    let end = scan(cfg, &segments, scan_from, |local, rec| {
        if local >= dispatch_from {
            redispatch(cfg, &mut pending, &mut index, local, rec);
        }
    })
    .await?;
    let end = match end {
        ScanEnd::Clean(end) => end,
        ScanEnd::Bad { at, path, reason } => {
            tracing::error!(
                "shard {}: CommitLog recovery stops at {path} offset {} (shard offset {at}): {reason}; later data is cut",
                cfg.shard_id,
                at % seg_size
            );
            at
        }
    };
    // Apply the ConsumeQueue units found by the re-dispatch.
    let cq_root = consume_queue_root(root);
    for ((topic, qid), list) in pending {
        let cq = queues
            .entry(topic.clone())
            .or_default()
            .entry(qid)
            .or_insert_with(|| ConsumeQueue::new(&cq_root, &topic, qid, units));
        for (offset, entry) in list {
            cq.put_at(offset, entry).await?;
        }
    }
    if unclean {
        cut_after(cfg, &mut segments, end).await?;
    }
    let end_phys = physical(cfg.shard_id, end);
    let min_phys = physical(cfg.shard_id, first);
    for qs in queues.values_mut() {
        for cq in qs.values_mut() {
            truncate_past(cq, end_phys).await?;
            cq.correct_min_offset(min_phys).await?;
        }
    }
    let chunk = CommitLog::chunk_size(seg_size);
    let tail_start = end - end % chunk;
    let tail = if end > tail_start {
        let seg = segments.get(&(end - end % seg_size)).cloned();
        match seg {
            Some(seg) => seg
                .read(tail_start - seg.start, (end - tail_start) as usize)
                .await?
                .to_vec(),
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    if tail.len() as u64 != end - tail_start {
        return Err(StoreError::Corrupt {
            path: log_dir.display().to_string(),
            offset: end,
            reason: "CommitLog segment missing or short at its end".to_owned(),
        });
    }
    let mut log = CommitLog::new(
        log_dir,
        seg_size,
        segments,
        end,
        tail,
        cfg.read_cache_bytes,
        cfg.read_block_cache_bytes,
    );
    log.set_warm_segments(cfg.warm_segments());
    Ok(Recovered {
        log,
        queues,
        index,
        checkpoint_seq: checkpoint.map_or(0, |c| c.seq),
        confirm_offset: checkpoint.and_then(|c| c.confirm_offset),
        dispatch_from: dispatch_from.min(end),
    })
}

/// ConsumeQueue units found by the scan, applied after it (the scan callback cannot await).
type PendingUnits = HashMap<(String, i32), Vec<(i64, CqEntry)>, ahash::RandomState>;

fn redispatch(
    cfg: &StoreConfig,
    pending: &mut PendingUnits,
    index: &mut IndexService,
    local: u64,
    rec: &protocol::message::record::RecordView<'_>,
) {
    let phys = physical(cfg.shard_id, local);
    if goes_to_consume_queue(rec.sys_flag) {
        let entry = CqEntry {
            phys,
            size: rec.total_size as i32,
            tags_code: tags_code(cfg, rec.topic, rec.properties, rec.store_timestamp),
        };
        pending
            .entry((rec.topic.to_owned(), rec.queue_id))
            .or_default()
            .push((rec.queue_offset, entry));
    }
    if cfg.message_index_enable && goes_to_index(rec.sys_flag) {
        for key in index_keys(rec.properties) {
            // A full file leaves the key pending; the store creates the next file once open.
            index.put(rec.topic, key, phys, rec.store_timestamp);
        }
    }
}

/// Walks records from `from` until zeros or a bad record, calling `f` for each good message.
async fn scan(
    cfg: &StoreConfig,
    segments: &SegmentMap,
    from: u64,
    mut f: impl FnMut(u64, &protocol::message::record::RecordView<'_>),
) -> Result<ScanEnd, StoreError> {
    let seg_size = cfg.mapped_file_size_commit_log;
    let mut pos = from;
    let mut window: (u64, Bytes) = (pos, Bytes::new());
    loop {
        let seg_start = pos - pos % seg_size;
        let Some(seg) = segments.get(&seg_start) else {
            return Ok(ScanEnd::Clean(pos));
        };
        let bad = |reason: String| ScanEnd::Bad {
            at: pos,
            path: seg.path.display().to_string(),
            reason,
        };
        let in_seg = pos - seg_start;
        if in_seg + 8 > seg_size {
            return Ok(bad("segment ends without a blank record".to_owned()));
        }
        let avail = |w: &(u64, Bytes)| {
            (pos >= w.0)
                .then(|| (pos - w.0) as usize)
                .filter(|at| *at < w.1.len())
        };
        let mut at = avail(&window);
        if at.is_none_or(|a| window.1.len() - a < 8) {
            window = (pos, read_window(seg, in_seg, SCAN_WINDOW, seg_size).await?);
            at = Some(0);
        }
        let at = at.unwrap_or(0);
        let head = window.1.get(at..).unwrap_or_default();
        if head.len() >= 4 && head.get(..4) == Some(&[0, 0, 0, 0]) {
            return Ok(ScanEnd::Clean(pos));
        }
        let size = match peek_head(head) {
            Ok(Some(RecordHead::Blank { total_size })) => {
                if in_seg + total_size as u64 != seg_size {
                    return Ok(bad(format!(
                        "blank record of {total_size} bytes does not end the segment"
                    )));
                }
                pos = seg_start + seg_size;
                continue;
            }
            Ok(Some(RecordHead::Message { total_size })) => total_size,
            Ok(None) => return Ok(bad("truncated record header".to_owned())),
            Err(e) => return Ok(bad(e.to_string())),
        };
        if in_seg + size as u64 > seg_size {
            return Ok(bad(format!(
                "record of {size} bytes crosses the segment end"
            )));
        }
        if window.1.len() - at < size {
            window = (
                pos,
                read_window(seg, in_seg, SCAN_WINDOW.max(size), seg_size).await?,
            );
            if window.1.len() < size {
                return Ok(bad(format!("record of {size} bytes is cut short")));
            }
        }
        let at = (pos - window.0) as usize;
        let bytes = window.1.get(at..at + size).unwrap_or_default();
        let view = match decode_view(bytes, true) {
            Ok(v) => v,
            Err(e) => return Ok(bad(e.to_string())),
        };
        let expected = physical(cfg.shard_id, pos);
        if view.physical_offset != expected {
            return Ok(bad(format!(
                "record says physical offset {}, found at {expected}",
                view.physical_offset
            )));
        }
        f(pos, &view);
        pos += size as u64;
    }
}

async fn read_window(
    seg: &Segment,
    in_seg: u64,
    len: usize,
    seg_size: u64,
) -> Result<Bytes, StoreError> {
    let len = (len as u64).min(seg_size - in_seg) as usize;
    seg.read(in_seg, len).await
}

/// Zeroes everything after `end` in its segment and sets aside later segments that hold data.
async fn cut_after(
    cfg: &StoreConfig,
    segments: &mut SegmentMap,
    end: u64,
) -> Result<(), StoreError> {
    let seg_size = cfg.mapped_file_size_commit_log;
    let seg_start = end - end % seg_size;
    if let Some(seg) = segments.get(&seg_start).cloned() {
        let in_seg = end - seg_start;
        let block = align_down(in_seg);
        let keep = (in_seg - block) as usize;
        let data = seg.read(block, keep).await?;
        let mut buf = seg.file.alloc_dma_buffer(BLOCK as usize);
        let bytes = buf.as_bytes_mut();
        bytes.fill(0);
        if let (Some(dst), Some(src)) = (bytes.get_mut(..keep), data.get(..keep)) {
            dst.copy_from_slice(src);
        }
        let io = |e: glommio::GlommioError<()>| StoreError::io(seg.path.display(), e);
        seg.file.write_at(buf, block).await.map_err(io)?;
        // Drop the rest and allocate it again: it reads back as zeros.
        seg.file
            .truncate(align_up(in_seg.max(1)))
            .await
            .map_err(io)?;
        seg.file.pre_allocate(seg_size, false).await.map_err(io)?;
        seg.file.fdatasync().await.map_err(io)?;
    }
    let later: Vec<u64> = segments.range(seg_start + 1..).map(|(k, _)| *k).collect();
    for start in later {
        let Some(seg) = segments.get(&start).cloned() else {
            continue;
        };
        let head = seg.read(0, 8).await?;
        if head.iter().all(|b| *b == 0) {
            continue;
        }
        let aside = set_aside_path(&seg.path, start);
        tracing::error!(
            "shard {}: moving CommitLog segment {} past the cut aside to {}",
            cfg.shard_id,
            seg.path.display(),
            aside.display()
        );
        std::fs::rename(&seg.path, &aside).map_err(|e| StoreError::io(seg.path.display(), e))?;
        segments.remove(&start);
    }
    Ok(())
}

/// Drops ConsumeQueue units that point at or past the end of the CommitLog.
async fn truncate_past(cq: &mut ConsumeQueue, end_phys: i64) -> Result<(), StoreError> {
    let (mut lo, mut hi) = (cq.min_offset, cq.max_offset);
    // First unit whose record does not end inside the log.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let inside = cq
            .entry(mid)
            .await?
            .is_none_or(|e| e.phys + i64::from(e.size) <= end_phys);
        if inside {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo < cq.max_offset {
        tracing::warn!(
            "ConsumeQueue {}/{}: dropping units from {lo} (past the CommitLog end)",
            cq.topic,
            cq.queue_id
        );
        cq.truncate(lo).await?;
    }
    Ok(())
}

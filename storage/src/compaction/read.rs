//! Pulls of a compacted queue below its "compacted up to" offset: served from the compacted log,
//! records at or after the requested offset in offset order ("the message offset remains unchanged
//! after compaction; if the consumer specified offset does not exist, return the most recent message
//! after the offset", Apache RocketMQ's documentation).

use bytes::Bytes;

use super::file::CompactedLog;
use crate::error::StoreError;
use crate::types::{GetMessageStatus, GetResult, ReadFilter};

/// Entries looked at by one pull when filters skip records (the ConsumeQueue path's bound).
const MAX_FILTER_SCAN: usize = 800;
/// Most bytes of the file one pull reads (beyond its first record).
const MAX_SPAN: u64 = 8 << 20;
/// QUEUEOFFSET's position in a stored record.
const QUEUE_OFFSET_POS: usize = 20;

/// The bounds a pull reports.
pub(crate) struct Bounds {
    pub min: i64,
    pub max: i64,
}

/// Up to `max_count` records of `log` from `offset`, at most `max_bytes` (at least one record). None
/// when the log holds no record at or after `offset`: the ConsumeQueue serves from `log.up_to` then.
pub(crate) async fn read(
    log: &CompactedLog,
    offset: i64,
    max_count: i32,
    max_bytes: usize,
    filter: ReadFilter<'_>,
    bounds: Bounds,
) -> Result<Option<GetResult>, StoreError> {
    let first = log.index_of(offset);
    if first >= log.entries.len() {
        return Ok(None);
    }
    let max_count = usize::try_from(max_count.max(1)).unwrap_or(1);
    let scan = if filter.tags_code.is_some() || filter.record.is_some() {
        max_count.max(MAX_FILTER_SCAN)
    } else {
        max_count
    };
    let mut chosen = Vec::new();
    let mut bytes = 0usize;
    let mut filtered = false;
    let mut next = offset;
    let mut last_seen = first;
    for (i, e) in log.entries.iter().enumerate().skip(first).take(scan) {
        if chosen.len() >= max_count {
            break;
        }
        let size = e.size as usize;
        if let Some(f) = chosen.first() {
            let f: &&super::file::Located = f;
            if bytes + size > max_bytes || e.pos + u64::from(e.size) - f.pos > MAX_SPAN {
                break;
            }
        }
        last_seen = i;
        next = e.queue_offset + 1;
        if filter.tags_code.is_some_and(|f| !f(e.tags_code)) {
            filtered = true;
            continue;
        }
        bytes += size;
        chosen.push(e);
    }
    if last_seen + 1 >= log.entries.len() {
        // Nothing compacted remains past these: the ConsumeQueue goes on from there.
        next = next.max(log.up_to);
    }
    let mut records = Vec::with_capacity(chosen.len());
    let mut damaged = false;
    if let (Some(&a), Some(&b)) = (chosen.first(), chosen.last()) {
        let span = Bytes::from(
            log.read(a.pos, (b.pos + u64::from(b.size) - a.pos) as usize)
                .await?,
        );
        for e in &chosen {
            let at = (e.pos - a.pos) as usize;
            let Some(rec) = span.get(at..at + e.size as usize) else {
                damaged = true;
                continue;
            };
            let total = rec
                .get(0..4)
                .and_then(|s| s.try_into().ok())
                .map(i32::from_be_bytes);
            let qo = rec
                .get(QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8)
                .and_then(|s| s.try_into().ok())
                .map(i64::from_be_bytes);
            if total != Some(e.size as i32) || qo != Some(e.queue_offset) {
                tracing::error!(
                    "{}: record of queue offset {} at byte {} is damaged; skipped",
                    log.path.display(),
                    e.queue_offset,
                    e.pos
                );
                damaged = true;
                continue;
            }
            if filter.record.is_some_and(|f| !f(rec)) {
                filtered = true;
                continue;
            }
            records.push(span.slice(at..at + e.size as usize));
        }
    }
    let status = if !records.is_empty() {
        GetMessageStatus::Found
    } else if filtered {
        GetMessageStatus::NoMatchedMessage
    } else if damaged {
        GetMessageStatus::MessageWasRemoving
    } else {
        GetMessageStatus::OffsetFoundNull
    };
    Ok(Some(GetResult {
        status,
        records,
        next_begin_offset: next,
        min_offset: bounds.min,
        max_offset: bounds.max,
    }))
}

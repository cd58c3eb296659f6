//! Reads an Apache CommitLog record by record (size, magic, body CRC, physical offset) to find where
//! its data ends and what waits in it: delay-level messages, transaction half messages, and RocketMQ
//! 5 timer messages parked in `rmq_sys_wheel_timer` that no delivered copy follows yet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

use protocol::message::properties;
use protocol::message::record::{decode_view, BLANK_MAGIC_CODE, MIN_BLANK_LEN};

use crate::state::topics::{SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};

/// What the scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Offset after the last whole record.
    pub end: u64,
    pub records: u64,
    pub max_record: usize,
    /// Where and why a damaged record ended the scan (only with `--force`).
    pub cut: Option<String>,
    /// `SCHEDULE_TOPIC_XXXX` queue id -> next queue offset.
    pub schedule_ends: BTreeMap<i32, i64>,
    pub half_messages: u64,
    pub op_messages: u64,
    pub timer: TimerScan,
}

/// RocketMQ 5 timer messages in the CommitLog.
#[derive(Debug, Default)]
pub struct TimerScan {
    /// Parked records of timer queue 0 without a delivered copy: UNIQ_KEY (or offset) -> queue offset.
    pub pending: HashMap<String, i64>,
    /// Queue offsets of parked records a delivered copy follows.
    pub delivered: Vec<i64>,
    /// Next queue offset of timer queue 0.
    pub queue_end: i64,
    /// Timer queues other than 0 (Apache uses only queue 0).
    pub other_queues: BTreeSet<i32>,
}

impl TimerScan {
    /// Where our timer should start reading queue 0: the first pending parked record, else the end.
    pub fn watermark(&self) -> i64 {
        self.pending
            .values()
            .copied()
            .min()
            .unwrap_or(self.queue_end)
    }

    /// Delivered parked records at or past the watermark: our timer delivers them once more.
    pub fn redelivered(&self) -> usize {
        let w = self.watermark();
        self.delivered.iter().filter(|q| **q >= w).count()
    }
}

/// Scans the segments in order. A damaged record is an error, or with `force` the end of the data.
pub fn scan(
    segments: &BTreeMap<u64, std::path::PathBuf>,
    segment_size: u64,
    force: bool,
) -> Result<Scan, String> {
    let mut out = Scan {
        end: segments.keys().next().copied().unwrap_or(0),
        ..Scan::default()
    };
    for (&start, path) in segments {
        if out.end != start {
            // The data ended inside an earlier segment: later ones must be empty.
            if !is_zeros(path)? {
                let why = format!(
                    "{} holds data although the CommitLog ended at offset {}",
                    path.display(),
                    out.end
                );
                if !force {
                    return Err(format!("{why}; the store is damaged"));
                }
                out.cut.get_or_insert(why);
            }
            continue;
        }
        match scan_segment(path, start, segment_size, &mut out) {
            Ok(()) => {}
            Err(why) if force => {
                out.cut = Some(why);
            }
            Err(why) => {
                return Err(format!(
                    "{why}; the store is damaged (pass --force to import up to this record)"
                ))
            }
        }
    }
    Ok(out)
}

fn is_zeros(path: &Path) -> Result<bool, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if n == 0 {
            return Ok(true);
        }
        if buf.get(..n).is_some_and(|b| b.iter().any(|x| *x != 0)) {
            return Ok(false);
        }
    }
}

/// Reads one segment from its start; `out.end` advances past each whole record, and to the segment's
/// end at a blank record.
fn scan_segment(path: &Path, start: u64, size: u64, out: &mut Scan) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = std::io::BufReader::with_capacity(4 << 20, file);
    let mut pos = 0u64;
    let mut record = Vec::new();
    while pos + MIN_BLANK_LEN as u64 <= size {
        let at = |reason: String| {
            format!(
                "{} offset {pos} (store offset {}): {reason}",
                path.display(),
                start + pos
            )
        };
        let mut head = [0u8; 8];
        reader
            .read_exact(&mut head)
            .map_err(|e| at(e.to_string()))?;
        let total = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let magic = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if total == 0 && magic == 0 {
            return Ok(());
        }
        if magic == BLANK_MAGIC_CODE {
            out.end = start + size;
            return Ok(());
        }
        let len = usize::try_from(total)
            .ok()
            .filter(|n| *n >= MIN_BLANK_LEN && pos + *n as u64 <= size)
            .ok_or_else(|| at(format!("record size {total} does not fit the segment")))?;
        record.clear();
        record.extend_from_slice(&head);
        record.resize(len, 0);
        reader
            .read_exact(record.get_mut(8..).unwrap_or_default())
            .map_err(|e| at(e.to_string()))?;
        let view = decode_view(&record, true).map_err(|e| at(e.to_string()))?;
        let here = start + pos;
        if u64::try_from(view.physical_offset).ok() != Some(here) {
            return Err(at(format!(
                "the record says physical offset {}; a record out of place",
                view.physical_offset
            )));
        }
        out.records += 1;
        out.max_record = out.max_record.max(len);
        note(out, &view, here);
        pos += len as u64;
        out.end = start + pos;
    }
    out.end = start + size;
    Ok(())
}

fn note(out: &mut Scan, view: &protocol::message::record::RecordView<'_>, here: u64) {
    let uniq = properties::get(view.properties, properties::UNIQ_KEY);
    match view.topic {
        SCHEDULE_TOPIC => {
            let end = out.schedule_ends.entry(view.queue_id).or_default();
            *end = (*end).max(view.queue_offset.saturating_add(1));
        }
        TRANS_HALF_TOPIC => out.half_messages += 1,
        TRANS_OP_HALF_TOPIC => out.op_messages += 1,
        TIMER_TOPIC if view.queue_id != 0 => {
            out.timer.other_queues.insert(view.queue_id);
        }
        TIMER_TOPIC => {
            let t = &mut out.timer;
            t.queue_end = t.queue_end.max(view.queue_offset.saturating_add(1));
            // A rolled timer (a delay longer than the wheel) is parked again under the same key: the
            // newest parked copy is the one waiting.
            let key = uniq.map_or_else(|| format!("@{here}"), str::to_owned);
            if let Some(old) = t.pending.insert(key, view.queue_offset) {
                t.delivered.push(old);
            }
        }
        _ => {
            if let Some(q) = uniq.and_then(|u| out.timer.pending.remove(u)) {
                out.timer.delivered.push(q);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bytes::Bytes;
    use protocol::message::record::MessageRecord;

    pub fn record(
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
        phys: i64,
        props: &str,
    ) -> Vec<u8> {
        let addr: std::net::SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let rec = MessageRecord {
            queue_id,
            flag: 0,
            queue_offset,
            physical_offset: phys,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: addr,
            store_timestamp: 2,
            store_host: addr,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::from_static(b"hello"),
            topic: topic.to_owned(),
            properties: props.to_owned(),
        };
        let mut out = Vec::new();
        rec.encode(&mut out).unwrap();
        out
    }

    fn props(pairs: &[(&str, &str)]) -> String {
        pairs
            .iter()
            .fold(String::new(), |p, (k, v)| properties::with(&p, k, v))
    }

    /// Writes `records` back to back from offset 0 into segments of `size` (a blank record ends each).
    pub fn write_log(dir: &Path, size: u64, records: &[(&str, i32, i64, String)]) -> u64 {
        let log = dir.join("commitlog");
        std::fs::create_dir_all(&log).unwrap();
        let mut segs: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut at = 0u64;
        for (topic, qid, qoff, p) in records {
            let len = record(topic, *qid, *qoff, 0, p).len() as u64;
            if at % size + len + 8 > size {
                let seg = segs.entry(at - at % size).or_default();
                let blank = size - at % size;
                seg.extend_from_slice(&(blank as i32).to_be_bytes());
                seg.extend_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
                at += blank;
            }
            let bytes = record(topic, *qid, *qoff, at as i64, p);
            segs.entry(at - at % size)
                .or_default()
                .extend_from_slice(&bytes);
            at += len;
        }
        for (start, mut bytes) in segs {
            bytes.resize(size as usize, 0);
            std::fs::write(log.join(format!("{start:020}")), bytes).unwrap();
        }
        at
    }

    fn segments(dir: &Path) -> BTreeMap<u64, std::path::PathBuf> {
        std::fs::read_dir(dir.join("commitlog"))
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().parse().unwrap(), e.path()))
            .collect()
    }

    #[test]
    fn finds_end_delays_halves_and_pending_timers() {
        let dir = tempfile::tempdir().unwrap();
        let timer = |u: &str| props(&[(properties::UNIQ_KEY, u), ("TIMER_OUT_MS", "5")]);
        let plain = |u: &str| props(&[(properties::UNIQ_KEY, u)]);
        let end = write_log(
            dir.path(),
            4096,
            &[
                ("T", 0, 0, plain("a")),
                (TIMER_TOPIC, 0, 0, timer("t0")),
                (TIMER_TOPIC, 0, 1, timer("t1")),
                ("T", 1, 0, timer("t0")),
                (SCHEDULE_TOPIC, 2, 0, plain("d0")),
                (SCHEDULE_TOPIC, 2, 1, plain("d1")),
                (TRANS_HALF_TOPIC, 0, 0, plain("h0")),
                (TIMER_TOPIC, 0, 2, timer("t2")),
                ("T", 1, 1, timer("t2")),
            ],
        );
        let s = scan(&segments(dir.path()), 4096, false).unwrap();
        assert_eq!(s.end, end);
        assert_eq!(s.records, 9);
        assert_eq!(s.schedule_ends, BTreeMap::from([(2, 2)]));
        assert_eq!(s.half_messages, 1);
        assert_eq!(s.timer.pending.len(), 1, "{:?}", s.timer.pending);
        assert_eq!(s.timer.watermark(), 1);
        assert_eq!(
            s.timer.redelivered(),
            1,
            "t2 was delivered and sits past the watermark"
        );
        assert_eq!(s.timer.queue_end, 3);
    }

    #[test]
    fn crosses_segments_and_refuses_damage_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let p = props(&[(properties::UNIQ_KEY, "k")]);
        let records: Vec<_> = (0..60).map(|i| ("T", 0, i, p.clone())).collect();
        let end = write_log(dir.path(), 4096, &records);
        let segs = segments(dir.path());
        assert!(segs.len() > 1);
        let s = scan(&segs, 4096, false).unwrap();
        assert_eq!((s.end, s.records), (end, 60));
        // A flipped body byte in the last segment.
        let last = segs.values().last().unwrap();
        let mut bytes = std::fs::read(last).unwrap();
        let body_at = 89;
        bytes[body_at] ^= 0xff;
        std::fs::write(last, &bytes).unwrap();
        let err = scan(&segs, 4096, false).unwrap_err();
        assert!(err.contains("--force"), "{err}");
        let s = scan(&segs, 4096, true).unwrap();
        assert!(s.cut.is_some() && s.end < end && s.records < 60);
    }
}

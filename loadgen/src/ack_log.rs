//! `--acked-log FILE`: one line per message the broker acknowledged, `msgId brokerName queueId
//! queueOffset bodyLen bodyCrc32`, so `loadgen verify` can later prove that none was lost. Each
//! executor appends whole lines in single writes to the same file (O_APPEND), no lock shared.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use client::{Message, SendResult};
use protocol::message::record::body_crc;

/// Buffered lines are written once they reach this size (and at the end).
const FLUSH_AT: usize = 64 << 10;

/// One acknowledged message, as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckEntry {
    pub msg_id: String,
    pub broker_name: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub body_len: u32,
    pub body_crc: u32,
}

/// One executor's writer of the acknowledged-message log.
pub struct AckLog {
    file: File,
    buf: RefCell<Vec<u8>>,
}

/// Empties (or creates) the log before a run.
pub fn truncate(path: &Path) -> Result<(), String> {
    File::create(path)
        .map(|_| ())
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

impl AckLog {
    /// Opens the log for appending.
    pub fn open(path: &Path) -> Result<AckLog, String> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(AckLog {
            file,
            buf: RefCell::new(Vec::with_capacity(FLUSH_AT + 256)),
        })
    }

    /// Logs the messages of one acknowledged send (a batch's ids are comma-separated, offsets consecutive).
    pub fn record(&self, result: &SendResult, msgs: &[Message]) {
        let full = {
            let mut buf = self.buf.borrow_mut();
            for (i, (id, msg)) in result.msg_id.split(',').zip(msgs).enumerate() {
                let offset = result.queue_offset.saturating_add(i as i64);
                let _ = writeln!(
                    buf,
                    "{id} {} {} {offset} {} {}",
                    result.queue.broker_name,
                    result.queue.queue_id,
                    msg.body.len(),
                    body_crc(&msg.body) as u32
                );
            }
            buf.len() >= FLUSH_AT
        };
        if full {
            self.flush();
        }
    }

    /// Writes buffered lines (whole lines in one write, so executors never interleave mid-line).
    pub fn flush(&self) {
        let data = std::mem::take(&mut *self.buf.borrow_mut());
        if data.is_empty() {
            return;
        }
        if let Err(e) = (&self.file).write_all(&data) {
            eprintln!("loadgen: writing the acked log failed: {e}");
        }
    }
}

impl Drop for AckLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Parses one log line; None for a malformed one.
pub fn parse_line(line: &str) -> Option<AckEntry> {
    let mut it = line.split_ascii_whitespace();
    let entry = AckEntry {
        msg_id: it.next()?.to_owned(),
        broker_name: it.next()?.to_owned(),
        queue_id: it.next()?.parse().ok()?,
        queue_offset: it.next()?.parse().ok()?,
        body_len: it.next()?.parse().ok()?,
        body_crc: it.next()?.parse().ok()?,
    };
    it.next().is_none().then_some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use client::MessageQueue;

    #[test]
    fn lines_round_trip_and_batches_get_consecutive_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acked.log");
        truncate(&path).unwrap();
        let log = AckLog::open(&path).unwrap();
        let msgs = vec![
            Message::new("T", &b"one"[..]),
            Message::new("T", &b"second"[..]),
        ];
        let result = SendResult {
            msg_id: "AA,BB".into(),
            offset_msg_id: String::new(),
            queue: MessageQueue {
                topic: "T".into(),
                broker_name: "broker-a".into(),
                queue_id: 3,
            },
            queue_offset: 41,
        };
        log.record(&result, &msgs);
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let entries: Vec<AckEntry> = text.lines().map(|l| parse_line(l).unwrap()).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].msg_id, "AA");
        assert_eq!(entries[1].queue_offset, 42);
        assert_eq!(entries[1].body_len, 6);
        assert_eq!(entries[1].body_crc, body_crc(b"second") as u32);
        assert_eq!(entries[0].broker_name, "broker-a");
        assert!(parse_line("AA broker 1 x 3 4").is_none());
        assert!(parse_line("AA broker 1 2 3 4 extra").is_none());
        assert!(parse_line("").is_none());
    }
}

//! The epoch file (`epochFileCheckpoint`, controller mode): which master epoch wrote which part of the
//! shard's CommitLog, as `(epoch, start offset)` entries, epochs increasing. An epoch's data ends where
//! the next entry starts (the current one at the log end). A store without the file has no entries
//! (classic master/slave).
//!
//! Text format, one entry a line, a CRC-32 of everything before it on the last line:
//!
//! ```text
//! epochs 1
//! 1 0
//! 3 281474976776192
//! crc 0x<CRC-32 of the lines above, 8 hex digits>
//! ```
//!
//! Offsets are physical (shard id in the top bits). Every change writes a temp file, fsyncs it, renames
//! it over the old one and fsyncs the directory, so a crash leaves the old list or the new one; a file
//! whose CRC does not match (torn or damaged) is reported and the store does not open.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::layout::epoch_path;

const HEADER: &str = "epochs 1";
/// More entries than this is damage (one per failover).
pub const MAX_EPOCH_ENTRIES: usize = 100_000;

/// Where an epoch's data starts in the CommitLog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: u32,
    /// Physical offset of the epoch's first byte.
    pub start_offset: i64,
}

/// The epoch list of one shard and the file that keeps it.
pub(crate) struct EpochFile {
    path: PathBuf,
    entries: Vec<EpochEntry>,
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: path.display().to_string(),
        offset: 0,
        reason: reason.into(),
    }
}

/// Checks the list's order: epochs strictly increasing, starts non-negative and non-decreasing.
pub fn check_epochs(list: &[EpochEntry]) -> Result<(), String> {
    if list.len() > MAX_EPOCH_ENTRIES {
        return Err(format!("{} epoch entries is too many", list.len()));
    }
    for (i, e) in list.iter().enumerate() {
        if e.start_offset < 0 {
            return Err(format!(
                "epoch {} starts at negative offset {}",
                e.epoch, e.start_offset
            ));
        }
        if let Some(prev) = i.checked_sub(1).and_then(|p| list.get(p)) {
            if e.epoch <= prev.epoch || e.start_offset < prev.start_offset {
                return Err(format!(
                    "epoch {} at {} does not follow epoch {} at {}",
                    e.epoch, e.start_offset, prev.epoch, prev.start_offset
                ));
            }
        }
    }
    Ok(())
}

fn encode(list: &[EpochEntry]) -> String {
    let mut body = format!("{HEADER}\n");
    for e in list {
        body.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
    }
    let crc = crc32fast::hash(body.as_bytes());
    body.push_str(&format!("crc {crc:#010x}\n"));
    body
}

fn decode(path: &Path, text: &str) -> Result<Vec<EpochEntry>, StoreError> {
    let trimmed = text.strip_suffix('\n').unwrap_or(text);
    let (body, crc_line) = match trimmed.rfind('\n') {
        Some(at) => (
            trimmed.get(..=at).unwrap_or_default(),
            trimmed.get(at + 1..).unwrap_or_default(),
        ),
        None => return Err(corrupt(path, "no checksum line (torn write?)")),
    };
    let want = crc_line
        .strip_prefix("crc 0x")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(|| corrupt(path, "no checksum line (torn write?)"))?;
    let got = crc32fast::hash(body.as_bytes());
    if got != want {
        return Err(corrupt(
            path,
            format!("checksum mismatch (file says {want:#010x}, content has {got:#010x}): torn or damaged"),
        ));
    }
    let mut lines = body.lines();
    if lines.next() != Some(HEADER) {
        return Err(corrupt(path, format!("first line is not {HEADER:?}")));
    }
    let mut out = Vec::new();
    for line in lines {
        let mut parts = line.split(' ');
        let entry = match (parts.next(), parts.next(), parts.next()) {
            (Some(e), Some(s), None) => {
                e.parse::<u32>()
                    .ok()
                    .zip(s.parse::<i64>().ok())
                    .map(|(epoch, start_offset)| EpochEntry {
                        epoch,
                        start_offset,
                    })
            }
            _ => None,
        };
        out.push(entry.ok_or_else(|| corrupt(path, format!("bad entry line {line:?}")))?);
    }
    check_epochs(&out).map_err(|r| corrupt(path, r))?;
    Ok(out)
}

impl EpochFile {
    /// Reads the shard's epoch file; none means no entries.
    pub fn load(root: &Path) -> Result<EpochFile, StoreError> {
        let path = epoch_path(root);
        let entries = match std::fs::read(&path) {
            Ok(bytes) => {
                let text =
                    String::from_utf8(bytes).map_err(|_| corrupt(&path, "not UTF-8 text"))?;
                decode(&path, &text)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(StoreError::io(path.display(), e)),
        };
        Ok(EpochFile { path, entries })
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn last(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// Writes `list` atomically, then adopts it (the list in memory changes only once it is durable).
    fn save(&mut self, list: Vec<EpochEntry>) -> Result<(), StoreError> {
        if list == self.entries && self.path.exists() {
            return Ok(());
        }
        let tmp = self.path.with_extension("tmp");
        let io = |e: std::io::Error| StoreError::io(self.path.display(), e);
        {
            let mut f = std::fs::File::create(&tmp).map_err(io)?;
            f.write_all(encode(&list).as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| StoreError::io(dir.display(), e))?;
        }
        self.entries = list;
        Ok(())
    }

    /// Starts `epoch` at `start` (this shard became master). Entries with an epoch at or above it, or
    /// starting past `start`, are dropped first. Returns false, changing nothing, when `epoch` is
    /// already the last one; an epoch older than the last is refused.
    pub fn begin(&mut self, epoch: u32, start: i64) -> Result<bool, StoreError> {
        if let Some(last) = self.last() {
            if epoch < last.epoch {
                return Err(StoreError::Config(format!(
                    "epoch {epoch} is older than the store's last epoch {}",
                    last.epoch
                )));
            }
            if epoch == last.epoch && last.start_offset <= start {
                return Ok(false);
            }
        }
        let mut list: Vec<EpochEntry> = self
            .entries
            .iter()
            .copied()
            .filter(|e| e.epoch < epoch && e.start_offset <= start)
            .collect();
        list.push(EpochEntry {
            epoch,
            start_offset: start,
        });
        check_epochs(&list).map_err(StoreError::Config)?;
        self.save(list)?;
        Ok(true)
    }

    /// Drops the entries starting at or after `offset` (the log was cut there).
    pub fn truncate_from(&mut self, offset: i64) -> Result<(), StoreError> {
        let list: Vec<EpochEntry> = self
            .entries
            .iter()
            .copied()
            .filter(|e| e.start_offset < offset)
            .collect();
        if list.len() == self.entries.len() {
            return Ok(());
        }
        self.save(list)
    }

    /// Drops the entries whose data ends at or below `offset` (the log's data below it was deleted):
    /// an entry ends where the next one starts; the last one never goes.
    pub fn truncate_before(&mut self, offset: i64) -> Result<(), StoreError> {
        let keep_from = self
            .entries
            .windows(2)
            .take_while(|w| w.get(1).is_some_and(|next| next.start_offset <= offset))
            .count();
        if keep_from == 0 {
            return Ok(());
        }
        let list = self.entries.get(keep_from..).unwrap_or_default().to_vec();
        self.save(list)
    }

    /// Replaces the list (a slave adopting its master's history).
    pub fn set(&mut self, list: Vec<EpochEntry>) -> Result<(), StoreError> {
        check_epochs(&list).map_err(StoreError::Config)?;
        self.save(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(epoch: u32, start_offset: i64) -> EpochEntry {
        EpochEntry {
            epoch,
            start_offset,
        }
    }

    #[test]
    fn missing_file_means_no_entries_and_changes_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::load(dir.path()).unwrap();
        assert!(f.entries().is_empty());
        assert!(!epoch_path(dir.path()).exists());
        assert!(f.begin(1, 0).unwrap());
        assert!(
            !f.begin(1, 500).unwrap(),
            "same epoch again changes nothing"
        );
        assert!(f.begin(3, 1000).unwrap());
        assert!(f.begin(2, 2000).is_err(), "older epoch refused");
        assert_eq!(f.entries(), &[e(1, 0), e(3, 1000)]);
        let back = EpochFile::load(dir.path()).unwrap();
        assert_eq!(back.entries(), &[e(1, 0), e(3, 1000)]);
        assert!(!dir.path().join("epochFileCheckpoint.tmp").exists());
    }

    #[test]
    fn truncate_and_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::load(dir.path()).unwrap();
        f.set(vec![e(1, 0), e(2, 100), e(4, 300)]).unwrap();
        f.truncate_from(300).unwrap();
        assert_eq!(f.entries(), &[e(1, 0), e(2, 100)]);
        f.truncate_from(101).unwrap();
        assert_eq!(f.entries(), &[e(1, 0), e(2, 100)]);
        // A begin below a later start drops that entry.
        f.begin(5, 50).unwrap();
        assert_eq!(f.entries(), &[e(1, 0), e(5, 50)]);
        f.set(vec![e(1, 0), e(2, 100), e(4, 300)]).unwrap();
        f.truncate_before(99).unwrap();
        assert_eq!(f.entries(), &[e(1, 0), e(2, 100), e(4, 300)]);
        f.truncate_before(100).unwrap();
        assert_eq!(f.entries(), &[e(2, 100), e(4, 300)]);
        f.truncate_before(10_000).unwrap();
        assert_eq!(f.entries(), &[e(4, 300)], "the last entry stays");
        f.set(vec![e(1, 0), e(5, 50)]).unwrap();
        assert!(f.set(vec![e(2, 0), e(2, 10)]).is_err());
        assert!(f.set(vec![e(2, 10), e(3, 5)]).is_err());
        assert!(f.set(vec![e(2, -1)]).is_err());
        assert_eq!(
            EpochFile::load(dir.path()).unwrap().entries(),
            &[e(1, 0), e(5, 50)]
        );
    }

    #[test]
    fn torn_or_damaged_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::load(dir.path()).unwrap();
        f.set(vec![e(1, 0), e(2, 4096)]).unwrap();
        let path = epoch_path(dir.path());
        let good = std::fs::read(&path).unwrap();
        // Cut anywhere: detected.
        for cut in [0, 5, good.len() / 2, good.len() - 3] {
            std::fs::write(&path, &good[..cut]).unwrap();
            let err = EpochFile::load(dir.path())
                .err()
                .expect("torn file accepted");
            assert!(err.to_string().contains("epochFileCheckpoint"), "{err}");
        }
        // One digit changed: detected.
        let mut bad = good.clone();
        let at = bad.iter().position(|b| *b == b'4').unwrap();
        bad[at] = b'5';
        std::fs::write(&path, &bad).unwrap();
        let err = EpochFile::load(dir.path())
            .err()
            .expect("damaged file accepted");
        assert!(err.to_string().contains("checksum"), "{err}");
        std::fs::write(&path, &good).unwrap();
        assert_eq!(EpochFile::load(dir.path()).unwrap().entries().len(), 2);
    }
}

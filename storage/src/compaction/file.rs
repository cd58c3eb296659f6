//! A queue's compacted log as a file: loading it at open, writing a new one so that it replaces the
//! old one atomically, and reading its records.
//!
//! These are plain buffered files (glommio's `BufferedFile`: io_uring requests, so the shard never
//! blocks on them) made durable with fdatasync, not O_DIRECT like the CommitLog: a compacted log is
//! written rarely, once per pass, as one sequential stream, and read at arbitrary byte positions;
//! correctness matters more than speed here, and buffered I/O needs none of the alignment bookkeeping
//! of O_DIRECT. Replacement: `compacted.tmp` is written, fdatasync'ed, renamed over `compacted`, and the
//! directory is fsync'ed; a crash at any point leaves the old or the new complete file. A leftover
//! `compacted.tmp` (a pass that died) is removed when the store opens.

use std::io::Read;
use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory};

use super::format::{encode_entry, Entry, Header, ENTRY_LEN, HEADER_LEN};
use crate::error::StoreError;
use crate::fault::injected_error;

/// The compacted log of one queue, in `<root>/compaction/<topic>/<queueId>/`.
pub(crate) const LOG_FILE: &str = "compacted";
/// What a pass writes before the rename.
pub(crate) const TMP_FILE: &str = "compacted.tmp";

/// Bytes gathered before one write of a pass.
const WRITE_CHUNK: usize = 1 << 20;

/// A kept record and where it lies in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Located {
    pub queue_offset: i64,
    pub pos: u64,
    pub size: u32,
    pub tags_code: i64,
}

/// A loaded compacted log: the index in memory, the records read from the file on demand.
pub(crate) struct CompactedLog {
    /// Records of queue offsets below this are represented here (newest per key); the ConsumeQueue
    /// serves the rest.
    pub up_to: i64,
    pub entries: Vec<Located>,
    pub path: PathBuf,
    /// Open for reading; None when the log holds no record.
    file: Option<BufferedFile>,
}

fn locate(h: &Header, entries: &[Entry]) -> Vec<Located> {
    let mut pos = h.records_pos();
    entries
        .iter()
        .map(|e| {
            let l = Located {
                queue_offset: e.queue_offset,
                pos,
                size: e.size.max(0) as u32,
                tags_code: e.tags_code,
            };
            pos += u64::from(l.size);
            l
        })
        .collect()
}

impl CompactedLog {
    /// Queue offset of the first kept record.
    pub fn first_offset(&self) -> Option<i64> {
        self.entries.first().map(|e| e.queue_offset)
    }

    /// Index of the first entry at or after `offset`.
    pub fn index_of(&self, offset: i64) -> usize {
        self.entries.partition_point(|e| e.queue_offset < offset)
    }

    /// `len` bytes at `pos` of the file.
    pub async fn read(&self, pos: u64, len: usize) -> Result<Vec<u8>, StoreError> {
        let Some(file) = &self.file else {
            return Err(StoreError::io(self.path.display(), "no records"));
        };
        let r = file
            .read_at(pos, len)
            .await
            .map_err(|e| StoreError::io(self.path.display(), e))?;
        if r.len() != len {
            return Err(StoreError::Corrupt {
                path: self.path.display().to_string(),
                offset: pos,
                reason: format!("short read: {} of {len} bytes", r.len()),
            });
        }
        Ok(r.to_vec())
    }

    /// Loads the compacted log in `dir`, if there is one; removes a leftover temp file.
    pub async fn load(dir: &Path) -> Result<Option<CompactedLog>, StoreError> {
        let tmp = dir.join(TMP_FILE);
        if tmp.exists() {
            tracing::warn!(
                "removing {}: a compaction pass did not finish",
                tmp.display()
            );
            std::fs::remove_file(&tmp).map_err(|e| StoreError::io(tmp.display(), e))?;
        }
        let path = dir.join(LOG_FILE);
        let mut f = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(path.display(), e)),
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.display().to_string(),
            offset: 0,
            reason,
        };
        let len = f
            .metadata()
            .map_err(|e| StoreError::io(path.display(), e))?
            .len();
        let mut hb = [0u8; HEADER_LEN];
        f.read_exact(&mut hb).map_err(|e| corrupt(e.to_string()))?;
        let h = Header::decode(&hb).map_err(corrupt)?;
        if h.file_len() != Some(len) {
            return Err(corrupt(format!(
                "file is {len} bytes, header says {:?}",
                h.file_len()
            )));
        }
        let index_len = usize::try_from(h.count)
            .ok()
            .and_then(|c| c.checked_mul(ENTRY_LEN))
            .ok_or_else(|| corrupt("index too large".to_owned()))?;
        let mut ib = vec![0u8; index_len];
        f.read_exact(&mut ib).map_err(|e| corrupt(e.to_string()))?;
        let entries = super::format::decode_index(&h, &ib).map_err(corrupt)?;
        let file = if entries.is_empty() {
            None
        } else {
            Some(
                BufferedFile::open(&path)
                    .await
                    .map_err(|e| StoreError::io(path.display(), e))?,
            )
        };
        Ok(Some(CompactedLog {
            up_to: h.compacted_up_to,
            entries: locate(&h, &entries),
            path,
            file,
        }))
    }
}

/// Writes a new compacted log into `compacted.tmp`; [`finish`](Self::finish) makes it the log.
pub(crate) struct LogWriter {
    dir: PathBuf,
    tmp: PathBuf,
    file: Option<BufferedFile>,
    header: Header,
    entries: Vec<Entry>,
    buf: Vec<u8>,
    pos: u64,
    written_records: u64,
    shard: u16,
}

impl LogWriter {
    /// Starts the file: header and index are known before the records (the pass chose them).
    pub async fn create(
        dir: &Path,
        up_to: i64,
        entries: Vec<Entry>,
        shard: u16,
    ) -> Result<LogWriter, StoreError> {
        create_dir_durably(dir).await?;
        let mut index = Vec::with_capacity(entries.len() * ENTRY_LEN);
        for e in &entries {
            encode_entry(e, &mut index);
        }
        let header = Header {
            compacted_up_to: up_to,
            count: entries.len() as u64,
            records_len: entries.iter().map(|e| e.size.max(0) as u64).sum(),
            index_crc: crc32fast::hash(&index),
        };
        let tmp = dir.join(TMP_FILE);
        let file = BufferedFile::create(&tmp)
            .await
            .map_err(|e| StoreError::io(tmp.display(), e))?;
        let mut buf = Vec::with_capacity(WRITE_CHUNK + HEADER_LEN + index.len());
        buf.extend_from_slice(&header.encode());
        buf.extend_from_slice(&index);
        Ok(LogWriter {
            dir: dir.to_owned(),
            tmp,
            file: Some(file),
            header,
            entries,
            buf,
            pos: 0,
            written_records: 0,
            shard,
        })
    }

    /// Appends the next kept record (in index order; its size must be the index's).
    pub async fn push(&mut self, rec: &[u8]) -> Result<(), StoreError> {
        let expected = usize::try_from(self.written_records)
            .ok()
            .and_then(|i| self.entries.get(i))
            .map(|e| e.size.max(0) as usize);
        if expected != Some(rec.len()) {
            return Err(StoreError::io(
                self.tmp.display(),
                format!(
                    "record {} is {} bytes, the index says {expected:?}",
                    self.written_records,
                    rec.len()
                ),
            ));
        }
        self.buf.extend_from_slice(rec);
        self.written_records += 1;
        if self.buf.len() >= WRITE_CHUNK {
            self.write_buf().await?;
        }
        Ok(())
    }

    async fn write_buf(&mut self) -> Result<(), StoreError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut buf = std::mem::take(&mut self.buf);
        if let Some(e) = injected_error("compaction_write", self.shard) {
            // A torn temp file: half of this write reached it.
            buf.truncate(buf.len() / 2);
            let _ = file.write_at(buf, self.pos).await;
            return Err(StoreError::io(self.tmp.display(), e));
        }
        let mut at = 0usize;
        while at < buf.len() {
            let chunk = buf.get(at..).map(<[u8]>::to_vec).unwrap_or_default();
            let n = file
                .write_at(chunk, self.pos)
                .await
                .map_err(|e| StoreError::io(self.tmp.display(), e))?;
            if n == 0 {
                return Err(StoreError::io(self.tmp.display(), "write returned 0"));
            }
            at += n;
            self.pos += n as u64;
        }
        Ok(())
    }

    /// Writes what is buffered, syncs, renames over the log and syncs the directory: from then on
    /// the new log (and its progress) survives a crash. Returns it, ready for reads.
    pub async fn finish(mut self) -> Result<CompactedLog, StoreError> {
        if self.written_records != self.header.count {
            return Err(StoreError::io(
                self.tmp.display(),
                format!(
                    "{} records written, {} indexed",
                    self.written_records, self.header.count
                ),
            ));
        }
        self.write_buf().await?;
        let Some(file) = self.file.take() else {
            return Err(StoreError::io(self.tmp.display(), "already finished"));
        };
        let tmp_err = |e: &dyn std::fmt::Display| StoreError::io(self.tmp.display(), e);
        if let Some(e) = injected_error("compaction_sync", self.shard) {
            return Err(tmp_err(&e));
        }
        file.fdatasync().await.map_err(|e| tmp_err(&e))?;
        file.close().await.map_err(|e| tmp_err(&e))?;
        if let Some(e) = injected_error("compaction_rename", self.shard) {
            return Err(tmp_err(&e));
        }
        let path = self.dir.join(LOG_FILE);
        glommio::io::rename(&self.tmp, &path)
            .await
            .map_err(|e| tmp_err(&e))?;
        if let Some(e) = injected_error("compaction_dirsync", self.shard) {
            return Err(StoreError::io(self.dir.display(), e));
        }
        sync_dir(&self.dir).await?;
        let file = if self.entries.is_empty() {
            None
        } else {
            Some(
                BufferedFile::open(&path)
                    .await
                    .map_err(|e| StoreError::io(path.display(), e))?,
            )
        };
        Ok(CompactedLog {
            up_to: self.header.compacted_up_to,
            entries: locate(&self.header, &self.entries),
            path,
            file,
        })
    }
}

async fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    let d = Directory::open(dir)
        .await
        .map_err(|e| StoreError::io(dir.display(), e))?;
    d.sync()
        .await
        .map_err(|e| StoreError::io(dir.display(), e))?;
    let _ = d.close().await;
    Ok(())
}

/// Creates `dir` and makes the new directory entries durable (up to the compaction root's parent).
async fn create_dir_durably(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| !p.is_dir()) {
        missing.push(p.to_owned());
        d = p.parent();
    }
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir.display(), e))?;
    for p in missing.iter().rev() {
        if let Some(parent) = p.parent() {
            sync_dir(parent).await?;
        }
    }
    Ok(())
}

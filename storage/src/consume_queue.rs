//! One ConsumeQueue (topic, queueId): 20-byte units (CommitLog offset i64, size i32, tagsCode i64),
//! `units_per_file` per file named by its 20-digit starting byte offset. The tail is held in memory
//! from the 4 KiB block the next flush rewrites; older units are read from disk with DMA.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::io::{DmaFile, OpenOptions};

use crate::commitlog::{align_down, align_up};
use crate::error::StoreError;
use crate::layout::{consume_queue_dir, file_name, parse_file_name};

/// Bytes of one ConsumeQueue unit.
pub const CQ_UNIT: u64 = 20;

/// One ConsumeQueue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqEntry {
    pub phys: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl CqEntry {
    fn encode(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        out[..8].copy_from_slice(&self.phys.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..].copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    /// Decodes a unit; None for an empty (zero-size) slot or short input.
    pub fn decode(b: &[u8]) -> Option<CqEntry> {
        let phys = i64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let size = i32::from_be_bytes(b.get(8..12)?.try_into().ok()?);
        let tags_code = i64::from_be_bytes(b.get(12..20)?.try_into().ok()?);
        (size > 0).then_some(CqEntry {
            phys,
            size,
            tags_code,
        })
    }
}

/// A write the next flush performs.
pub(crate) struct CqWrite {
    file_start: i64,
    file: Option<Rc<DmaFile>>,
    buf: glommio::io::DmaBuffer,
    pos: u64,
}

/// The writes of one flush of a queue, and the point they make durable.
pub(crate) struct CqFlushJob {
    dir: PathBuf,
    writes: Vec<CqWrite>,
    pub target: i64,
}

pub(crate) struct ConsumeQueue {
    pub topic: String,
    pub queue_id: i32,
    dir: PathBuf,
    units_per_file: i64,
    files: BTreeMap<i64, Rc<DmaFile>>,
    pub min_offset: i64,
    pub max_offset: i64,
    /// With `consume_durable_only`: the max offset readers were told of (the records below it are
    /// durable); None when that is `max_offset`.
    pub announced_max: Option<i64>,
    pub flushed: i64,
    /// Queue byte position (`offset * 20`) of `mem[0]`; 4 KiB-aligned inside its file.
    mem_start_byte: u64,
    mem: Vec<u8>,
    /// The block at the flush point holds stale bytes on disk (after a truncate) and must be rewritten.
    rewrite_tail: bool,
}

fn io(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::io(path.display(), e)
}

impl ConsumeQueue {
    /// A new, empty queue (no files until the first flush).
    pub fn new(root: &Path, topic: &str, queue_id: i32, units_per_file: i64) -> ConsumeQueue {
        ConsumeQueue {
            topic: topic.to_owned(),
            queue_id,
            dir: consume_queue_dir(root, topic, queue_id),
            units_per_file,
            files: BTreeMap::new(),
            min_offset: 0,
            max_offset: 0,
            announced_max: None,
            flushed: 0,
            mem_start_byte: 0,
            mem: Vec::new(),
            rewrite_tail: false,
        }
    }

    fn file_start(&self, offset: i64) -> i64 {
        offset - offset.rem_euclid(self.units_per_file)
    }

    /// The 4 KiB-aligned queue byte where memory must start for a flush point `flushed`.
    fn aligned_byte(&self, flushed: i64) -> u64 {
        let file_start = self.file_start(flushed);
        let base = file_start as u64 * CQ_UNIT;
        base + align_down((flushed - file_start) as u64 * CQ_UNIT)
    }

    /// Opens an existing queue directory: finds its files, its last valid unit and loads the tail.
    pub async fn load(
        root: &Path,
        topic: &str,
        queue_id: i32,
        units_per_file: i64,
    ) -> Result<ConsumeQueue, StoreError> {
        let mut cq = ConsumeQueue::new(root, topic, queue_id, units_per_file);
        let file_bytes = units_per_file as u64 * CQ_UNIT;
        let mut starts = Vec::new();
        for entry in std::fs::read_dir(&cq.dir).map_err(|e| io(&cq.dir, e))? {
            let entry = entry.map_err(|e| io(&cq.dir, e))?;
            if let Some(byte) = entry.file_name().to_str().and_then(parse_file_name) {
                if byte % file_bytes == 0 {
                    starts.push((byte / CQ_UNIT) as i64);
                } else {
                    tracing::warn!(
                        "ignoring misnamed ConsumeQueue file {}",
                        entry.path().display()
                    );
                }
            }
        }
        starts.sort_unstable();
        for start in &starts {
            let path = cq.dir.join(file_name(*start as u64 * CQ_UNIT));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .dma_open(&path)
                .await
                .map_err(|e| io(&path, e))?;
            cq.files.insert(*start, Rc::new(file));
        }
        let (Some(&first), Some(&last)) = (starts.first(), starts.last()) else {
            return Ok(cq);
        };
        // Units are written in order, so the valid ones form a prefix of the last file: binary search.
        let count = cq.count_valid(last).await?;
        cq.max_offset = last + count;
        cq.min_offset = first;
        cq.flushed = cq.max_offset;
        cq.reload_tail().await?;
        Ok(cq)
    }

    async fn count_valid(&self, file_start: i64) -> Result<i64, StoreError> {
        let Some(file) = self.files.get(&file_start) else {
            return Ok(0);
        };
        let path = self.dir.join(file_name(file_start as u64 * CQ_UNIT));
        let size = file.file_size().await.map_err(|e| io(&path, e))?;
        let (mut lo, mut hi) = (0i64, ((size / CQ_UNIT) as i64).min(self.units_per_file));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let b = file
                .read_at(mid as u64 * CQ_UNIT, CQ_UNIT as usize)
                .await
                .map_err(|e| io(&path, e))?;
            if CqEntry::decode(&b).is_some() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Loads `[aligned(flushed), max)` from disk into memory.
    async fn reload_tail(&mut self) -> Result<(), StoreError> {
        let start_byte = self.aligned_byte(self.flushed);
        let end_byte = self.max_offset as u64 * CQ_UNIT;
        self.mem_start_byte = start_byte;
        self.mem.clear();
        if end_byte > start_byte {
            let file_start = (start_byte / CQ_UNIT) as i64;
            let file_start = self.file_start(file_start);
            let base = file_start as u64 * CQ_UNIT;
            if let Some(file) = self.files.get(&file_start) {
                let b = file
                    .read_at(start_byte - base, (end_byte - start_byte) as usize)
                    .await
                    .map_err(|e| io(&self.dir, e))?;
                self.mem.extend_from_slice(&b);
            }
            self.mem.resize((end_byte - start_byte) as usize, 0);
        }
        Ok(())
    }

    /// Appends the unit for queue offset `max_offset`.
    pub fn append(&mut self, entry: CqEntry) {
        self.mem.extend_from_slice(&entry.encode());
        self.max_offset += 1;
    }

    /// Places a unit at queue offset `offset` (recovery): drops anything at or after it first. An empty
    /// queue may start past 0 (its older units are gone); a gap in a non-empty one gets empty units.
    pub async fn put_at(&mut self, offset: i64, entry: CqEntry) -> Result<(), StoreError> {
        // QUEUEOFFSET is outside the record's CRC: a damaged one must not make recovery fill (allocate)
        // a gap of billions of units. A queue moves one unit per record, so a jump past one file of
        // units (or an absurd value) is damage: the unit goes where the queue is (as RocketMQ appends
        // at its current position), leaving no hole.
        let jump = offset.saturating_sub(self.max_offset);
        let absurd = !(0..=i64::MAX / (4 * CQ_UNIT as i64)).contains(&offset);
        // (An empty queue may legitimately start anywhere: its older units are gone.)
        let fresh = self.max_offset == 0 && self.files.is_empty();
        if absurd || (!fresh && jump > self.units_per_file) {
            tracing::error!(
                "{}/{}: record says queue offset {offset}, the queue is at {}: damaged; indexed at {}",
                self.topic,
                self.queue_id,
                self.max_offset,
                self.max_offset
            );
            self.append(entry);
            return Ok(());
        }
        if offset < self.max_offset {
            self.truncate(offset).await?;
        }
        if self.max_offset == 0 && self.files.is_empty() && offset > 0 {
            self.min_offset = offset;
            self.max_offset = offset;
            self.flushed = offset;
            self.mem_start_byte = self.aligned_byte(offset);
            self.mem = vec![0u8; (offset as u64 * CQ_UNIT - self.mem_start_byte) as usize];
        }
        while self.max_offset < offset {
            self.mem.extend_from_slice(&[0u8; CQ_UNIT as usize]);
            self.max_offset += 1;
        }
        self.append(entry);
        Ok(())
    }

    /// Drops units at and after `offset`, on disk too.
    pub async fn truncate(&mut self, offset: i64) -> Result<(), StoreError> {
        if offset >= self.max_offset {
            return Ok(());
        }
        let offset = offset.max(0);
        self.max_offset = offset;
        self.flushed = self.flushed.min(offset);
        self.min_offset = self.min_offset.min(offset);
        // Files wholly past the cut go; the file holding it is cut at the block boundary after it.
        let cut_file = self.file_start(offset);
        let doomed: Vec<i64> = self.files.range(cut_file + 1..).map(|(k, _)| *k).collect();
        for start in doomed {
            if let Some(file) = self.files.remove(&start) {
                let _ = file.remove().await;
            }
        }
        if let Some(file) = self.files.get(&cut_file) {
            let keep = align_up((offset - cut_file) as u64 * CQ_UNIT);
            file.truncate(keep).await.map_err(|e| io(&self.dir, e))?;
        }
        let cut_byte = offset as u64 * CQ_UNIT;
        if cut_byte >= self.mem_start_byte {
            // Units after the flush point live only in memory: cut there.
            self.mem.truncate((cut_byte - self.mem_start_byte) as usize);
        } else {
            self.reload_tail().await?;
        }
        self.rewrite_tail = true;
        Ok(())
    }

    /// Where runtime truncation to `offset` must rewrite this queue on disk: the file holding the unit
    /// at `offset`, the 4 KiB-aligned position (in that file) of the block holding it, and the unit's
    /// own position. None when the file is not there (nothing of it was ever flushed).
    pub fn cut_block(&self, offset: i64) -> Option<(Rc<DmaFile>, u64, u64)> {
        let file_start = self.file_start(offset);
        let file = self.files.get(&file_start)?.clone();
        let at = (offset - file_start) as u64 * CQ_UNIT;
        Some((file, align_down(at), at))
    }

    /// Adopts a runtime truncation to `offset` (every unit was durable before it): `head` holds the
    /// units of the block holding `offset` that stay. Returns the files wholly past the cut, already
    /// forgotten here, for the caller to delete.
    pub fn cut(&mut self, offset: i64, head: Vec<u8>) -> Vec<Rc<DmaFile>> {
        let cut_file = self.file_start(offset);
        let doomed: Vec<i64> = self.files.range(cut_file + 1..).map(|(k, _)| *k).collect();
        let removed = doomed
            .into_iter()
            .filter_map(|start| self.files.remove(&start))
            .collect();
        self.max_offset = offset;
        self.flushed = offset;
        self.min_offset = self.min_offset.min(offset);
        self.announced_max = self.announced_max.filter(|v| *v < offset);
        self.mem_start_byte = self.aligned_byte(offset);
        self.mem = head;
        // The caller rewrote the block on disk already.
        self.rewrite_tail = false;
        removed
    }

    /// The unit at `offset` if it is in memory.
    fn mem_entry(&self, offset: i64) -> Option<CqEntry> {
        let at = (offset as u64 * CQ_UNIT).checked_sub(self.mem_start_byte)? as usize;
        CqEntry::decode(self.mem.get(at..at + CQ_UNIT as usize)?)
    }

    /// Where units `[from, from+count)` are on disk: the file and byte position (one file at most).
    pub fn disk_span(&self, from: i64, count: i64) -> Option<(Rc<DmaFile>, u64, usize)> {
        let file_start = self.file_start(from);
        let file = self.files.get(&file_start)?.clone();
        let count = count.min(file_start + self.units_per_file - from).max(0);
        Some((
            file,
            (from - file_start) as u64 * CQ_UNIT,
            (count as u64 * CQ_UNIT) as usize,
        ))
    }

    /// Units `[from, from+count)` held in memory, or None if `from` is not in memory.
    pub fn mem_entries(&self, from: i64, count: i64) -> Option<Vec<(i64, Option<CqEntry>)>> {
        if (from as u64) * CQ_UNIT < self.mem_start_byte || from >= self.max_offset {
            return None;
        }
        let end = from.saturating_add(count).min(self.max_offset);
        Some((from..end).map(|o| (o, self.mem_entry(o))).collect())
    }

    /// Prepares the writes that make `[flushed, max)` durable; None when there is nothing to do.
    pub fn prepare_flush(&self) -> Option<CqFlushJob> {
        if self.flushed >= self.max_offset && !self.rewrite_tail {
            return None;
        }
        let end_byte = self.max_offset as u64 * CQ_UNIT;
        let mut writes = Vec::new();
        let mut b = self.aligned_byte(self.flushed);
        while b < end_byte {
            let file_start = self.file_start((b / CQ_UNIT) as i64);
            let base = file_start as u64 * CQ_UNIT;
            let file_end = base + self.units_per_file as u64 * CQ_UNIT;
            let piece_end = end_byte.min(file_end);
            let len = align_up(piece_end - b) as usize;
            let mut buf = glommio::allocate_dma_buffer(len);
            let bytes = buf.as_bytes_mut();
            bytes.fill(0);
            let from = (b - self.mem_start_byte) as usize;
            let to = (piece_end - self.mem_start_byte) as usize;
            let src = self.mem.get(from..to)?;
            bytes.get_mut(..src.len())?.copy_from_slice(src);
            writes.push(CqWrite {
                file_start,
                file: self.files.get(&file_start).cloned(),
                buf,
                pos: b - base,
            });
            b = piece_end;
        }
        Some(CqFlushJob {
            dir: self.dir.clone(),
            writes,
            target: self.max_offset,
        })
    }

    /// Records a completed flush: adopts new files and trims memory to the block the next flush rewrites.
    pub fn complete_flush(&mut self, target: i64, new_files: Vec<(i64, Rc<DmaFile>)>) {
        for (start, file) in new_files {
            self.files.entry(start).or_insert(file);
        }
        self.rewrite_tail = false;
        if target < self.flushed || target > self.max_offset {
            return;
        }
        self.flushed = target;
        let new_start = self.aligned_byte(target);
        if new_start > self.mem_start_byte {
            let drop = ((new_start - self.mem_start_byte) as usize).min(self.mem.len());
            self.mem.drain(..drop);
            self.mem_start_byte = new_start;
        }
    }

    /// The oldest file if a newer one follows it: (start, next start, file, position of its last unit).
    pub fn first_full_file(&self) -> Option<(i64, i64, Rc<DmaFile>, u64)> {
        let mut it = self.files.iter();
        let (&start, file) = it.next()?;
        let (&next_start, _) = it.next()?;
        Some((
            start,
            next_start,
            file.clone(),
            (self.units_per_file - 1) as u64 * CQ_UNIT,
        ))
    }

    /// Forgets the oldest file (the caller removes it from disk).
    pub fn drop_file(&mut self, start: i64, next_start: i64) {
        if self.files.remove(&start).is_some() {
            self.min_offset = self.min_offset.max(next_start);
        }
    }

    /// Raises `min_offset` past units pointing below `min_phys` (binary search in the first file).
    pub async fn correct_min_offset(&mut self, min_phys: i64) -> Result<(), StoreError> {
        let (mut lo, mut hi) = (self.min_offset, self.max_offset);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self.entry(mid).await?;
            if e.is_some_and(|e| e.phys >= min_phys) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.min_offset = lo;
        Ok(())
    }

    /// One unit, from memory or disk (used outside hot paths: recovery, retention).
    pub async fn entry(&self, offset: i64) -> Result<Option<CqEntry>, StoreError> {
        if let Some(v) = self.mem_entries(offset, 1) {
            return Ok(v.first().and_then(|(_, e)| *e));
        }
        let Some((file, pos, len)) = self.disk_span(offset, 1) else {
            return Ok(None);
        };
        if len == 0 {
            return Ok(None);
        }
        let b = file.read_at(pos, len).await.map_err(|e| io(&self.dir, e))?;
        Ok(CqEntry::decode(&b))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl CqFlushJob {
    /// Performs the writes and fdatasyncs (shard `shard`'s fail points apply); returns files it had
    /// to create.
    pub async fn run(mut self, shard: u16) -> Result<Vec<(i64, Rc<DmaFile>)>, StoreError> {
        let mut created = Vec::new();
        let mut synced: Vec<Rc<DmaFile>> = Vec::new();
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        for w in self.writes.drain(..) {
            let file = match w.file {
                Some(f) => f,
                None => {
                    let path = self.dir.join(file_name(w.file_start as u64 * CQ_UNIT));
                    let f = OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create(true)
                        .dma_open(&path)
                        .await
                        .map_err(|e| io(&path, e))?;
                    let f = Rc::new(f);
                    created.push((w.file_start, f.clone()));
                    f
                }
            };
            let len = w.buf.len();
            if let Some(e) = crate::fault::injected_error("consume_queue_write", shard) {
                return Err(io(&self.dir, e));
            }
            let n = file
                .write_at(w.buf, w.pos)
                .await
                .map_err(|e| io(&self.dir, e))?;
            if n != len {
                return Err(io(&self.dir, format!("short write {n} of {len}")));
            }
            if !synced.iter().any(|f| Rc::ptr_eq(f, &file)) {
                synced.push(file);
            }
        }
        crate::fault::injected_stall_at("consume_queue_stall", shard).await;
        for f in synced {
            if let Some(e) = crate::fault::injected_error("consume_queue_fdatasync", shard) {
                return Err(io(&self.dir, e));
            }
            f.fdatasync().await.map_err(|e| io(&self.dir, e))?;
        }
        Ok(created)
    }
}

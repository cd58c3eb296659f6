//! One IndexFile in RocketMQ's layout: a 40-byte header (begin/end timestamp, begin/end physical offset,
//! hash slot count, index count), `slots` 4-byte hash slots holding the newest entry of their chain, and
//! `entries` 20-byte entries (key hash i32, physical offset i64, time diff in seconds i32, previous entry
//! i32). Entry 0 is unused. The file being filled lives in memory and is written out by dirty 4 KiB pages,
//! entries before the slots and header that lead to them (`DirtyPages`); full files are only read, with
//! DMA.

use std::path::PathBuf;
use std::rc::Rc;

use glommio::io::{DmaFile, OpenOptions};

use crate::commitlog::{align_up, BLOCK};
use crate::error::StoreError;

pub const HEADER_LEN: u64 = 40;
pub const SLOT_LEN: u64 = 4;
pub const ENTRY_LEN: u64 = 20;

/// RocketMQ's `keyHashPositive` of the index key `topic#key`: Java `String.hashCode()` of that string
/// (computed without building it), made non-negative.
pub fn key_hash(topic: &str, key: &str) -> i32 {
    let fold = |h: i32, s: &str| {
        s.encode_utf16().fold(h, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        })
    };
    let h = fold(fold(fold(0, topic), "#"), key);
    h.checked_abs().unwrap_or(0)
}

/// The 40-byte header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexHeader {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy_offset: i64,
    pub end_phy_offset: i64,
    pub hash_slot_count: i32,
    pub index_count: i32,
}

impl IndexHeader {
    fn decode(b: &[u8]) -> Option<IndexHeader> {
        let i64_at = |p: usize| {
            b.get(p..p + 8)
                .and_then(|s| s.try_into().ok())
                .map(i64::from_be_bytes)
        };
        let i32_at = |p: usize| {
            b.get(p..p + 4)
                .and_then(|s| s.try_into().ok())
                .map(i32::from_be_bytes)
        };
        Some(IndexHeader {
            begin_timestamp: i64_at(0)?,
            end_timestamp: i64_at(8)?,
            begin_phy_offset: i64_at(16)?,
            end_phy_offset: i64_at(24)?,
            hash_slot_count: i32_at(32)?,
            index_count: i32_at(36)?,
        })
    }

    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        out[0..8].copy_from_slice(&self.begin_timestamp.to_be_bytes());
        out[8..16].copy_from_slice(&self.end_timestamp.to_be_bytes());
        out[16..24].copy_from_slice(&self.begin_phy_offset.to_be_bytes());
        out[24..32].copy_from_slice(&self.end_phy_offset.to_be_bytes());
        out[32..36].copy_from_slice(&self.hash_slot_count.to_be_bytes());
        out[36..40].copy_from_slice(&self.index_count.to_be_bytes());
        out
    }
}

/// The file being filled: all of it in memory plus a dirty-page map.
struct Active {
    data: Vec<u8>,
    dirty: Vec<u64>,
}

pub(crate) struct IndexFile {
    pub path: PathBuf,
    file: Rc<DmaFile>,
    slots: u32,
    entries: u32,
    pub header: IndexHeader,
    active: Option<Active>,
}

fn io(path: &std::path::Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::io(path.display(), e)
}

impl IndexFile {
    fn file_len(slots: u32, entries: u32) -> u64 {
        HEADER_LEN + u64::from(slots) * SLOT_LEN + u64::from(entries) * ENTRY_LEN
    }

    /// Creates a new, empty file (held in memory until full).
    pub async fn create(path: PathBuf, slots: u32, entries: u32) -> Result<IndexFile, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .dma_open(&path)
            .await
            .map_err(|e| io(&path, e))?;
        let len = Self::file_len(slots, entries) as usize;
        let pages = (len as u64).div_ceil(BLOCK);
        let header = IndexHeader {
            index_count: 1,
            ..IndexHeader::default()
        };
        let mut me = IndexFile {
            path,
            file: Rc::new(file),
            slots,
            entries,
            header,
            // vec! of zeros is calloc'd: pages cost memory only once touched.
            active: Some(Active {
                data: vec![0u8; len],
                dirty: vec![0u64; pages.div_ceil(64) as usize],
            }),
        };
        me.write_header();
        Ok(me)
    }

    /// Opens an existing file; a file that is not full is loaded into memory to keep filling it.
    pub async fn open(
        path: PathBuf,
        slots: u32,
        entries: u32,
        load_if_open: bool,
    ) -> Result<IndexFile, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .dma_open(&path)
            .await
            .map_err(|e| io(&path, e))?;
        let head = file
            .read_at(0, HEADER_LEN as usize)
            .await
            .map_err(|e| io(&path, e))?;
        // A crash right after creating the file leaves it empty: treat that as an empty index.
        let header = IndexHeader::decode(&head).unwrap_or_default();
        let mut me = IndexFile {
            path,
            file: Rc::new(file),
            slots,
            entries,
            header,
            active: None,
        };
        if header.index_count < 1 {
            me.header.index_count = 1;
        }
        me.header.index_count = me.count_written_entries().await?;
        let full = me.header.index_count as u32 >= entries;
        if load_if_open && !full {
            let len = Self::file_len(slots, entries) as usize;
            let mut data = vec![0u8; len];
            let mut pos = 0usize;
            while pos < len {
                let n = (len - pos).min(8 << 20);
                let b = me
                    .file
                    .read_at(pos as u64, n)
                    .await
                    .map_err(|e| io(&me.path, e))?;
                if b.is_empty() {
                    break;
                }
                let take = b.len().min(len - pos);
                if let (Some(dst), Some(src)) = (data.get_mut(pos..pos + take), b.get(..take)) {
                    dst.copy_from_slice(src);
                }
                pos += take;
            }
            let pages = (len as u64).div_ceil(BLOCK);
            me.active = Some(Active {
                data,
                dirty: vec![0u64; pages.div_ceil(64) as usize],
            });
        }
        Ok(me)
    }

    /// The index count, extended over entries written past the header's count: a crash after the
    /// slots were written but before the header (see `DirtyPages`) leaves slots that point there.
    async fn count_written_entries(&self) -> Result<i32, StoreError> {
        let entries_base = HEADER_LEN + u64::from(self.slots) * SLOT_LEN;
        let mut count = self.header.index_count.max(1) as u32;
        while count < self.entries {
            let from = entries_base + u64::from(count) * ENTRY_LEN;
            let want = (u64::from(self.entries - count) * ENTRY_LEN).min(64 * 1024) as usize;
            let chunk = self
                .file
                .read_at(from, want)
                .await
                .map_err(|e| io(&self.path, e))?;
            let written = chunk
                .chunks_exact(ENTRY_LEN as usize)
                .take_while(|e| e.iter().any(|b| *b != 0))
                .count();
            count += written as u32;
            if written * (ENTRY_LEN as usize) < want {
                break;
            }
        }
        Ok(i32::try_from(count).unwrap_or(i32::MAX))
    }

    pub fn is_full(&self) -> bool {
        self.header.index_count as u32 >= self.entries
    }

    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    fn mark(active: &mut Active, from: u64, len: u64) {
        let (first, last) = (from / BLOCK, (from + len.max(1) - 1) / BLOCK);
        for page in first..=last {
            if let Some(w) = active.dirty.get_mut((page / 64) as usize) {
                *w |= 1 << (page % 64);
            }
        }
    }

    fn write_at(active: &mut Active, pos: u64, bytes: &[u8]) {
        let p = pos as usize;
        if let Some(dst) = active.data.get_mut(p..p + bytes.len()) {
            dst.copy_from_slice(bytes);
            Self::mark(active, pos, bytes.len() as u64);
        }
    }

    fn write_header(&mut self) {
        let head = self.header.encode();
        if let Some(a) = self.active.as_mut() {
            Self::write_at(a, 0, &head);
        }
    }

    fn read_i32(active: &Active, pos: u64) -> i32 {
        let p = pos as usize;
        active
            .data
            .get(p..p + 4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, i32::from_be_bytes)
    }

    /// Adds the key whose `key_hash` is `hash` → `phys`; false when the file is full (or not in memory).
    pub fn put(&mut self, hash: i32, phys: i64, store_timestamp: i64) -> bool {
        if self.is_full() {
            return false;
        }
        let slots = self.slots;
        let Some(active) = self.active.as_mut() else {
            return false;
        };
        let slot_pos = HEADER_LEN + u64::from(hash as u32 % slots) * SLOT_LEN;
        let mut prev = Self::read_i32(active, slot_pos);
        if prev <= 0 || prev >= self.header.index_count {
            prev = 0;
            // RocketMQ's hashSlotCount counts the slots in use.
            self.header.hash_slot_count = self.header.hash_slot_count.saturating_add(1);
        }
        if self.header.begin_timestamp == 0 {
            self.header.begin_timestamp = store_timestamp;
            self.header.begin_phy_offset = phys;
        }
        let diff = ((store_timestamp - self.header.begin_timestamp) / 1000)
            .clamp(0, i64::from(i32::MAX)) as i32;
        let idx = self.header.index_count;
        let entry_pos = HEADER_LEN + u64::from(slots) * SLOT_LEN + idx as u64 * ENTRY_LEN;
        let mut entry = [0u8; 20];
        entry[0..4].copy_from_slice(&hash.to_be_bytes());
        entry[4..12].copy_from_slice(&phys.to_be_bytes());
        entry[12..16].copy_from_slice(&diff.to_be_bytes());
        entry[16..20].copy_from_slice(&prev.to_be_bytes());
        Self::write_at(active, entry_pos, &entry);
        Self::write_at(active, slot_pos, &idx.to_be_bytes());
        self.header.index_count = idx + 1;
        self.header.end_timestamp = self.header.end_timestamp.max(store_timestamp);
        self.header.end_phy_offset = self.header.end_phy_offset.max(phys);
        self.write_header();
        true
    }

    /// Looks `key` up in the in-memory copy; None if this file is not in memory.
    pub fn lookup_mem(
        &self,
        hash: i32,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Option<Vec<i64>> {
        let active = self.active.as_ref()?;
        let walk = ChainWalk::new(&self.header, self.slots, hash, begin_ms, end_ms);
        let mut out = Vec::new();
        let Some(slot_pos) = walk.start_slot() else {
            return Some(out);
        };
        let read = |pos: u64, len: usize| active.data.get(pos as usize..pos as usize + len);
        let mut idx = read(slot_pos, 4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, i32::from_be_bytes) as u64;
        let mut steps = 0u32;
        while out.len() < max && steps < self.entries {
            steps += 1;
            let Some(pos) = walk.entry_pos(idx) else {
                break;
            };
            let Some(entry) = read(pos, ENTRY_LEN as usize) else {
                break;
            };
            let (hit, prev) = walk.check(entry, idx);
            out.extend(hit);
            match prev {
                Some(p) => idx = p,
                None => break,
            }
        }
        Some(out)
    }

    /// A handle for looking keys up on disk without borrowing this file.
    pub fn reader(&self) -> IndexReader {
        IndexReader {
            path: self.path.clone(),
            file: self.file.clone(),
            slots: self.slots,
            entries: self.entries,
            header: self.header,
        }
    }

    /// Takes the dirty pages as write buffers (clearing the map), to be written by `write_pages`.
    pub fn take_dirty(&mut self) -> DirtyPages {
        let entries_base = HEADER_LEN + u64::from(self.slots) * SLOT_LEN;
        let Some(active) = self.active.as_mut() else {
            return DirtyPages::default();
        };
        // Runs of contiguous dirty pages; a run holds either only entry pages or none.
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (w, word) in active.dirty.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                let page = w as u64 * 64 + b;
                let same_part =
                    |start: u64| (start * BLOCK >= entries_base) == (page * BLOCK >= entries_base);
                match runs.last_mut() {
                    Some((start, n)) if *start + *n == page && *n < 256 && same_part(*start) => {
                        *n += 1
                    }
                    _ => runs.push((page, 1)),
                }
            }
        }
        let len = active.data.len() as u64;
        let data = &active.data;
        let buffer = |(page, n): (u64, u64)| {
            let from = page * BLOCK;
            let to = ((page + n) * BLOCK).min(len);
            let mut buf = glommio::allocate_dma_buffer(align_up(to - from) as usize);
            let bytes = buf.as_bytes_mut();
            bytes.fill(0);
            if let (Some(dst), Some(src)) = (
                bytes.get_mut(..(to - from) as usize),
                data.get(from as usize..to as usize),
            ) {
                dst.copy_from_slice(src);
            }
            (from, buf)
        };
        let (entry_runs, head_runs): (Vec<_>, Vec<_>) = runs
            .into_iter()
            .partition(|(page, _)| page * BLOCK >= entries_base);
        DirtyPages {
            entries: entry_runs.into_iter().map(buffer).collect(),
            // Highest first: the header page goes last.
            heads: head_runs.into_iter().rev().map(buffer).collect(),
        }
    }

    pub fn file(&self) -> Rc<DmaFile> {
        self.file.clone()
    }

    /// Marks pages taken with `take_dirty` dirty again (their write failed): `(position, length)`
    /// as `DirtyPages::ranges` gives them.
    pub fn redirty(&mut self, ranges: &[(u64, u64)]) {
        if let Some(active) = self.active.as_mut() {
            for &(from, len) in ranges {
                Self::mark(active, from, len);
            }
        }
    }

    /// Drops the in-memory copy of a full file whose pages were all written.
    pub fn seal(&mut self) {
        if self.is_full() {
            self.active = None;
        }
    }
}

/// Dirty pages of an in-memory file in the order they must reach the disk.
///
/// A hash slot or the header may only be durable once the entries it leads to are, or a crash between
/// two writes leaves a slot pointing at an entry that is still zeros and cuts off the older entries of
/// its chain (which recovery does not rebuild: they lie below the checkpoint). So the pages holding only
/// entries are written and synced first; then the pages with slots, highest first, so the header (page
/// 0) is last. A crash in the second step leaves a header whose index count is behind slots that point
/// at written entries: `IndexFile::open` counts those entries back in.
#[derive(Default)]
pub(crate) struct DirtyPages {
    /// Pages wholly in the entry area.
    pub entries: Vec<(u64, glommio::io::DmaBuffer)>,
    /// Pages holding the header or slots (and maybe the first entries), in write order.
    pub heads: Vec<(u64, glommio::io::DmaBuffer)>,
}

impl DirtyPages {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.heads.is_empty()
    }

    /// Where each page run goes: `(position, length)`.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.entries
            .iter()
            .chain(&self.heads)
            .map(|(pos, buf)| (*pos, buf.len() as u64))
            .collect()
    }

    /// Every write in order, with a sync after the entry pages (a None).
    fn steps(self) -> impl Iterator<Item = Option<(u64, glommio::io::DmaBuffer)>> {
        let sync = (!self.entries.is_empty() && !self.heads.is_empty()).then_some(None);
        self.entries
            .into_iter()
            .map(Some)
            .chain(sync)
            .chain(self.heads.into_iter().map(Some))
    }
}

/// Writes pages taken with `take_dirty` in their order and syncs the file (shard `shard`'s fail
/// points apply).
pub(crate) async fn write_pages(
    file: Rc<DmaFile>,
    path: PathBuf,
    pages: DirtyPages,
    shard: u16,
) -> Result<(), StoreError> {
    write_steps(&file, &path, pages, usize::MAX, shard).await
}

/// Does the first `limit` writes of `pages` (syncs are not counted); all of them and a final sync when
/// `limit` is not reached. A limit models a crash part way.
async fn write_steps(
    file: &DmaFile,
    path: &std::path::Path,
    pages: DirtyPages,
    limit: usize,
    shard: u16,
) -> Result<(), StoreError> {
    if pages.is_empty() {
        return Ok(());
    }
    let sync = || async {
        if let Some(e) = crate::fault::injected_error("index_fdatasync", shard) {
            return Err(io(path, e));
        }
        file.fdatasync().await.map_err(|e| io(path, e))
    };
    let mut done = 0usize;
    for step in pages.steps() {
        let Some((pos, buf)) = step else {
            sync().await?;
            continue;
        };
        if done == limit {
            return Ok(());
        }
        done += 1;
        let len = buf.len();
        if let Some(e) = crate::fault::injected_error("index_write", shard) {
            return Err(io(path, e));
        }
        let n = file.write_at(buf, pos).await.map_err(|e| io(path, e))?;
        if n != len {
            return Err(io(path, format!("short write {n} of {len}")));
        }
    }
    sync().await
}

/// The rules of walking one hash chain, shared by the memory and disk lookups.
struct ChainWalk {
    hash: i32,
    slot_pos: u64,
    entries_base: u64,
    index_count: i32,
    begin_timestamp: i64,
    end_timestamp: i64,
    begin_ms: i64,
    end_ms: i64,
}

impl ChainWalk {
    fn new(header: &IndexHeader, slots: u32, hash: i32, begin_ms: i64, end_ms: i64) -> ChainWalk {
        ChainWalk {
            hash,
            slot_pos: HEADER_LEN + u64::from(hash as u32 % slots.max(1)) * SLOT_LEN,
            entries_base: HEADER_LEN + u64::from(slots) * SLOT_LEN,
            index_count: header.index_count,
            begin_timestamp: header.begin_timestamp,
            end_timestamp: header.end_timestamp,
            begin_ms,
            end_ms,
        }
    }

    /// The slot's position, or None when the file holds no entries in the queried time range.
    fn start_slot(&self) -> Option<u64> {
        let overlaps =
            self.end_timestamp + 999 >= self.begin_ms && self.begin_timestamp <= self.end_ms;
        (self.index_count > 1 && overlaps).then_some(self.slot_pos)
    }

    fn entry_pos(&self, idx: u64) -> Option<u64> {
        (idx > 0 && idx < self.index_count as u64).then(|| self.entries_base + idx * ENTRY_LEN)
    }

    /// The physical offset if the entry matches, and the previous entry of the chain.
    fn check(&self, e: &[u8], idx: u64) -> (Option<i64>, Option<u64>) {
        let i32_at = |p: usize| {
            e.get(p..p + 4)
                .and_then(|s| s.try_into().ok())
                .map_or(0, i32::from_be_bytes)
        };
        let phys = e
            .get(4..12)
            .and_then(|s| s.try_into().ok())
            .map_or(-1, i64::from_be_bytes);
        let ts = self.begin_timestamp + i64::from(i32_at(12)) * 1000;
        let prev = i32_at(16);
        // Seconds resolution: an entry's true time lies in [ts, ts + 999].
        let hit =
            (i32_at(0) == self.hash && ts + 999 >= self.begin_ms && ts <= self.end_ms && phys >= 0)
                .then_some(phys);
        let prev = (prev > 0 && (prev as u64) < idx).then_some(prev as u64);
        (hit, prev)
    }
}

/// A full index file looked up with DMA reads.
pub(crate) struct IndexReader {
    path: PathBuf,
    file: Rc<DmaFile>,
    slots: u32,
    entries: u32,
    pub header: IndexHeader,
}

impl IndexReader {
    async fn read(&self, pos: u64, len: usize) -> Result<Vec<u8>, StoreError> {
        self.file
            .read_at(pos, len)
            .await
            .map(|b| b.to_vec())
            .map_err(|e| io(&self.path, e))
    }

    pub async fn lookup(
        &self,
        hash: i32,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let walk = ChainWalk::new(&self.header, self.slots, hash, begin_ms, end_ms);
        let mut out = Vec::new();
        let Some(slot_pos) = walk.start_slot() else {
            return Ok(out);
        };
        let slot = self.read(slot_pos, 4).await?;
        let mut idx = slot
            .get(..4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, i32::from_be_bytes) as u64;
        let mut steps = 0u32;
        while out.len() < max && steps < self.entries {
            steps += 1;
            let Some(pos) = walk.entry_pos(idx) else {
                break;
            };
            let entry = self.read(pos, ENTRY_LEN as usize).await?;
            let (hit, prev) = walk.check(&entry, idx);
            out.extend(hit);
            match prev {
                Some(p) => idx = p,
                None => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_executor<Fut: std::future::Future<Output = ()> + 'static>(
        f: impl FnOnce() -> Fut + Send + 'static,
    ) {
        glommio::LocalExecutorBuilder::default()
            .spawn(f)
            .expect("spawn executor")
            .join()
            .expect("executor thread");
    }

    // 2048 slots: the slot area ends in page 2, which also holds entries 0..=202; page 3 on holds only
    // entries. Key A (slot 2040, in page 2) is durable; then key B of the same slot is added as entry
    // 451 (page 4), so the next flush has three dirty pages: 0 (header), 2 (slot), 4 (entry).
    const SLOTS: u32 = 2048;
    const ENTRIES: u32 = 2000;
    const HASH_A: i32 = 2040;
    const HASH_B: i32 = 2040 + 2048;
    const PHYS_A: i64 = 1000;
    const PHYS_B: i64 = 9_000_000;

    /// A file where A is durable and B is in memory only; returns it and B's dirty pages.
    async fn file_with_durable_a(path: PathBuf) -> (IndexFile, DirtyPages) {
        let mut f = IndexFile::create(path.clone(), SLOTS, ENTRIES)
            .await
            .expect("create");
        assert!(f.put(HASH_A, PHYS_A, 1_000_000));
        for i in 0..449 {
            // Slots 100..999, in page 0.
            assert!(f.put(100 + i % 900, 2000 + i64::from(i), 1_000_000));
        }
        let pages = f.take_dirty();
        write_pages(f.file(), path.clone(), pages, 0)
            .await
            .expect("flush");
        assert!(f.put(HASH_B, PHYS_B, 1_001_000));
        assert_eq!(f.header.index_count, 452);
        let pages = f.take_dirty();
        assert_eq!((pages.entries.len(), pages.heads.len()), (1, 2));
        (f, pages)
    }

    #[test]
    fn a_flush_cut_short_by_a_crash_keeps_older_keys_of_the_chain() {
        in_executor(|| async {
            let dir = tempfile::tempdir().expect("tempdir");
            crate::probe::prime_dma_detection(dir.path())
                .await
                .expect("probe");
            // A crash after each number of completed writes of the second flush.
            for done in 0..=3 {
                let path = dir.path().join(format!("index-{done}"));
                let (f, pages) = file_with_durable_a(path.clone()).await;
                write_steps(&f.file(), &path, pages, done, 0)
                    .await
                    .expect("writes");
                drop(f);
                // As a full older file, read from disk.
                let on_disk = IndexFile::open(path.clone(), SLOTS, ENTRIES, false)
                    .await
                    .expect("open");
                let hits = on_disk
                    .reader()
                    .lookup(HASH_A, 4, 0, i64::MAX)
                    .await
                    .expect("lookup");
                assert_eq!(hits, vec![PHYS_A], "A on disk after {done} writes");
                drop(on_disk);
                // As the newest file: recovery adds B again (it is past the checkpoint).
                let mut f = IndexFile::open(path, SLOTS, ENTRIES, true)
                    .await
                    .expect("open");
                assert!(f.put(HASH_B, PHYS_B, 1_001_000));
                let a = f.lookup_mem(HASH_A, 4, 0, i64::MAX).expect("in memory");
                assert_eq!(a, vec![PHYS_A], "A after {done} writes and recovery");
                let b = f.lookup_mem(HASH_B, 4, 0, i64::MAX).expect("in memory");
                assert_eq!(
                    b.first(),
                    Some(&PHYS_B),
                    "B after {done} writes and recovery"
                );
            }
        });
    }

    #[test]
    fn key_hash_is_java_hash_of_topic_hash_key() {
        let joined = protocol::message::properties::java_string_hash("TopicA#k1");
        assert_eq!(key_hash("TopicA", "k1"), joined.checked_abs().unwrap_or(0));
        assert!(key_hash("some-long-topic-name", "a-long-key-that-overflows") >= 0);
    }
}

//! The IndexService: the shard's IndexFiles (`index/<20-digit creation ms>`), keyed `topic#key` for each
//! record's `UNIQ_KEY` and `KEYS`, oldest first; the newest one is filled in memory.

use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::index_file::{key_hash, write_pages, DirtyPages, IndexFile, IndexReader};
use crate::layout::{file_name, index_dir, parse_file_name};

/// Dirty pages of one in-memory index file: (file, path, pages, file is full).
pub(crate) type IndexFlushWork =
    Vec<(std::rc::Rc<glommio::io::DmaFile>, PathBuf, DirtyPages, bool)>;

pub(crate) struct IndexService {
    pub dir: PathBuf,
    slots: u32,
    entries: u32,
    pub files: Vec<IndexFile>,
    /// Key hashes that arrived while no file had room; put into the next file when it exists.
    pending: Vec<(i32, i64, i64)>,
    creating: bool,
}

impl IndexService {
    pub async fn load(root: &Path, slots: u32, entries: u32) -> Result<IndexService, StoreError> {
        let dir = index_dir(root);
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(dir.display(), e))?;
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| StoreError::io(dir.display(), e))? {
            let entry = entry.map_err(|e| StoreError::io(dir.display(), e))?;
            if let Some(n) = entry.file_name().to_str().and_then(parse_file_name) {
                names.push(n);
            }
        }
        names.sort_unstable();
        let mut files = Vec::new();
        let last = names.last().copied();
        for n in names {
            files.push(
                IndexFile::open(dir.join(file_name(n)), slots, entries, Some(n) == last).await?,
            );
        }
        Ok(IndexService {
            dir,
            slots,
            entries,
            files,
            pending: Vec::new(),
            creating: false,
        })
    }

    /// Adds `key` of `topic` (index key `topic#key`); false when a new file must be created first (the
    /// key is kept pending).
    pub fn put(&mut self, topic: &str, key: &str, phys: i64, store_timestamp: i64) -> bool {
        let hash = key_hash(topic, key);
        if self.pending.is_empty() {
            if let Some(f) = self.files.last_mut() {
                if f.put(hash, phys, store_timestamp) {
                    return true;
                }
            }
        }
        self.pending.push((hash, phys, store_timestamp));
        false
    }

    /// Path for a new file (creation time in ms, made unique) when one is needed and not being made.
    pub fn begin_new_file(&mut self, now_ms: i64) -> Option<PathBuf> {
        if self.creating || self.pending.is_empty() {
            return None;
        }
        self.creating = true;
        let mut n = now_ms.max(0) as u64;
        while self.dir.join(file_name(n)).exists() {
            n += 1;
        }
        Some(self.dir.join(file_name(n)))
    }

    /// Whether keys wait for a file (they are not durable yet).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub fn slots_entries(&self) -> (u32, u32) {
        (self.slots, self.entries)
    }

    /// Adopts a newly created file and moves pending keys into it.
    pub fn finish_new_file(&mut self, file: Option<IndexFile>) {
        self.creating = false;
        let Some(file) = file else { return };
        self.files.push(file);
        let pending = std::mem::take(&mut self.pending);
        let mut rest = pending.into_iter();
        for (hash, phys, ts) in rest.by_ref() {
            let ok = self.files.last_mut().is_some_and(|f| f.put(hash, phys, ts));
            if !ok {
                self.pending.push((hash, phys, ts));
                break;
            }
        }
        self.pending.extend(rest);
    }

    /// In-memory lookups now, and readers for the files that must be read from disk.
    pub fn lookup_plan(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> (i32, Vec<i64>, Vec<IndexReader>) {
        let key = key_hash(topic, key);
        // Keys waiting for the next file are searchable too (newest first).
        let mut found: Vec<i64> = self
            .pending
            .iter()
            .rev()
            .filter(|(h, _, ts)| *h == key && *ts + 999 >= begin_ms && *ts <= end_ms)
            .map(|(_, p, _)| *p)
            .collect();
        let mut readers = Vec::new();
        for f in self.files.iter().rev() {
            match f.lookup_mem(key, max, begin_ms, end_ms) {
                Some(hits) => found.extend(hits),
                None => readers.push(f.reader()),
            }
        }
        (key, found, readers)
    }

    /// Dirty pages of in-memory files, to write with `write_pages`, and which files are full.
    pub fn take_flush_work(&mut self) -> IndexFlushWork {
        self.files
            .iter_mut()
            .filter(|f| f.is_active())
            .map(|f| (f.file(), f.path.clone(), f.take_dirty(), f.is_full()))
            .collect()
    }

    /// Marks pages of the file at `path` dirty again after their write failed.
    fn redirty(&mut self, path: &Path, ranges: &[(u64, u64)]) {
        if let Some(f) = self.files.iter_mut().find(|f| f.path == path) {
            f.redirty(ranges);
        }
    }

    /// Drops the memory of full files once written.
    pub fn seal_full(&mut self, paths: &[PathBuf]) {
        for f in self.files.iter_mut().filter(|f| paths.contains(&f.path)) {
            f.seal();
        }
    }

    /// Removes files wholly below `min_phys` (never the newest); returns their paths.
    pub fn take_files_below(&mut self, min_phys: i64) -> Vec<PathBuf> {
        let mut out = Vec::new();
        while self.files.len() > 1 {
            match self.files.first() {
                Some(f) if f.header.index_count > 1 && f.header.end_phy_offset < min_phys => {
                    out.push(self.files.remove(0).path);
                }
                _ => break,
            }
        }
        out
    }
}

/// Flushes the dirty pages of the in-memory index files (shard `shard`'s fail points apply) and
/// seals the full files once written. After a failed write or sync the pages of that file and of the
/// files not reached yet are marked dirty again: the next round writes them, and the checkpoint (which
/// does not move past a failed round) never covers keys whose pages are not durable.
pub(crate) async fn flush_index(
    index: &std::cell::RefCell<IndexService>,
    shard: u16,
) -> Result<(), StoreError> {
    let work = index.borrow_mut().take_flush_work();
    let mut full = Vec::new();
    let mut work = work.into_iter();
    while let Some((file, path, pages, is_full)) = work.next() {
        let ranges = pages.ranges();
        if let Err(e) = write_pages(file, path.clone(), pages, shard).await {
            let mut index = index.borrow_mut();
            index.redirty(&path, &ranges);
            for (_, path, pages, _) in work {
                index.redirty(&path, &pages.ranges());
            }
            return Err(e);
        }
        if is_full {
            full.push(path);
        }
    }
    index.borrow_mut().seal_full(&full);
    Ok(())
}

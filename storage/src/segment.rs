//! CommitLog segment files: `commitlog/<20-digit shard-local start offset>`, preallocated to full size,
//! opened once for both DMA reads and writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use glommio::io::{DmaFile, OpenOptions};

use crate::error::StoreError;
use crate::layout::{file_name, parse_file_name};

/// An open segment.
pub(crate) struct Segment {
    pub start: u64,
    pub path: PathBuf,
    pub file: DmaFile,
}

pub(crate) type SegmentMap = BTreeMap<u64, Rc<Segment>>;

/// Opens (creating if asked) the segment starting at `start`, preallocated to `size` bytes.
pub(crate) async fn open_segment(
    dir: &Path,
    start: u64,
    size: u64,
    create: bool,
) -> Result<Rc<Segment>, StoreError> {
    let path = dir.join(file_name(start));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .dma_open(&path)
        .await
        .map_err(|e| StoreError::io(path.display(), e))?;
    let len = file
        .file_size()
        .await
        .map_err(|e| StoreError::io(path.display(), e))?;
    if len < size {
        file.pre_allocate(size, false)
            .await
            .map_err(|e| StoreError::io(path.display(), e))?;
        file.fdatasync()
            .await
            .map_err(|e| StoreError::io(path.display(), e))?;
        // Make the new name durable too (once per segment, so a blocking call is acceptable).
        if create {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| StoreError::io(dir.display(), e))?;
        }
    }
    Ok(Rc::new(Segment { start, path, file }))
}

/// Lists and opens every segment in `dir` (created if missing); other names are ignored.
pub(crate) async fn open_all(dir: &Path, size: u64) -> Result<SegmentMap, StoreError> {
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir.display(), e))?;
    let mut starts = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io(dir.display(), e))? {
        let entry = entry.map_err(|e| StoreError::io(dir.display(), e))?;
        if let Some(start) = entry.file_name().to_str().and_then(parse_file_name) {
            if start % size != 0 {
                return Err(StoreError::Corrupt {
                    path: entry.path().display().to_string(),
                    offset: 0,
                    reason: format!("segment name is not a multiple of the segment size {size}"),
                });
            }
            starts.push(start);
        }
    }
    starts.sort_unstable();
    let mut map = SegmentMap::new();
    for start in starts {
        map.insert(start, open_segment(dir, start, size, false).await?);
    }
    Ok(map)
}

impl Segment {
    /// Reads `len` bytes at `pos` inside the segment (short at end of file).
    pub async fn read(&self, pos: u64, len: usize) -> Result<Bytes, StoreError> {
        if let Some(e) = crate::fault::injected_read_error(&self.path) {
            return Err(StoreError::io(self.path.display(), e));
        }
        let res = self
            .file
            .read_at(pos, len)
            .await
            .map_err(|e| StoreError::io(self.path.display(), e))?;
        Ok(Bytes::copy_from_slice(&res))
    }
}

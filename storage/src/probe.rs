//! Works around glommio's first-file trap (DataDog/glommio#605, #670).
//!
//! An executor decides whether the device supports polled I/O from a read of the first DMA file it
//! opens on that device. If that file is empty or only fallocated, the probe read "succeeds" and every
//! later O_DIRECT read fails with `Operation not supported` (os error 95). So before the store opens
//! anything, it opens a small file holding real data and reads it, which records the right answer
//! for the device in this executor thread.

use std::path::Path;

use glommio::io::DmaFile;

use crate::error::StoreError;
use crate::layout::probe_path;

/// Opens and reads a 4 KiB file of real data in `dir` through DMA, in the current executor.
pub async fn prime_dma_detection(dir: &Path) -> Result<(), StoreError> {
    let path = probe_path(dir);
    let block = vec![0xA5u8; 4096];
    // Plain std I/O on purpose: this file must be written before any DmaFile is opened.
    let needs_write = std::fs::read(&path).map(|b| b != block).unwrap_or(true);
    if needs_write {
        std::fs::write(&path, &block).map_err(|e| StoreError::io(path.display(), e))?;
    }
    let file = DmaFile::open(&path)
        .await
        .map_err(|e| StoreError::io(path.display(), e))?;
    let read = file
        .read_at_aligned(0, 4096)
        .await
        .map_err(|e| StoreError::io(path.display(), e));
    let _ = file.close().await;
    let read = read?;
    if read.len() != 4096 {
        return Err(StoreError::io(
            path.display(),
            "short read from DMA probe file",
        ));
    }
    Ok(())
}

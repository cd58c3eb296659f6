//! The `checkpoint` file: how far the CommitLog is durable, up to where every ConsumeQueue unit and
//! index key is durable, and the confirm offset (RocketMQ 5's `confirmPhyOffset`). Two 4 KiB slots
//! written alternately (each with a CRC), so a torn write of one leaves the other. Slots written
//! before the confirm offset was kept ("RMQC") are still read, without one.

use std::path::{Path, PathBuf};

use glommio::io::{DmaFile, OpenOptions};

use crate::error::StoreError;
use crate::layout::checkpoint_path;

/// The layout without the confirm offset.
const MAGIC_V1: u32 = 0x524D_5143; // "RMQC"
const BODY_LEN_V1: usize = 4 + 8 + 8 + 8 + 8;
/// The layout with the confirm offset after the timestamp.
const MAGIC: u32 = 0x524D_5144; // "RMQD"
const BODY_LEN: usize = BODY_LEN_V1 + 8;
const SLOT: u64 = 4096;
/// The confirm-offset field of a checkpoint that has none.
const NO_CONFIRM: u64 = u64::MAX;

/// One saved checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: u64,
    /// Shard-local CommitLog offset up to which data is durable.
    pub commitlog_flushed: u64,
    /// Shard-local CommitLog offset below which all ConsumeQueue units and index keys are durable.
    pub dispatch_durable: u64,
    pub timestamp_ms: i64,
    /// Shard-local CommitLog offset up to which every record was confirmed (controller mode: held
    /// by every in-sync replica) when this checkpoint was written; None in a checkpoint written
    /// before it was kept.
    pub confirm_offset: Option<u64>,
}

impl Checkpoint {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(BODY_LEN + 4);
        b.extend_from_slice(&MAGIC.to_be_bytes());
        b.extend_from_slice(&self.seq.to_be_bytes());
        b.extend_from_slice(&self.commitlog_flushed.to_be_bytes());
        b.extend_from_slice(&self.dispatch_durable.to_be_bytes());
        b.extend_from_slice(&self.timestamp_ms.to_be_bytes());
        b.extend_from_slice(&self.confirm_offset.unwrap_or(NO_CONFIRM).to_be_bytes());
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Checkpoint> {
        let body_len = match u32::from_be_bytes(b.get(..4)?.try_into().ok()?) {
            MAGIC => BODY_LEN,
            MAGIC_V1 => BODY_LEN_V1,
            _ => return None,
        };
        let body = b.get(..body_len)?;
        let crc = u32::from_be_bytes(b.get(body_len..body_len + 4)?.try_into().ok()?);
        if crc32fast::hash(body) != crc {
            return None;
        }
        let u64_at = |p: usize| {
            body.get(p..p + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_be_bytes)
        };
        let confirm_offset = if body_len == BODY_LEN {
            Some(u64_at(36)?).filter(|&c| c != NO_CONFIRM)
        } else {
            None
        };
        Some(Checkpoint {
            seq: u64_at(4)?,
            commitlog_flushed: u64_at(12)?,
            dispatch_durable: u64_at(20)?,
            timestamp_ms: u64_at(28)? as i64,
            confirm_offset,
        })
    }

    /// Reads the newest valid slot (plain reads: done once at open).
    pub fn read(root: &Path) -> Option<Checkpoint> {
        let bytes = std::fs::read(checkpoint_path(root)).ok()?;
        let a = bytes.get(..SLOT as usize).and_then(Checkpoint::decode);
        let b = bytes.get(SLOT as usize..).and_then(Checkpoint::decode);
        match (a, b) {
            (Some(a), Some(b)) => Some(if a.seq >= b.seq { a } else { b }),
            (a, b) => a.or(b),
        }
    }
}

/// Writes checkpoints through DMA with fdatasync.
pub(crate) struct CheckpointWriter {
    path: PathBuf,
    file: DmaFile,
    seq: u64,
    /// Whose fail points apply.
    shard: u16,
}

impl CheckpointWriter {
    pub async fn open(
        root: &Path,
        last_seq: u64,
        shard: u16,
    ) -> Result<CheckpointWriter, StoreError> {
        let path = checkpoint_path(root);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .dma_open(&path)
            .await
            .map_err(|e| StoreError::io(path.display(), e))?;
        Ok(CheckpointWriter {
            path,
            file,
            seq: last_seq,
            shard,
        })
    }

    /// Writes `cp` into the slot the previous checkpoint is not in. A failed write leaves the
    /// sequence where it was, so the next write goes to the same slot again: the slot a failed write
    /// may have torn is rewritten, and the other slot, with the newest good checkpoint, is kept.
    pub async fn write(&mut self, cp: Checkpoint) -> Result<(), StoreError> {
        self.seq += 1;
        let res = self.write_slot(cp).await;
        if res.is_err() {
            self.seq -= 1;
        }
        res
    }

    async fn write_slot(&mut self, mut cp: Checkpoint) -> Result<(), StoreError> {
        cp.seq = self.seq;
        let body = cp.encode();
        let mut buf = self.file.alloc_dma_buffer(SLOT as usize);
        let bytes = buf.as_bytes_mut();
        bytes.fill(0);
        if let Some(dst) = bytes.get_mut(..body.len()) {
            dst.copy_from_slice(&body);
        }
        let pos = (self.seq % 2) * SLOT;
        let io = |e: std::io::Error| StoreError::io(self.path.display(), e);
        if let Some(e) = crate::fault::injected_error("checkpoint_write", self.shard) {
            return Err(io(e));
        }
        self.file
            .write_at(buf, pos)
            .await
            .map_err(|e| StoreError::io(self.path.display(), e))?;
        if let Some(e) = crate::fault::injected_error("checkpoint_fdatasync", self.shard) {
            return Err(io(e));
        }
        self.file
            .fdatasync()
            .await
            .map_err(|e| StoreError::io(self.path.display(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_and_crc() {
        let cp = Checkpoint {
            seq: 3,
            commitlog_flushed: 4096,
            dispatch_durable: 100,
            timestamp_ms: 7,
            confirm_offset: Some(4000),
        };
        let mut b = cp.encode();
        assert_eq!(Checkpoint::decode(&b), Some(cp));
        let none = Checkpoint {
            confirm_offset: None,
            ..cp
        };
        assert_eq!(Checkpoint::decode(&none.encode()), Some(none));
        b[14] ^= 1;
        assert_eq!(Checkpoint::decode(&b), None);
    }

    /// A slot written before the confirm offset was kept still reads, without one.
    #[test]
    fn a_slot_without_the_confirm_offset_still_reads() {
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC_V1.to_be_bytes());
        for v in [5u64, 8192, 4096, 9] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_be_bytes());
        b.resize(SLOT as usize, 0);
        assert_eq!(
            Checkpoint::decode(&b),
            Some(Checkpoint {
                seq: 5,
                commitlog_flushed: 8192,
                dispatch_durable: 4096,
                timestamp_ms: 9,
                confirm_offset: None,
            })
        );
    }

    /// After a failed write the next one goes to the same slot: the slot holding the newest good
    /// checkpoint is not overwritten until a write after the failure succeeded (before 2026-12-07
    /// it was the next one overwritten, leaving only the stale slot and the failed one).
    #[cfg(feature = "failpoints")]
    #[test]
    fn a_failed_write_is_retried_in_its_own_slot() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let dir = tempfile::tempdir().expect("tempdir");
                let root = dir.path();
                let mut w = CheckpointWriter::open(root, 0, 40).await.expect("open");
                let at = |flushed: u64| Checkpoint {
                    commitlog_flushed: flushed,
                    ..Checkpoint::default()
                };
                w.write(at(100)).await.expect("first");
                w.write(at(200)).await.expect("second");
                crate::fault::set("checkpoint_write@40", "1*return").expect("fail point");
                assert!(w.write(at(300)).await.is_err(), "the fail point fires");
                crate::fault::clear("checkpoint_write@40");
                w.write(at(400)).await.expect("after the failure");
                let bytes = std::fs::read(checkpoint_path(root)).expect("read");
                let slots: Vec<u64> = [0, SLOT as usize]
                    .iter()
                    .filter_map(|&at| bytes.get(at..).and_then(Checkpoint::decode))
                    .map(|c| c.commitlog_flushed)
                    .collect();
                assert!(
                    slots.contains(&200),
                    "the newest checkpoint before the failure was overwritten: slots hold {slots:?}"
                );
                assert_eq!(
                    Checkpoint::read(root).map(|c| c.commitlog_flushed),
                    Some(400)
                );
            })
            .expect("spawn executor")
            .join()
            .expect("executor thread");
    }
}

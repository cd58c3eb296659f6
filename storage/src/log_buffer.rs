//! The in-memory head of the CommitLog: recent bytes in fixed-size chunks (unflushed data, the partial
//! last 4 KiB block that the next flush rewrites, and a bounded read cache of recently flushed data).

use std::collections::VecDeque;

use bytes::Bytes;

/// One chunk-aligned piece of the log.
enum ChunkData {
    /// Still being appended to; capacity is the chunk size.
    Open(Vec<u8>),
    /// Full; shared with readers without copying.
    Sealed(Bytes),
}

struct Chunk {
    start: u64,
    data: ChunkData,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match &self.data {
            ChunkData::Open(v) => v,
            ChunkData::Sealed(b) => b,
        }
    }
}

/// Contiguous bytes `[mem_start, write_pos)` of the shard-local log, chunk-aligned at the front.
pub(crate) struct LogBuffer {
    chunk_size: u64,
    chunks: VecDeque<Chunk>,
    write_pos: u64,
}

impl LogBuffer {
    /// A buffer whose data ends at `write_pos`; `tail` holds the bytes from the chunk boundary before it.
    pub fn new(chunk_size: u64, write_pos: u64, tail: Vec<u8>) -> LogBuffer {
        let start = write_pos - write_pos % chunk_size;
        debug_assert_eq!(start + tail.len() as u64, write_pos);
        let mut data = Vec::with_capacity(chunk_size as usize);
        data.extend_from_slice(&tail);
        let mut chunks = VecDeque::new();
        chunks.push_back(Chunk {
            start,
            data: ChunkData::Open(data),
        });
        LogBuffer {
            chunk_size,
            chunks,
            write_pos,
        }
    }

    pub fn write_pos(&self) -> u64 {
        self.write_pos
    }

    pub fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// First offset still held in memory.
    pub fn mem_start(&self) -> u64 {
        self.chunks.front().map_or(self.write_pos, |c| c.start)
    }

    /// The open chunk with room for `len` more bytes, opening a new chunk at a boundary.
    fn open_chunk(&mut self) -> &mut Vec<u8> {
        let chunk_size = self.chunk_size;
        let needs_new = match self.chunks.back() {
            Some(Chunk {
                data: ChunkData::Open(v),
                ..
            }) => v.len() as u64 >= chunk_size,
            _ => true,
        };
        if needs_new {
            self.seal_last();
            let start = self.write_pos;
            self.chunks.push_back(Chunk {
                start,
                data: ChunkData::Open(Vec::with_capacity(chunk_size as usize)),
            });
        }
        match self.chunks.back_mut() {
            Some(Chunk {
                data: ChunkData::Open(v),
                ..
            }) => v,
            // Just pushed an open chunk above when the last was not open.
            _ => unreachable!("last chunk is open"),
        }
    }

    fn seal_last(&mut self) {
        if let Some(last) = self.chunks.back_mut() {
            if let ChunkData::Open(v) = &mut last.data {
                if v.len() as u64 >= self.chunk_size {
                    last.data = ChunkData::Sealed(Bytes::from(std::mem::take(v)));
                }
            }
        }
    }

    /// Appends raw bytes, splitting them over chunk boundaries.
    pub fn append(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let chunk_size = self.chunk_size as usize;
            let chunk = self.open_chunk();
            let room = chunk_size - chunk.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            chunk.extend_from_slice(now);
            bytes = later;
            self.write_pos += now.len() as u64;
        }
        self.seal_last();
    }

    /// Appends `len` bytes produced by `encode`: straight into the open chunk when they fit, else
    /// through `scratch`. `encode` must write exactly `len` bytes.
    pub fn append_encoded<E>(
        &mut self,
        len: usize,
        scratch: &mut Vec<u8>,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        wrong_len: impl FnOnce(usize) -> E,
    ) -> Result<(), E> {
        let chunk_size = self.chunk_size as usize;
        let chunk = self.open_chunk();
        if chunk_size - chunk.len() >= len {
            let before = chunk.len();
            let res = encode(chunk);
            let written = chunk.len() - before;
            if res.is_err() || written != len {
                chunk.truncate(before);
                res?;
                return Err(wrong_len(written));
            }
            self.write_pos += len as u64;
            self.seal_last();
            Ok(())
        } else {
            scratch.clear();
            encode(scratch)?;
            if scratch.len() != len {
                return Err(wrong_len(scratch.len()));
            }
            let bytes = std::mem::take(scratch);
            self.append(&bytes);
            *scratch = bytes;
            Ok(())
        }
    }

    fn chunk_index(&self, pos: u64) -> Option<usize> {
        let first = self.chunks.front()?.start;
        let idx = pos.checked_sub(first)? / self.chunk_size;
        usize::try_from(idx).ok().filter(|i| *i < self.chunks.len())
    }

    /// Copies `[from, from + out.len())` into `out`; false if any of it is not in memory.
    pub fn copy_to(&self, from: u64, out: &mut [u8]) -> bool {
        let Some(end) = from.checked_add(out.len() as u64) else {
            return false;
        };
        if from < self.mem_start() || end > self.write_pos {
            return false;
        }
        let mut pos = from;
        let mut done = 0usize;
        while done < out.len() {
            let Some(chunk) = self.chunk_index(pos).and_then(|i| self.chunks.get(i)) else {
                return false;
            };
            let bytes = chunk.bytes();
            let at = (pos - chunk.start) as usize;
            let Some(src) = bytes.get(at..) else {
                return false;
            };
            let n = src.len().min(out.len() - done);
            let (Some(dst), Some(src)) = (out.get_mut(done..done + n), src.get(..n)) else {
                return false;
            };
            dst.copy_from_slice(src);
            done += n;
            pos += n as u64;
        }
        true
    }

    /// The bytes `[from, from + len)` if in memory: a shared slice when inside one sealed chunk.
    pub fn read(&self, from: u64, len: usize) -> Option<Bytes> {
        let end = from.checked_add(len as u64)?;
        if from < self.mem_start() || end > self.write_pos {
            return None;
        }
        let chunk = self.chunks.get(self.chunk_index(from)?)?;
        let at = (from - chunk.start) as usize;
        if let ChunkData::Sealed(b) = &chunk.data {
            if at + len <= b.len() {
                return Some(b.slice(at..at + len));
            }
        }
        let mut out = vec![0u8; len];
        self.copy_to(from, &mut out).then(|| Bytes::from(out))
    }

    /// Drops whole chunks that end at or before `pos`.
    pub fn trim_before(&mut self, pos: u64) {
        while self.chunks.len() > 1 {
            match self.chunks.front() {
                Some(c) if c.start + self.chunk_size <= pos => {
                    self.chunks.pop_front();
                }
                _ => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_read_trim() {
        let mut buf = LogBuffer::new(16, 20, vec![7u8; 4]);
        assert_eq!(buf.mem_start(), 16);
        buf.append(&(0u8..40).collect::<Vec<_>>());
        assert_eq!(buf.write_pos(), 60);
        let got = buf.read(20, 40).unwrap();
        assert_eq!(&got[..], &(0u8..40).collect::<Vec<_>>()[..]);
        assert_eq!(&buf.read(16, 6).unwrap()[..], &[7, 7, 7, 7, 0, 1]);
        assert!(buf.read(10, 4).is_none());
        assert!(buf.read(50, 11).is_none());
        let mut scratch = Vec::new();
        buf.append_encoded(
            3,
            &mut scratch,
            |v| {
                v.extend_from_slice(&[1, 2, 3]);
                Ok::<(), ()>(())
            },
            |_| (),
        )
        .unwrap();
        assert!(buf
            .append_encoded(
                3,
                &mut scratch,
                |v| {
                    v.push(1);
                    Ok::<(), usize>(())
                },
                |n| n
            )
            .is_err());
        assert_eq!(buf.write_pos(), 63);
        buf.trim_before(48);
        assert_eq!(buf.mem_start(), 48);
        assert_eq!(&buf.read(59, 4).unwrap()[..], &[39, 1, 2, 3]);
    }
}

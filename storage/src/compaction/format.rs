//! The compacted log's on-disk format, apart from any file handling: a header, an index of the kept
//! records, then the records themselves, byte for byte as the CommitLog stored them.
//!
//! ```text
//! header (40 bytes, big-endian)
//!   magic u32 "RMQK" | version u32 (1) | compacted_up_to i64 | count u64 | records_len u64
//!   | index_crc u32 (crc32 of the index) | header_crc u32 (crc32 of the 36 bytes before it)
//! index: count entries of 20 bytes, in queue-offset order
//!   queue_offset i64 | size i32 | tagsCode i64
//! records: count stored records back to back (their sizes are the index's), records_len bytes
//! ```
//!
//! `compacted_up_to` is the queue offset below which the queue's records are represented by this file
//! (the newest record of each key); it is the compaction's progress, so it lives in the same file and
//! moves with the same rename. A record's position is the sum of the sizes before it.

/// "RMQK".
pub const MAGIC: u32 = 0x524D_514B;
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 40;
pub const ENTRY_LEN: usize = 20;

/// One kept record as the index lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub queue_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

/// The fixed part of a compacted log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub compacted_up_to: i64,
    pub count: u64,
    pub records_len: u64,
    pub index_crc: u32,
}

impl Header {
    /// Length of the whole file this header describes (None if it overflows).
    pub fn file_len(&self) -> Option<u64> {
        self.count
            .checked_mul(ENTRY_LEN as u64)?
            .checked_add(HEADER_LEN as u64)?
            .checked_add(self.records_len)
    }

    /// Where the records start.
    pub fn records_pos(&self) -> u64 {
        HEADER_LEN as u64 + self.count.saturating_mul(ENTRY_LEN as u64)
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&VERSION.to_be_bytes());
        b[8..16].copy_from_slice(&self.compacted_up_to.to_be_bytes());
        b[16..24].copy_from_slice(&self.count.to_be_bytes());
        b[24..32].copy_from_slice(&self.records_len.to_be_bytes());
        b[32..36].copy_from_slice(&self.index_crc.to_be_bytes());
        let crc = crc32fast::hash(&b[0..36]);
        b[36..40].copy_from_slice(&crc.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Header, String> {
        let b: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or("shorter than the 40-byte header")?;
        let u32_at = |p: usize| u32::from_be_bytes([b[p], b[p + 1], b[p + 2], b[p + 3]]);
        let u64_at = |p: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[p..p + 8]);
            u64::from_be_bytes(a)
        };
        if u32_at(0) != MAGIC {
            return Err(format!("bad magic {:#x}", u32_at(0)));
        }
        if u32_at(4) != VERSION {
            return Err(format!("unknown version {}", u32_at(4)));
        }
        if crc32fast::hash(&b[0..36]) != u32_at(36) {
            return Err("header CRC mismatch".to_owned());
        }
        let h = Header {
            compacted_up_to: u64_at(8) as i64,
            count: u64_at(16),
            records_len: u64_at(24),
            index_crc: u32_at(32),
        };
        if h.compacted_up_to < 0 || h.file_len().is_none() {
            return Err("header values out of range".to_owned());
        }
        Ok(h)
    }
}

/// Appends an index entry.
pub fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(&e.queue_offset.to_be_bytes());
    out.extend_from_slice(&e.size.to_be_bytes());
    out.extend_from_slice(&e.tags_code.to_be_bytes());
}

/// Decodes and checks an index against its header: CRC, positive sizes adding up to `records_len`,
/// strictly increasing offsets below `compacted_up_to`.
pub fn decode_index(h: &Header, b: &[u8]) -> Result<Vec<Entry>, String> {
    let len = usize::try_from(h.count)
        .ok()
        .and_then(|c| c.checked_mul(ENTRY_LEN))
        .ok_or("index too large")?;
    let b = b.get(..len).ok_or("index shorter than its count")?;
    if crc32fast::hash(b) != h.index_crc {
        return Err("index CRC mismatch".to_owned());
    }
    let mut out = Vec::with_capacity(len / ENTRY_LEN);
    let mut total: u64 = 0;
    let mut prev = -1i64;
    for chunk in b.chunks_exact(ENTRY_LEN) {
        let mut o = [0u8; 8];
        o.copy_from_slice(&chunk[0..8]);
        let mut s = [0u8; 4];
        s.copy_from_slice(&chunk[8..12]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&chunk[12..20]);
        let e = Entry {
            queue_offset: i64::from_be_bytes(o),
            size: i32::from_be_bytes(s),
            tags_code: i64::from_be_bytes(t),
        };
        if e.size <= 0 || e.queue_offset <= prev || e.queue_offset >= h.compacted_up_to {
            return Err(format!("bad index entry {e:?}"));
        }
        prev = e.queue_offset;
        total = total.saturating_add(e.size as u64);
        out.push(e);
    }
    if total != h.records_len {
        return Err(format!(
            "record sizes add up to {total}, header says {}",
            h.records_len
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Header, Vec<u8>) {
        let entries = [
            Entry {
                queue_offset: 3,
                size: 100,
                tags_code: 7,
            },
            Entry {
                queue_offset: 9,
                size: 50,
                tags_code: 0,
            },
        ];
        let mut idx = Vec::new();
        for e in &entries {
            encode_entry(e, &mut idx);
        }
        let h = Header {
            compacted_up_to: 12,
            count: 2,
            records_len: 150,
            index_crc: crc32fast::hash(&idx),
        };
        (h, idx)
    }

    #[test]
    fn header_and_index_round_trip() {
        let (h, idx) = sample();
        let back = Header::decode(&h.encode()).expect("header");
        assert_eq!(back, h);
        assert_eq!(h.file_len(), Some(40 + 40 + 150));
        let entries = decode_index(&back, &idx).expect("index");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].queue_offset, 9);
    }

    #[test]
    fn damage_is_detected() {
        let (h, mut idx) = sample();
        let mut b = h.encode();
        b[10] ^= 1;
        assert!(Header::decode(&b).is_err());
        assert!(Header::decode(&b[..20]).is_err());
        idx[5] ^= 1;
        assert!(decode_index(&h, &idx).is_err());
        let (mut h, idx) = sample();
        h.compacted_up_to = 9;
        assert!(decode_index(&h, &idx).is_err(), "offset at compacted_up_to");
        let (mut h, idx) = sample();
        h.records_len = 149;
        assert!(decode_index(&h, &idx).is_err());
    }
}

//! The replication wire format: the slave's handshake, the master's answer, offset reports and data
//! frames (see the crate docs for the layout). Pure encode/decode, no I/O.

use thiserror::Error;

/// "RQHA": first bytes of a handshake and of the master's answer.
pub const MAGIC: u32 = 0x5251_4841;
pub const VERSION: u16 = 1;
/// Handshake without the broker name: magic, version, shard count, shard id, name length.
pub const HANDSHAKE_FIXED: usize = 4 + 2 + 2 + 2 + 2;
/// Answer without the message: magic, status, message length.
pub const ANSWER_FIXED: usize = 4 + 1 + 2;
/// A data frame's header: start offset, size, crc32.
pub const FRAME_HEADER: usize = 8 + 4 + 4;
/// An offset report from the slave.
pub const REPORT: usize = 8;
/// An idle master sends an empty frame this often, so a slave can tell a dead link from a quiet one.
pub const HEARTBEAT_SECS: u64 = 5;
/// Longest broker name a handshake carries.
pub const MAX_NAME: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("not a replication handshake (magic {0:#x})")]
    BadMagic(u32),
    #[error("unsupported replication protocol version {0}")]
    BadVersion(u16),
    #[error("broker name of {0} bytes is too long or not UTF-8")]
    BadName(usize),
    #[error("frame of {size} bytes exceeds the limit of {max}")]
    FrameTooLarge { size: i64, max: usize },
    #[error("frame starts at offset {got}, the slave's log ends at {expected}")]
    OutOfOrder { expected: i64, got: i64 },
    #[error("frame crc mismatch: header says {expected:#010x}, data has {got:#010x}")]
    BadCrc { expected: u32, got: u32 },
    #[error("negative offset {0}")]
    NegativeOffset(i64),
}

/// What a slave says first on a new connection: which shard's stream it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    pub shard_count: u16,
    pub shard_id: u16,
    pub broker_name: String,
}

impl Handshake {
    pub fn encode(&self) -> Vec<u8> {
        let name = self.broker_name.as_bytes();
        let name = name.get(..name.len().min(MAX_NAME)).unwrap_or_default();
        let mut out = Vec::with_capacity(HANDSHAKE_FIXED + name.len());
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&self.shard_count.to_be_bytes());
        out.extend_from_slice(&self.shard_id.to_be_bytes());
        out.extend_from_slice(&(name.len() as u16).to_be_bytes());
        out.extend_from_slice(name);
        out
    }

    /// Decodes the fixed part; returns the name length still to read.
    pub fn decode_fixed(b: &[u8; HANDSHAKE_FIXED]) -> Result<(u16, u16, usize), WireError> {
        let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC {
            return Err(WireError::BadMagic(magic));
        }
        let version = u16::from_be_bytes([b[4], b[5]]);
        if version != VERSION {
            return Err(WireError::BadVersion(version));
        }
        let count = u16::from_be_bytes([b[6], b[7]]);
        let id = u16::from_be_bytes([b[8], b[9]]);
        let name_len = usize::from(u16::from_be_bytes([b[10], b[11]]));
        if name_len > MAX_NAME {
            return Err(WireError::BadName(name_len));
        }
        Ok((count, id, name_len))
    }

    pub fn from_parts(count: u16, id: u16, name: &[u8]) -> Result<Handshake, WireError> {
        let broker_name = std::str::from_utf8(name)
            .map_err(|_| WireError::BadName(name.len()))?
            .to_owned();
        Ok(Handshake {
            shard_count: count,
            shard_id: id,
            broker_name,
        })
    }
}

/// The master's answer to a handshake: accepted (with the master's remoting address, so a slave
/// configured with only `haMasterAddress` can copy metadata), or refused with a reason (then it closes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Accepted(String),
    Refused(String),
}

impl Answer {
    pub fn encode(&self) -> Vec<u8> {
        let (status, msg) = match self {
            Answer::Accepted(addr) => (0u8, addr.as_str()),
            Answer::Refused(m) => (1u8, m.as_str()),
        };
        let mut end = msg.len().min(usize::from(u16::MAX));
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        let msg = msg.get(..end).unwrap_or_default().as_bytes();
        let mut out = Vec::with_capacity(ANSWER_FIXED + msg.len());
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.push(status);
        out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        out.extend_from_slice(msg);
        out
    }

    /// Decodes the fixed part: (accepted, message length).
    pub fn decode_fixed(b: &[u8; ANSWER_FIXED]) -> Result<(bool, usize), WireError> {
        let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC {
            return Err(WireError::BadMagic(magic));
        }
        Ok((b[4] == 0, usize::from(u16::from_be_bytes([b[5], b[6]]))))
    }
}

/// The header of a data frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub start: i64,
    pub size: usize,
    pub crc: u32,
}

impl FrameHeader {
    pub fn for_data(start: i64, data: &[u8]) -> FrameHeader {
        FrameHeader {
            start,
            size: data.len(),
            crc: crc32fast::hash(data),
        }
    }

    pub fn encode(&self) -> [u8; FRAME_HEADER] {
        let mut out = [0u8; FRAME_HEADER];
        out[..8].copy_from_slice(&self.start.to_be_bytes());
        out[8..12].copy_from_slice(&(self.size.min(i32::MAX as usize) as i32).to_be_bytes());
        out[12..].copy_from_slice(&self.crc.to_be_bytes());
        out
    }

    /// Decodes and checks a header against the slave's log end and the size limit.
    /// A frame of size 0 is a heartbeat (the master sends one when idle for `HEARTBEAT` s).
    pub fn decode(
        b: &[u8; FRAME_HEADER],
        expected_start: i64,
        max_size: usize,
    ) -> Result<FrameHeader, WireError> {
        let start = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let size = i32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        let crc = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        if start != expected_start {
            return Err(WireError::OutOfOrder {
                expected: expected_start,
                got: start,
            });
        }
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s <= max_size)
            .ok_or(WireError::FrameTooLarge {
                size: i64::from(size),
                max: max_size,
            })?;
        Ok(FrameHeader { start, size, crc })
    }

    /// Checks the frame's data against its crc.
    pub fn check(&self, data: &[u8]) -> Result<(), WireError> {
        let got = crc32fast::hash(data);
        if got != self.crc {
            return Err(WireError::BadCrc {
                expected: self.crc,
                got,
            });
        }
        Ok(())
    }
}

pub fn encode_report(offset: i64) -> [u8; REPORT] {
    offset.to_be_bytes()
}

pub fn decode_report(b: &[u8; REPORT]) -> Result<i64, WireError> {
    let v = i64::from_be_bytes(*b);
    if v < 0 {
        return Err(WireError::NegativeOffset(v));
    }
    Ok(v)
}

/// Length of the longest prefix of `bytes` made of whole stored records (each starts with its
/// TOTALSIZE). When even the first record is cut, `Err` carries its full size.
pub fn whole_records(bytes: &[u8]) -> Result<usize, usize> {
    let mut at = 0usize;
    while let Some(head) = bytes.get(at..at.saturating_add(4)) {
        let Ok(head) = <[u8; 4]>::try_from(head) else {
            break;
        };
        let size = i32::from_be_bytes(head);
        // A non-positive size would never advance: stop and let the receiver reject what follows.
        let Some(size) = usize::try_from(size).ok().filter(|s| *s >= 8) else {
            break;
        };
        let end = at.saturating_add(size);
        if end > bytes.len() {
            if at == 0 {
                return Err(size);
            }
            break;
        }
        at = end;
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_round_trip_and_rejects() {
        let h = Handshake {
            shard_count: 4,
            shard_id: 3,
            broker_name: "broker-a".into(),
        };
        let bytes = h.encode();
        let fixed: [u8; HANDSHAKE_FIXED] = bytes[..HANDSHAKE_FIXED].try_into().unwrap();
        let (count, id, len) = Handshake::decode_fixed(&fixed).unwrap();
        assert_eq!((count, id, len), (4, 3, 8));
        let back = Handshake::from_parts(count, id, &bytes[HANDSHAKE_FIXED..]).unwrap();
        assert_eq!(back, h);

        let mut bad = fixed;
        bad[0] ^= 1;
        assert!(matches!(
            Handshake::decode_fixed(&bad),
            Err(WireError::BadMagic(_))
        ));
        let mut bad = fixed;
        bad[5] = 9;
        assert_eq!(Handshake::decode_fixed(&bad), Err(WireError::BadVersion(9)));
        assert!(Handshake::from_parts(1, 0, &[0xff, 0xfe]).is_err());
    }

    #[test]
    fn answer_round_trip() {
        let a = Answer::Refused("shard count 2 differs from the master's 4".into());
        let bytes = a.encode();
        let fixed: [u8; ANSWER_FIXED] = bytes[..ANSWER_FIXED].try_into().unwrap();
        let (ok, len) = Answer::decode_fixed(&fixed).unwrap();
        assert!(!ok);
        assert_eq!(
            &bytes[ANSWER_FIXED..ANSWER_FIXED + len],
            b"shard count 2 differs from the master's 4"
        );
        let bytes = Answer::Accepted("127.0.0.1:10911".into()).encode();
        let fixed: [u8; ANSWER_FIXED] = bytes[..ANSWER_FIXED].try_into().unwrap();
        assert_eq!(Answer::decode_fixed(&fixed).unwrap(), (true, 15));
        assert_eq!(&bytes[ANSWER_FIXED..], b"127.0.0.1:10911");
    }

    #[test]
    fn frame_accepted_in_order_with_good_crc() {
        let data = b"some record bytes".to_vec();
        let h = FrameHeader::for_data(4096, &data);
        let back = FrameHeader::decode(&h.encode(), 4096, 1 << 20).unwrap();
        assert_eq!(back, h);
        back.check(&data).unwrap();
    }

    #[test]
    fn out_of_order_frame_rejected() {
        let h = FrameHeader::for_data(8192, b"abc");
        assert_eq!(
            FrameHeader::decode(&h.encode(), 4096, 1 << 20),
            Err(WireError::OutOfOrder {
                expected: 4096,
                got: 8192
            })
        );
    }

    #[test]
    fn corrupt_frame_rejected() {
        let data = b"record".to_vec();
        let h = FrameHeader::for_data(0, &data);
        let mut flipped = data.clone();
        flipped[2] ^= 0x40;
        assert!(matches!(h.check(&flipped), Err(WireError::BadCrc { .. })));
        // A corrupted crc field is caught the same way.
        let mut enc = h.encode();
        enc[15] ^= 1;
        let back = FrameHeader::decode(&enc, 0, 1024).unwrap();
        assert!(back.check(&data).is_err());
    }

    #[test]
    fn oversized_or_empty_frame_rejected() {
        let mut enc = FrameHeader::for_data(0, &[0u8; 10]).encode();
        assert!(FrameHeader::decode(&enc, 0, 9).is_err());
        enc[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(FrameHeader::decode(&enc, 0, 1024).is_err());
        // Size 0 is the master's heartbeat: accepted, nothing to append.
        let hb = FrameHeader::for_data(0, &[]).encode();
        assert_eq!(FrameHeader::decode(&hb, 0, 1024).map(|h| h.size), Ok(0));
    }

    #[test]
    fn reports_reject_negative() {
        assert_eq!(decode_report(&encode_report(77)), Ok(77));
        assert!(decode_report(&encode_report(-1)).is_err());
    }

    fn record(size: usize) -> Vec<u8> {
        let mut r = vec![0u8; size];
        r[..4].copy_from_slice(&(size as i32).to_be_bytes());
        r
    }

    #[test]
    fn whole_records_cuts_at_record_boundaries() {
        let mut b = record(100);
        b.extend(record(50));
        assert_eq!(whole_records(&b), Ok(150));
        let cut = &b[..120];
        assert_eq!(whole_records(cut), Ok(100));
        assert_eq!(whole_records(&b[..60]), Err(100));
        assert_eq!(whole_records(&[]), Ok(0));
        // Garbage size: nothing is taken.
        let mut g = record(16);
        g[..4].copy_from_slice(&(-3i32).to_be_bytes());
        assert_eq!(whole_records(&g), Ok(0));
    }
}

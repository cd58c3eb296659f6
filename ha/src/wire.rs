//! The replication wire format: the slave's handshake, the master's answer, offset reports and data
//! frames (see the crate docs for the layout). Pure encode/decode, no I/O.

use storage::{check_epochs, EpochEntry, MAX_EPOCH_ENTRIES};
use thiserror::Error;

/// "RQHA": first bytes of a handshake and of the master's answer.
pub const MAGIC: u32 = 0x5251_4841;
/// Classic master/slave.
pub const VERSION: u16 = 1;
/// Controller mode: the handshake carries the slave's broker id and epochs, the acceptance the
/// truncation offset and the master's epochs.
pub const VERSION_2: u16 = 2;
/// Controller mode as version 2, and every frame header is followed by the master's confirm offset
/// (`CONFIRM`), which the slave's reads never pass.
pub const VERSION_3: u16 = 3;
/// Broker id of a slave not in controller mode.
pub const NO_BROKER_ID: i64 = -1;
/// "No truncation" in a version 2 acceptance.
pub const NO_TRUNCATION: i64 = -1;
/// The fixed part of a version 2 handshake's extension: broker id, epoch count.
pub const HANDSHAKE_EXT_FIXED: usize = 8 + 4;
/// The fixed part of a version 2 acceptance's extension: truncation offset, epoch count.
pub const ACCEPT_EXT_FIXED: usize = 8 + 4;
/// One epoch entry on the wire: epoch, start offset.
pub const EPOCH_ENTRY: usize = 4 + 8;
/// Handshake without the broker name: magic, version, shard count, shard id, name length.
pub const HANDSHAKE_FIXED: usize = 4 + 2 + 2 + 2 + 2;
/// Answer without the message: magic, status, message length.
pub const ANSWER_FIXED: usize = 4 + 1 + 2;
/// A data frame's header: start offset, size, crc32.
pub const FRAME_HEADER: usize = 8 + 4 + 4;
/// An offset report from the slave.
pub const REPORT: usize = 8;
/// The master's confirm offset after each frame header of a version 3 stream.
pub const CONFIRM: usize = 8;
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
    #[error("bad epoch list: {0}")]
    BadEpochs(String),
}

/// What a slave says first on a new connection: which shard's stream it wants, and in version 2 who
/// it is and which epochs its log holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// `VERSION` (classic), `VERSION_2` or `VERSION_3` (controller mode).
    pub version: u16,
    pub shard_count: u16,
    pub shard_id: u16,
    pub broker_name: String,
    /// The slave's controller broker id (`NO_BROKER_ID` in version 1).
    pub broker_id: i64,
    /// The slave's epoch entries for this shard (empty in version 1).
    pub epochs: Vec<EpochEntry>,
}

/// The fixed part of a handshake, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandshakeHead {
    pub version: u16,
    pub shard_count: u16,
    pub shard_id: u16,
    pub name_len: usize,
}

/// Appends `count u32 | (epoch u32 | start i64) * count`.
fn encode_epochs(out: &mut Vec<u8>, epochs: &[EpochEntry]) {
    let list = epochs
        .get(..epochs.len().min(MAX_EPOCH_ENTRIES))
        .unwrap_or_default();
    out.extend_from_slice(&(list.len() as u32).to_be_bytes());
    for e in list {
        out.extend_from_slice(&e.epoch.to_be_bytes());
        out.extend_from_slice(&e.start_offset.to_be_bytes());
    }
}

/// Checks an epoch count before its entries are read; returns their byte length.
pub fn epochs_len(count: u32) -> Result<usize, WireError> {
    let count = count as usize;
    if count > MAX_EPOCH_ENTRIES {
        return Err(WireError::BadEpochs(format!(
            "{count} entries (at most {MAX_EPOCH_ENTRIES})"
        )));
    }
    Ok(count * EPOCH_ENTRY)
}

/// Decodes `epochs_len` bytes of entries and checks their order.
pub fn decode_epochs(b: &[u8]) -> Result<Vec<EpochEntry>, WireError> {
    if b.len() % EPOCH_ENTRY != 0 {
        return Err(WireError::BadEpochs(format!(
            "{} bytes of entries",
            b.len()
        )));
    }
    let list: Vec<EpochEntry> = b
        .chunks_exact(EPOCH_ENTRY)
        .filter_map(|c| {
            let epoch = u32::from_be_bytes(c.get(..4)?.try_into().ok()?);
            let start_offset = i64::from_be_bytes(c.get(4..12)?.try_into().ok()?);
            Some(EpochEntry {
                epoch,
                start_offset,
            })
        })
        .collect();
    check_epochs(&list).map_err(WireError::BadEpochs)?;
    Ok(list)
}

/// Whether a handshake of `version` is a controller-mode one (broker id, epochs, truncation).
pub fn has_epochs(version: u16) -> bool {
    version == VERSION_2 || version == VERSION_3
}

/// The master's confirm offset as a version 3 stream sends it after a frame header.
pub fn encode_confirm(offset: i64) -> [u8; CONFIRM] {
    offset.to_be_bytes()
}

/// Decodes `encode_confirm`.
pub fn decode_confirm(b: &[u8; CONFIRM]) -> i64 {
    i64::from_be_bytes(*b)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i64::from_be_bytes)
}

impl Handshake {
    /// A classic (version 1) handshake.
    pub fn classic(shard_count: u16, shard_id: u16, broker_name: &str) -> Handshake {
        Handshake {
            version: VERSION,
            shard_count,
            shard_id,
            broker_name: broker_name.to_owned(),
            broker_id: NO_BROKER_ID,
            epochs: Vec::new(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let name = self.broker_name.as_bytes();
        let name = name.get(..name.len().min(MAX_NAME)).unwrap_or_default();
        let mut out = Vec::with_capacity(HANDSHAKE_FIXED + name.len());
        let version = if has_epochs(self.version) {
            self.version
        } else {
            VERSION
        };
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&self.shard_count.to_be_bytes());
        out.extend_from_slice(&self.shard_id.to_be_bytes());
        out.extend_from_slice(&(name.len() as u16).to_be_bytes());
        out.extend_from_slice(name);
        if has_epochs(version) {
            out.extend_from_slice(&self.broker_id.to_be_bytes());
            encode_epochs(&mut out, &self.epochs);
        }
        out
    }

    /// Decodes the fixed part (either version).
    pub fn decode_head(b: &[u8; HANDSHAKE_FIXED]) -> Result<HandshakeHead, WireError> {
        let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC {
            return Err(WireError::BadMagic(magic));
        }
        let version = u16::from_be_bytes([b[4], b[5]]);
        if version != VERSION && !has_epochs(version) {
            return Err(WireError::BadVersion(version));
        }
        let name_len = usize::from(u16::from_be_bytes([b[10], b[11]]));
        if name_len > MAX_NAME {
            return Err(WireError::BadName(name_len));
        }
        Ok(HandshakeHead {
            version,
            shard_count: u16::from_be_bytes([b[6], b[7]]),
            shard_id: u16::from_be_bytes([b[8], b[9]]),
            name_len,
        })
    }

    /// Decodes the fixed part; returns (shard count, shard id, name length still to read).
    pub fn decode_fixed(b: &[u8; HANDSHAKE_FIXED]) -> Result<(u16, u16, usize), WireError> {
        let h = Handshake::decode_head(b)?;
        Ok((h.shard_count, h.shard_id, h.name_len))
    }

    /// Decodes a version 2 extension's fixed part: (broker id, byte length of the epochs to read).
    pub fn decode_ext_fixed(b: &[u8; HANDSHAKE_EXT_FIXED]) -> Result<(i64, usize), WireError> {
        Ok((i64_at(b, 0), epochs_len(u32_at(b, 8))?))
    }

    /// A version 1 handshake from its parts.
    pub fn from_parts(count: u16, id: u16, name: &[u8]) -> Result<Handshake, WireError> {
        let broker_name = std::str::from_utf8(name)
            .map_err(|_| WireError::BadName(name.len()))?
            .to_owned();
        Ok(Handshake::classic(count, id, &broker_name))
    }
}

/// What a version 2 acceptance adds after the master's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptExt {
    /// Where the slave must cut its log before replicating (`NO_TRUNCATION`: nowhere).
    pub truncate_offset: i64,
    /// The master's epoch entries for this shard.
    pub epochs: Vec<EpochEntry>,
}

impl AcceptExt {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ACCEPT_EXT_FIXED + self.epochs.len() * EPOCH_ENTRY);
        out.extend_from_slice(&self.truncate_offset.to_be_bytes());
        encode_epochs(&mut out, &self.epochs);
        out
    }

    /// Decodes the fixed part: (truncation offset, byte length of the epochs to read).
    pub fn decode_fixed(b: &[u8; ACCEPT_EXT_FIXED]) -> Result<(i64, usize), WireError> {
        let offset = i64_at(b, 0);
        if offset < NO_TRUNCATION {
            return Err(WireError::NegativeOffset(offset));
        }
        Ok((offset, epochs_len(u32_at(b, 8))?))
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

    /// Version 3 is version 2's handshake with its own number (the master then sends its confirm
    /// offset after every frame header); a version 1 handshake has no extension.
    #[test]
    fn version_3_handshake_keeps_its_version_and_extension() {
        let h = Handshake {
            version: VERSION_3,
            broker_id: 5,
            ..Handshake::classic(1, 0, "b")
        };
        let bytes = h.encode();
        let fixed: [u8; HANDSHAKE_FIXED] = bytes[..HANDSHAKE_FIXED].try_into().unwrap();
        let head = Handshake::decode_head(&fixed).unwrap();
        assert_eq!(head.version, VERSION_3);
        assert!(has_epochs(head.version));
        let at = HANDSHAKE_FIXED + head.name_len;
        assert_eq!(bytes.len(), at + HANDSHAKE_EXT_FIXED);
        assert!(!has_epochs(VERSION));
        assert_eq!(decode_confirm(&encode_confirm(123_456)), 123_456);
    }

    #[test]
    fn version_2_handshake_and_acceptance_round_trip() {
        let epochs = vec![
            EpochEntry {
                epoch: 1,
                start_offset: 0,
            },
            EpochEntry {
                epoch: 4,
                start_offset: 9000,
            },
        ];
        let h = Handshake {
            version: VERSION_2,
            broker_id: 7,
            epochs: epochs.clone(),
            ..Handshake::classic(2, 1, "broker-b")
        };
        let bytes = h.encode();
        let fixed: [u8; HANDSHAKE_FIXED] = bytes[..HANDSHAKE_FIXED].try_into().unwrap();
        let head = Handshake::decode_head(&fixed).unwrap();
        assert_eq!(
            (head.version, head.shard_count, head.shard_id, head.name_len),
            (2, 2, 1, 8)
        );
        let at = HANDSHAKE_FIXED + head.name_len;
        let ext: [u8; HANDSHAKE_EXT_FIXED] =
            bytes[at..at + HANDSHAKE_EXT_FIXED].try_into().unwrap();
        let (id, len) = Handshake::decode_ext_fixed(&ext).unwrap();
        assert_eq!((id, len), (7, 2 * EPOCH_ENTRY));
        let rest = &bytes[at + HANDSHAKE_EXT_FIXED..];
        assert_eq!(rest.len(), len);
        assert_eq!(decode_epochs(rest).unwrap(), epochs);

        let a = AcceptExt {
            truncate_offset: 4096,
            epochs: epochs.clone(),
        };
        let bytes = a.encode();
        let fixed: [u8; ACCEPT_EXT_FIXED] = bytes[..ACCEPT_EXT_FIXED].try_into().unwrap();
        assert_eq!(
            AcceptExt::decode_fixed(&fixed).unwrap(),
            (4096, 2 * EPOCH_ENTRY)
        );
        assert_eq!(decode_epochs(&bytes[ACCEPT_EXT_FIXED..]).unwrap(), epochs);
    }

    #[test]
    fn bad_epoch_lists_rejected() {
        assert!(epochs_len(u32::MAX).is_err());
        // Out of order.
        let mut b = Vec::new();
        for (e, s) in [(3u32, 100i64), (2, 200)] {
            b.extend_from_slice(&e.to_be_bytes());
            b.extend_from_slice(&s.to_be_bytes());
        }
        assert!(matches!(decode_epochs(&b), Err(WireError::BadEpochs(_))));
        assert!(decode_epochs(&b[..13]).is_err());
        let mut fixed = [0u8; ACCEPT_EXT_FIXED];
        fixed[..8].copy_from_slice(&(-5i64).to_be_bytes());
        assert!(AcceptExt::decode_fixed(&fixed).is_err());
    }

    #[test]
    fn handshake_round_trip_and_rejects() {
        let h = Handshake::classic(4, 3, "broker-a");
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

//! The stored CommitLog record format (RocketMQ's, big-endian), shared by storage, pulls and HA.
//!
//! Layout: TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64 |
//! PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST (4+4 or 16+4) | STORETIMESTAMP i64 |
//! STOREHOST (4+4 or 16+4) | RECONSUMETIMES i32 | PREPAREDTRANSACTIONOFFSET i64 | BODY (i32 + n) |
//! TOPIC (u8 + n, or i16 + n with the v2 magic) | PROPERTIES (i16 + n).
//! A blank record (TOTALSIZE, BLANK magic) fills the unused tail of a segment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{BufMut, Bytes};

/// Magic of a record whose topic length is one byte.
pub const MESSAGE_MAGIC_CODE: i32 = -626_843_481;
/// Magic of a record whose topic length is two bytes (RocketMQ 5).
pub const MESSAGE_MAGIC_CODE_V2: i32 = -626_843_477;
/// Magic of the blank record that pads a segment's tail.
pub const BLANK_MAGIC_CODE: i32 = -875_286_124;

/// Smallest blank record: TOTALSIZE + magic.
pub const MIN_BLANK_LEN: usize = 8;
/// Byte position of QUEUEOFFSET inside a record.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Byte position of PHYSICALOFFSET inside a record.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Byte position of SYSFLAG inside a record.
pub const SYS_FLAG_POS: usize = 36;
/// Byte position of BORNTIMESTAMP inside a record.
pub const BORN_TIMESTAMP_POS: usize = 40;
/// Byte position of BORNHOST inside a record.
const BORN_HOST_POS: usize = 48;
/// Largest properties string the format can carry (i16 length).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Bits of SYSFLAG.
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_NOT_TYPE: i32 = 0;
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    pub const BORNHOST_V6: i32 = 0x10;
    pub const STOREHOST_V6: i32 = 0x20;
    pub const NEED_UNWRAP: i32 = 0x40;
    pub const INNER_BATCH: i32 = 0x80;

    /// The transaction state bits (prepared / commit / rollback / none).
    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_ROLLBACK
    }

    /// `flag` with its transaction bits replaced by `kind`.
    pub fn with_transaction_type(flag: i32, kind: i32) -> i32 {
        (flag & !TRANSACTION_ROLLBACK) | (kind & TRANSACTION_ROLLBACK)
    }
}

/// Why bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record truncated: need {needed} bytes, have {available}")]
    Truncated { needed: usize, available: usize },
    #[error("bad record magic code {0:#x}")]
    BadMagic(i32),
    #[error("bad record total size {0}")]
    BadTotalSize(i32),
    #[error("record total size {declared} disagrees with its fields ({actual})")]
    SizeMismatch { declared: usize, actual: usize },
    #[error("body CRC mismatch: stored {stored:#x}, computed {computed:#x}")]
    BodyCrc { stored: i32, computed: i32 },
    #[error("negative length {0} in record")]
    NegativeLength(i32),
    #[error("topic is not valid UTF-8")]
    TopicNotUtf8,
    #[error("properties are not valid UTF-8")]
    PropertiesNotUtf8,
    #[error("topic too long ({0} bytes)")]
    TopicTooLong(usize),
    #[error("properties too long ({0} bytes, max {MAX_PROPERTIES_LEN})")]
    PropertiesTooLong(usize),
    #[error("body too long ({0} bytes)")]
    BodyTooLong(usize),
    #[error("blank record of {0} bytes is shorter than {MIN_BLANK_LEN}")]
    BlankTooShort(usize),
}

/// RocketMQ's body CRC: CRC32 of the body masked to 31 bits (`UtilAll.crc32`).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// One stored message, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: Bytes,
    pub topic: String,
    pub properties: String,
}

impl Default for MessageRecord {
    fn default() -> Self {
        let unspecified = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);
        MessageRecord {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: unspecified,
            store_timestamp: 0,
            store_host: unspecified,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::new(),
            topic: String::new(),
            properties: String::new(),
        }
    }
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

fn host_len_for(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

/// Byte position of STORETIMESTAMP for a record with this SYSFLAG.
pub fn store_timestamp_pos(sys_flag: i32) -> usize {
    BORN_HOST_POS + host_len_for(sys_flag & sys_flag::BORNHOST_V6 != 0)
}

fn put_host(out: &mut impl BufMut, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(addr.port()));
}

impl MessageRecord {
    /// SYSFLAG as it will be written: the host v6 bits follow the addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if self.born_host.is_ipv6() {
            flag |= sys_flag::BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            flag |= sys_flag::STOREHOST_V6;
        }
        flag
    }

    fn topic_len_bytes(&self) -> usize {
        if self.topic.len() <= usize::from(u8::MAX) {
            1
        } else {
            2
        }
    }

    /// The TOTALSIZE this record encodes to.
    pub fn encoded_len(&self) -> usize {
        4 + 4
            + 4
            + 4
            + 4
            + 8
            + 8
            + 4
            + 8
            + host_len(&self.born_host)
            + 8
            + host_len(&self.store_host)
            + 4
            + 8
            + 4
            + self.body.len()
            + self.topic_len_bytes()
            + self.topic.len()
            + 2
            + self.properties.len()
    }

    /// Appends the encoded record; TOTALSIZE, BODYCRC and the host bits of SYSFLAG are computed here.
    pub fn encode(&self, out: &mut impl BufMut) -> Result<(), RecordError> {
        if self.topic.len() > i16::MAX as usize {
            return Err(RecordError::TopicTooLong(self.topic.len()));
        }
        if self.properties.len() > MAX_PROPERTIES_LEN {
            return Err(RecordError::PropertiesTooLong(self.properties.len()));
        }
        let total = self.encoded_len();
        let total_i32 =
            i32::try_from(total).map_err(|_| RecordError::BodyTooLong(self.body.len()))?;
        let v2 = self.topic_len_bytes() == 2;
        out.put_i32(total_i32);
        out.put_i32(if v2 {
            MESSAGE_MAGIC_CODE_V2
        } else {
            MESSAGE_MAGIC_CODE
        });
        out.put_i32(body_crc(&self.body));
        out.put_i32(self.queue_id);
        out.put_i32(self.flag);
        out.put_i64(self.queue_offset);
        out.put_i64(self.physical_offset);
        out.put_i32(self.effective_sys_flag());
        out.put_i64(self.born_timestamp);
        put_host(out, &self.born_host);
        out.put_i64(self.store_timestamp);
        put_host(out, &self.store_host);
        out.put_i32(self.reconsume_times);
        out.put_i64(self.prepared_transaction_offset);
        // Lengths were bounded above by the i32 total.
        out.put_i32(self.body.len() as i32);
        out.put_slice(&self.body);
        if v2 {
            out.put_i16(self.topic.len() as i16);
        } else {
            out.put_u8(self.topic.len() as u8);
        }
        out.put_slice(self.topic.as_bytes());
        out.put_i16(self.properties.len() as i16);
        out.put_slice(self.properties.as_bytes());
        Ok(())
    }

    /// Encodes into a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, RecordError> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out)?;
        Ok(out)
    }

    /// Decodes the record at the start of `buf`; returns it and its TOTALSIZE.
    pub fn decode(buf: &[u8], check_crc: bool) -> Result<(MessageRecord, usize), RecordError> {
        let view = decode_view(buf, check_crc)?;
        let size = view.total_size;
        Ok((view.to_owned_record(), size))
    }
}

/// One stored message, borrowed from the bytes it was decoded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub total_size: usize,
    pub magic: i32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: &'a str,
}

impl RecordView<'_> {
    /// Copies the view into an owned record.
    pub fn to_owned_record(&self) -> MessageRecord {
        MessageRecord {
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: self.queue_offset,
            physical_offset: self.physical_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: self.store_timestamp,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: Bytes::copy_from_slice(self.body),
            topic: self.topic.to_owned(),
            properties: self.properties.to_owned(),
        }
    }
}

/// A bounds-checked big-endian reader over a record.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self.pos.checked_add(n).ok_or(RecordError::Truncated {
            needed: usize::MAX,
            available: self.buf.len(),
        })?;
        let out = self.buf.get(self.pos..end).ok_or(RecordError::Truncated {
            needed: end,
            available: self.buf.len(),
        })?;
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        Ok(self.array::<1>()?[0])
    }
    fn i16(&mut self) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    fn len_i32(&mut self) -> Result<usize, RecordError> {
        let n = self.i32()?;
        usize::try_from(n).map_err(|_| RecordError::NegativeLength(n))
    }
    fn len_i16(&mut self) -> Result<usize, RecordError> {
        let n = self.i16()?;
        usize::try_from(n).map_err(|_| RecordError::NegativeLength(i32::from(n)))
    }

    fn host(&mut self, v6: bool) -> Result<SocketAddr, RecordError> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>()?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>()?))
        };
        // The port is written as an int; keep the low 16 bits as Java's InetSocketAddress would reject others.
        let port = self.i32()? as u16;
        Ok(SocketAddr::new(ip, port))
    }
}

/// What starts at a position of a CommitLog segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordHead {
    Message { total_size: usize },
    Blank { total_size: usize },
}

impl RecordHead {
    pub fn total_size(&self) -> usize {
        match *self {
            RecordHead::Message { total_size } | RecordHead::Blank { total_size } => total_size,
        }
    }
}

/// Reads TOTALSIZE and the magic; `None` when fewer than 8 bytes are available.
pub fn peek_head(buf: &[u8]) -> Result<Option<RecordHead>, RecordError> {
    let (Some(size), Some(magic)) = (buf.get(0..4), buf.get(4..8)) else {
        return Ok(None);
    };
    let (Ok(size), Ok(magic)) = (<[u8; 4]>::try_from(size), <[u8; 4]>::try_from(magic)) else {
        return Ok(None);
    };
    let size = i32::from_be_bytes(size);
    let magic = i32::from_be_bytes(magic);
    let total_size = match usize::try_from(size) {
        Ok(n) if n >= MIN_BLANK_LEN => n,
        _ => return Err(RecordError::BadTotalSize(size)),
    };
    match magic {
        MESSAGE_MAGIC_CODE | MESSAGE_MAGIC_CODE_V2 => Ok(Some(RecordHead::Message { total_size })),
        BLANK_MAGIC_CODE => Ok(Some(RecordHead::Blank { total_size })),
        other => Err(RecordError::BadMagic(other)),
    }
}

/// Decodes the message record at the start of `buf` without copying body, topic or properties.
/// Fails on a blank record, truncation, inconsistent sizes, bad UTF-8, or (if asked) a bad body CRC.
pub fn decode_view(buf: &[u8], check_crc: bool) -> Result<RecordView<'_>, RecordError> {
    let mut r = Reader { buf, pos: 0 };
    let declared = r.i32()?;
    let total_size = usize::try_from(declared)
        .ok()
        .filter(|n| *n >= MIN_BLANK_LEN)
        .ok_or(RecordError::BadTotalSize(declared))?;
    // Parse only inside the declared record so a lying length can't read a neighbour.
    let record = buf.get(..total_size).ok_or(RecordError::Truncated {
        needed: total_size,
        available: buf.len(),
    })?;
    let mut r = Reader {
        buf: record,
        pos: 4,
    };
    let magic = r.i32()?;
    let v2 = match magic {
        MESSAGE_MAGIC_CODE => false,
        MESSAGE_MAGIC_CODE_V2 => true,
        other => return Err(RecordError::BadMagic(other)),
    };
    let body_crc_stored = r.i32()?;
    let queue_id = r.i32()?;
    let flag = r.i32()?;
    let queue_offset = r.i64()?;
    let physical_offset = r.i64()?;
    let sys_flag = r.i32()?;
    let born_timestamp = r.i64()?;
    let born_host = r.host(sys_flag & sys_flag::BORNHOST_V6 != 0)?;
    let store_timestamp = r.i64()?;
    let store_host = r.host(sys_flag & sys_flag::STOREHOST_V6 != 0)?;
    let reconsume_times = r.i32()?;
    let prepared_transaction_offset = r.i64()?;
    let body_len = r.len_i32()?;
    let body = r.take(body_len)?;
    let topic_len = if v2 {
        r.len_i16()?
    } else {
        usize::from(r.u8()?)
    };
    let topic = std::str::from_utf8(r.take(topic_len)?).map_err(|_| RecordError::TopicNotUtf8)?;
    let props_len = r.len_i16()?;
    let properties =
        std::str::from_utf8(r.take(props_len)?).map_err(|_| RecordError::PropertiesNotUtf8)?;
    if r.pos != total_size {
        return Err(RecordError::SizeMismatch {
            declared: total_size,
            actual: r.pos,
        });
    }
    if check_crc {
        let computed = body_crc(body);
        if computed != body_crc_stored {
            return Err(RecordError::BodyCrc {
                stored: body_crc_stored,
                computed,
            });
        }
    }
    Ok(RecordView {
        total_size,
        magic,
        body_crc: body_crc_stored,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    })
}

/// Appends a blank record of `total_size` bytes (TOTALSIZE, BLANK magic, zero fill).
pub fn encode_blank(total_size: usize, out: &mut impl BufMut) -> Result<(), RecordError> {
    let size = i32::try_from(total_size)
        .ok()
        .filter(|_| total_size >= MIN_BLANK_LEN)
        .ok_or(RecordError::BlankTooShort(total_size))?;
    out.put_i32(size);
    out.put_i32(BLANK_MAGIC_CODE);
    out.put_bytes(0, total_size - MIN_BLANK_LEN);
    Ok(())
}

fn write_at(record: &mut [u8], pos: usize, bytes: &[u8]) -> Result<(), RecordError> {
    let available = record.len();
    let slot = record
        .get_mut(pos..pos + bytes.len())
        .ok_or(RecordError::Truncated {
            needed: pos + bytes.len(),
            available,
        })?;
    slot.copy_from_slice(bytes);
    Ok(())
}

/// Rewrites QUEUEOFFSET and PHYSICALOFFSET of an encoded record in place.
pub fn patch_offsets(
    record: &mut [u8],
    queue_offset: i64,
    physical_offset: i64,
) -> Result<(), RecordError> {
    write_at(record, QUEUE_OFFSET_POS, &queue_offset.to_be_bytes())?;
    write_at(record, PHYSICAL_OFFSET_POS, &physical_offset.to_be_bytes())
}

/// Rewrites STORETIMESTAMP of an encoded record in place.
pub fn patch_store_timestamp(record: &mut [u8], sys_flag: i32, ts: i64) -> Result<(), RecordError> {
    write_at(record, store_timestamp_pos(sys_flag), &ts.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MessageRecord {
        MessageRecord {
            queue_id: 3,
            flag: 7,
            queue_offset: 42,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "10.0.0.1:5555".parse().unwrap(),
            store_timestamp: 1_700_000_000_123,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 1,
            prepared_transaction_offset: 0,
            body: Bytes::from_static(b"hello"),
            topic: "TopicTest".into(),
            properties: "TAGS\u{1}A\u{2}".into(),
        }
    }

    #[test]
    fn round_trip_and_patch() {
        let rec = sample();
        let mut bytes = rec.to_vec().unwrap();
        assert_eq!(bytes.len(), rec.encoded_len());
        patch_offsets(&mut bytes, 43, 8192).unwrap();
        patch_store_timestamp(&mut bytes, 0, 99).unwrap();
        let (back, size) = MessageRecord::decode(&bytes, true).unwrap();
        assert_eq!(size, bytes.len());
        assert_eq!(back.queue_offset, 43);
        assert_eq!(back.physical_offset, 8192);
        assert_eq!(back.store_timestamp, 99);
        assert_eq!(back.body, rec.body);
        assert_eq!(back.topic, rec.topic);
    }

    #[test]
    fn ipv6_hosts_set_their_flags() {
        let mut rec = sample();
        rec.born_host = "[::1]:1234".parse().unwrap();
        let bytes = rec.to_vec().unwrap();
        let view = decode_view(&bytes, true).unwrap();
        assert_eq!(view.sys_flag & sys_flag::BORNHOST_V6, sys_flag::BORNHOST_V6);
        assert_eq!(view.born_host, rec.born_host);
        assert_eq!(store_timestamp_pos(view.sys_flag), 68);
    }

    #[test]
    fn crc_and_truncation_are_detected() {
        let mut bytes = sample().to_vec().unwrap();
        let last = bytes.len() - 20;
        assert!(MessageRecord::decode(&bytes[..last], true).is_err());
        // Flip a body byte: the body sits right before topic length + topic + properties.
        let body_pos = bytes.len() - (2 + 6) - (1 + 9) - 5;
        bytes[body_pos] ^= 0xFF;
        assert!(matches!(
            decode_view(&bytes, true),
            Err(RecordError::BodyCrc { .. })
        ));
        assert!(decode_view(&bytes, false).is_ok());
    }

    #[test]
    fn blank_records() {
        let mut out = Vec::new();
        encode_blank(16, &mut out).unwrap();
        assert_eq!(
            peek_head(&out).unwrap(),
            Some(RecordHead::Blank { total_size: 16 })
        );
        assert!(encode_blank(4, &mut out).is_err());
        assert_eq!(peek_head(&[0, 0]).unwrap(), None);
        assert!(peek_head(&[0, 0, 0, 0, 1, 2, 3, 4]).is_err());
    }
}

//! RocketMQ's binary header (`SerializeType.ROCKETMQ`):
//! `code i16 | language u8 | version i16 | opaque i32 | flag i32 | remark (i32 len + utf8) |
//! extFields (i32 total len, then {i16 key len, key, i32 value len, value}*)`, big-endian.
//!
//! Like Java, `code` and `version` travel as 16-bit values (sign-extended when read); a zero-length
//! remark is no remark. Bytes after the extFields are ignored, as Java does.

use bytes::{BufMut, Bytes};

use crate::command::{RemotingCommand, SerializeType};
use crate::ext_fields::FrameFieldsBuilder;
use crate::language::LanguageCode;

/// Why a binary header is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryHeaderError {
    #[error("ROCKETMQ header truncated reading {0}")]
    Truncated(&'static str),
    #[error("ROCKETMQ header has a negative {0} length")]
    NegativeLength(&'static str),
    #[error("ROCKETMQ header {0} is not valid UTF-8")]
    NotUtf8(&'static str),
}

/// Fixed part: code 2 + language 1 + version 2 + opaque 4 + flag 4.
const FIXED_LEN: usize = 13;

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], BinaryHeaderError> {
        if n > self.buf.len() {
            return Err(BinaryHeaderError::Truncated(what));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], BinaryHeaderError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn i16(&mut self, what: &'static str) -> Result<i16, BinaryHeaderError> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, BinaryHeaderError> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    fn str_i32(&mut self, what: &'static str) -> Result<&'a str, BinaryHeaderError> {
        let len = usize::try_from(self.i32(what)?)
            .map_err(|_| BinaryHeaderError::NegativeLength(what))?;
        std::str::from_utf8(self.take(len, what)?).map_err(|_| BinaryHeaderError::NotUtf8(what))
    }
}

fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Decodes a binary header; the body comes from the frame. The fields are read where they lie in
/// `header` (shared with the frame, not copied).
pub fn decode(header: Bytes, body: Bytes) -> Result<RemotingCommand, BinaryHeaderError> {
    let mut r = Reader { buf: &header };
    let code = i32::from(r.i16("code")?);
    let [language] = r.array::<1>("language")?;
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark = r.str_i32("remark")?;
    let remark = (!remark.is_empty()).then(|| remark.to_owned());
    let ext_len = usize::try_from(r.i32("extFields")?)
        .map_err(|_| BinaryHeaderError::NegativeLength("extFields"))?;
    if ext_len > r.buf.len() {
        return Err(BinaryHeaderError::Truncated("extFields"));
    }
    let start = header.len() - r.buf.len();
    let end = start + ext_len;
    let mut fields = FrameFieldsBuilder::new(header, (ext_len / 16 + 4).min(32));
    fields.check_ascii(start..end);
    let mut at = start;
    while at < end {
        let bytes = fields.header().get(..end).unwrap_or_default();
        let key_len = be_i16(bytes, at).ok_or(BinaryHeaderError::Truncated("extFields key"))?;
        let key_len = usize::try_from(key_len)
            .map_err(|_| BinaryHeaderError::NegativeLength("extFields key"))?;
        let key = at + 2..at + 2 + key_len;
        if key.end > end {
            return Err(BinaryHeaderError::Truncated("extFields key"));
        }
        let value_len =
            be_i32(bytes, key.end).ok_or(BinaryHeaderError::Truncated("extFields value"))?;
        let value_len = usize::try_from(value_len)
            .map_err(|_| BinaryHeaderError::NegativeLength("extFields value"))?;
        let value_start = key.end + 4;
        let value = value_start..value_start.saturating_add(value_len);
        if value.end > end {
            return Err(BinaryHeaderError::Truncated("extFields value"));
        }
        at = value.end;
        if !fields.push(key, value) {
            return Err(BinaryHeaderError::NotUtf8("extFields"));
        }
    }
    let mut ext_fields = fields.finish();
    if body.is_empty() {
        // A frame's memory is part of the connection's read buffer. A command with a body holds it
        // anyway; one without (a pull, parked up to its suspend timeout) must not start to.
        ext_fields.unshare();
    }
    Ok(RemotingCommand {
        code,
        language: LanguageCode::from_code(language),
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body,
        body_tail: Vec::new(),
        serialize_type: SerializeType::RocketMq,
    })
}

/// Why a command cannot be written as a binary header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryEncodeError {
    #[error("extFields key of {0} bytes exceeds the i16 length of the ROCKETMQ header")]
    KeyTooLong(usize),
    #[error("ROCKETMQ header field of {0} bytes exceeds the i32 length")]
    TooLong(usize),
}

fn len_i32(n: usize) -> Result<i32, BinaryEncodeError> {
    i32::try_from(n).map_err(|_| BinaryEncodeError::TooLong(n))
}

/// The encoded size of `cmd`'s binary header.
pub fn encoded_len(cmd: &RemotingCommand) -> usize {
    let remark = cmd.remark.as_deref().map_or(0, str::len);
    let ext = cmd.ext_fields.text_len() + 6 * cmd.ext_fields.len();
    FIXED_LEN + 4 + remark + 4 + ext
}

/// Appends the binary header of `cmd`. Code and version are truncated to 16 bits, as Java does.
/// On error `out` may hold part of the header; the frame encoder discards it.
pub fn encode(cmd: &RemotingCommand, out: &mut impl BufMut) -> Result<(), BinaryEncodeError> {
    let remark = cmd.remark.as_deref().unwrap_or("");
    let remark_len = len_i32(remark.len())?;
    // Every value is shorter than the whole, so one check covers all i32 value lengths.
    let ext_len = len_i32(
        cmd.ext_fields
            .text_len()
            .saturating_add(6 * cmd.ext_fields.len()),
    )?;
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.code());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    out.put_i32(remark_len);
    out.put_slice(remark.as_bytes());
    out.put_i32(ext_len);
    for (k, v) in cmd.ext_fields.iter_bytes() {
        let key_len = i16::try_from(k.len()).map_err(|_| BinaryEncodeError::KeyTooLong(k.len()))?;
        out.put_i16(key_len);
        out.put_slice(k);
        out.put_i32(v.len() as i32);
        out.put_slice(v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_with_ext(ext: &[u8]) -> Vec<u8> {
        let mut h = vec![0, 10, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        h.extend_from_slice(&(ext.len() as i32).to_be_bytes());
        h.extend_from_slice(ext);
        h
    }

    #[test]
    fn utf8_split_across_key_and_value_is_rejected() {
        // Key 0xC3 and value 0xA9 form a valid "é" together but are invalid on their own.
        let bad = header_with_ext(&[0, 1, 0xC3, 0, 0, 0, 1, 0xA9]);
        assert_eq!(
            decode(Bytes::from(bad.clone()), Bytes::new()),
            Err(BinaryHeaderError::NotUtf8("extFields"))
        );
        let good = header_with_ext(&[0, 2, 0xC3, 0xA9, 0, 0, 0, 1, b'v']);
        let cmd = decode(Bytes::from(good), Bytes::new()).unwrap();
        assert_eq!(cmd.ext("é"), Some("v"));
        assert_eq!(cmd.code, 10);
        assert_eq!(cmd.opaque, 1);
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        let dup = header_with_ext(&[0, 1, b'k', 0, 0, 0, 1, b'1', 0, 1, b'k', 0, 0, 0, 1, b'2']);
        let cmd = decode(Bytes::from(dup), Bytes::new()).unwrap();
        assert_eq!(cmd.ext_fields.len(), 1);
        assert_eq!(cmd.ext("k"), Some("2"));
    }

    #[test]
    fn fields_read_in_place_can_be_edited() {
        // Values of 200 bytes: their length prefix is not ASCII, so the region as a whole is not text.
        let long = "v".repeat(200);
        let mut ext = Vec::new();
        for (k, v) in [("a", "1"), ("topic", long.as_str()), ("b", "é")] {
            ext.extend_from_slice(&(k.len() as i16).to_be_bytes());
            ext.extend_from_slice(k.as_bytes());
            ext.extend_from_slice(&(v.len() as i32).to_be_bytes());
            ext.extend_from_slice(v.as_bytes());
        }
        let mut cmd = decode(Bytes::from(header_with_ext(&ext)), Bytes::new()).unwrap();
        assert_eq!(
            cmd.ext_fields.iter().collect::<Vec<_>>(),
            vec![("a", "1"), ("topic", long.as_str()), ("b", "é")]
        );
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        assert_eq!(decode(Bytes::from(out), Bytes::new()).unwrap(), cmd);
        // The first edit copies the fields out of the frame; order and values stay.
        cmd.set_ext("a", "2");
        cmd.set_ext("c", "3");
        assert!(cmd.ext_fields.remove("topic"));
        assert_eq!(
            cmd.ext_fields.iter().collect::<Vec<_>>(),
            vec![("a", "2"), ("b", "é"), ("c", "3")]
        );
    }

    #[test]
    fn fields_share_the_frame_only_with_a_body() {
        let header = Bytes::from(header_with_ext(&[0, 1, b'k', 0, 0, 0, 1, b'v']));
        let with_body = decode(header.clone(), Bytes::from_static(b"body")).unwrap();
        assert!(
            !header.is_unique(),
            "a command with a body reads its fields in place"
        );
        drop(with_body);
        // Without a body (a pull, parked for seconds) the fields are copied out of the read buffer.
        let without = decode(header.clone(), Bytes::new()).unwrap();
        assert!(header.is_unique());
        assert_eq!(without.ext("k"), Some("v"));
    }

    #[test]
    fn one_letter_duplicates_are_found() {
        let dup = header_with_ext(&[
            0, 1, b'a', 0, 0, 0, 1, b'1', 0, 1, b'b', 0, 0, 0, 0, 0, 1, b'a', 0, 0, 0, 1, b'3',
        ]);
        let cmd = decode(Bytes::from(dup), Bytes::new()).unwrap();
        assert_eq!(
            cmd.ext_fields.iter().collect::<Vec<_>>(),
            vec![("b", ""), ("a", "3")]
        );
    }

    #[test]
    fn negative_and_overlong_lengths_are_errors() {
        let negative = header_with_ext(&[0xFF, 0xFF]);
        assert_eq!(
            decode(Bytes::from(negative), Bytes::new()),
            Err(BinaryHeaderError::NegativeLength("extFields key"))
        );
        let mut overlong = header_with_ext(&[]);
        overlong.truncate(overlong.len() - 4);
        overlong.extend_from_slice(&100i32.to_be_bytes());
        assert_eq!(
            decode(Bytes::from(overlong), Bytes::new()),
            Err(BinaryHeaderError::Truncated("extFields"))
        );
    }
}

//! Batch bodies (SEND_BATCH_MESSAGE, or SEND_MESSAGE with `batch=true`): messages back to back, each
//! `TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | FLAG i32 | BODY (i32 len + bytes) | PROPERTIES (i16 len + utf8)`.
//!
//! Clients write 0 for MAGICCODE and BODYCRC and RocketMQ's broker ignores TOTALSIZE, MAGICCODE and
//! BODYCRC, walking the entries by their body and properties lengths; this decoder does the same
//! (the stored record gets a freshly computed CRC). The values as sent are still reported.

use bytes::{BufMut, Bytes};

/// Fixed bytes of one entry: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, body length, properties length.
pub const ENTRY_OVERHEAD: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// Why a batch body is malformed, or a message cannot be put in one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("batch entry {index} truncated at byte {offset}")]
    Truncated { index: usize, offset: usize },
    #[error("batch entry {index} has a negative {what} length")]
    NegativeLength { index: usize, what: &'static str },
    #[error("batch entry {index} properties are not valid UTF-8")]
    PropertiesNotUtf8 { index: usize },
    #[error("properties of {0} bytes exceed the i16 length of a batch entry")]
    PropertiesTooLong(usize),
    #[error("entry of {0} bytes exceeds the i32 size of a batch entry")]
    EntryTooLong(usize),
}

/// One message of a batch, borrowed from the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// TOTALSIZE as sent (not trusted).
    pub total_size: i32,
    /// MAGICCODE as sent (clients send 0).
    pub magic: i32,
    /// BODYCRC as sent (clients send 0).
    pub body_crc: i32,
    pub flag: i32,
    pub body: &'a [u8],
    pub properties: &'a str,
    /// Byte position of this entry inside the batch body.
    pub offset: usize,
    /// Bytes this entry really occupies.
    pub encoded_len: usize,
}

/// One message of a batch, owned (the body shares the request body's memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchMessage {
    pub flag: i32,
    pub body: Bytes,
    pub properties: String,
}

/// Walks the entries of a batch body; stops after the first error.
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    index: usize,
    failed: bool,
}

/// Iterates the entries of `body` without copying.
pub fn iter(body: &[u8]) -> BatchIter<'_> {
    BatchIter {
        buf: body,
        pos: 0,
        index: 0,
        failed: false,
    }
}

impl<'a> BatchIter<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BatchError> {
        let truncated = BatchError::Truncated {
            index: self.index,
            offset: self.pos,
        };
        let end = self.pos.checked_add(n).ok_or(truncated.clone())?;
        let out = self.buf.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BatchError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn i32(&mut self) -> Result<i32, BatchError> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    fn i16(&mut self) -> Result<i16, BatchError> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    fn entry(&mut self) -> Result<BatchEntry<'a>, BatchError> {
        let offset = self.pos;
        let index = self.index;
        let total_size = self.i32()?;
        let magic = self.i32()?;
        let body_crc = self.i32()?;
        let flag = self.i32()?;
        let body_len = self.i32()?;
        let body_len = usize::try_from(body_len).map_err(|_| BatchError::NegativeLength {
            index,
            what: "body",
        })?;
        let body = self.take(body_len)?;
        let props_len = self.i16()?;
        let props_len = usize::try_from(props_len).map_err(|_| BatchError::NegativeLength {
            index,
            what: "properties",
        })?;
        let properties = std::str::from_utf8(self.take(props_len)?)
            .map_err(|_| BatchError::PropertiesNotUtf8 { index })?;
        Ok(BatchEntry {
            total_size,
            magic,
            body_crc,
            flag,
            body,
            properties,
            offset,
            encoded_len: self.pos - offset,
        })
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchEntry<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let result = self.entry();
        self.index += 1;
        self.failed = result.is_err();
        Some(result)
    }
}

/// Decodes every entry of a batch body, borrowed.
pub fn decode(body: &[u8]) -> Result<Vec<BatchEntry<'_>>, BatchError> {
    iter(body).collect()
}

/// Decodes every entry of a batch body into owned messages whose bodies share `body`'s memory.
pub fn decode_owned(body: &Bytes) -> Result<Vec<BatchMessage>, BatchError> {
    iter(body)
        .map(|entry| {
            let entry = entry?;
            let start = entry.offset + ENTRY_OVERHEAD - 2;
            Ok(BatchMessage {
                flag: entry.flag,
                body: body.slice(start..start + entry.body.len()),
                properties: entry.properties.to_owned(),
            })
        })
        .collect()
}

/// Bytes one entry takes.
pub fn entry_len(body_len: usize, properties_len: usize) -> usize {
    ENTRY_OVERHEAD
        .saturating_add(body_len)
        .saturating_add(properties_len)
}

/// Appends one entry the way the Java client writes it (MAGICCODE and BODYCRC 0).
pub fn encode_entry(
    flag: i32,
    body: &[u8],
    properties: &str,
    out: &mut impl BufMut,
) -> Result<(), BatchError> {
    if properties.len() > i16::MAX as usize {
        return Err(BatchError::PropertiesTooLong(properties.len()));
    }
    let len = entry_len(body.len(), properties.len());
    let total = i32::try_from(len).map_err(|_| BatchError::EntryTooLong(len))?;
    out.put_i32(total);
    out.put_i32(0);
    out.put_i32(0);
    out.put_i32(flag);
    // Both fit: the whole entry fits in an i32 and properties in an i16.
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    out.put_i16(properties.len() as i16);
    out.put_slice(properties.as_bytes());
    Ok(())
}

/// Encodes messages `(flag, body, properties)` into a batch body.
pub fn encode<'m>(
    messages: impl IntoIterator<Item = (i32, &'m [u8], &'m str)>,
    out: &mut impl BufMut,
) -> Result<(), BatchError> {
    for (flag, body, properties) in messages {
        encode_entry(flag, body, properties, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_hand_written_batch() {
        #[rustfmt::skip]
        let body: &[u8] = &[
            0, 0, 0, 25,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 7,  0, 0, 0, 1, b'x',  0, 2, b'k', b'v',
            0, 0, 0, 22,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,        0, 0,
        ];
        let entries = decode(body).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].flag, 7);
        assert_eq!(entries[0].body, b"x");
        assert_eq!(entries[0].properties, "kv");
        assert_eq!(entries[0].total_size, 25);
        assert_eq!(entries[0].encoded_len, 25);
        assert_eq!(entries[1].body, b"");
        assert_eq!(entries[1].offset, 25);
        let owned = decode_owned(&Bytes::copy_from_slice(body)).unwrap();
        assert_eq!(&owned[0].body[..], b"x");
        let mut again = Vec::new();
        encode([(7, &b"x"[..], "kv"), (0, &b""[..], "")], &mut again).unwrap();
        assert_eq!(again, body);
    }

    #[test]
    fn bad_batches_are_errors() {
        assert_eq!(decode(&[]).unwrap(), vec![]);
        assert_eq!(
            decode(&[0, 0, 0]),
            Err(BatchError::Truncated {
                index: 0,
                offset: 0
            })
        );
        let mut body = Vec::new();
        encode_entry(0, b"abc", "p", &mut body).unwrap();
        let mut negative = body.clone();
        negative[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            decode(&negative),
            Err(BatchError::NegativeLength {
                index: 0,
                what: "body"
            })
        );
        body.extend_from_slice(&body.clone()[..10]);
        assert_eq!(
            decode(&body),
            Err(BatchError::Truncated {
                index: 1,
                offset: 34
            })
        );
        assert!(encode_entry(0, b"", &"p".repeat(40_000), &mut Vec::new()).is_err());
    }
}

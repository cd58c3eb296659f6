//! Frames: `i32 length (excludes itself) | i32 (serializeType << 24 | headerLength) | header | body`.
//!
//! [`decode_frame`] is incremental: it returns `Ok(None)` until a whole frame is buffered and then
//! consumes exactly that frame. Lengths are checked before anything is consumed or allocated, so a
//! hostile length costs nothing. Frames over 16 MiB (length prefix included, as Netty's
//! `LengthFieldBasedFrameDecoder` counts them in RocketMQ) are refused.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::codec::binary::{self, BinaryEncodeError, BinaryHeaderError};
use crate::codec::json;
use crate::command::{RemotingCommand, SerializeType};

/// Largest accepted frame, its 4-byte length prefix included.
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;
/// Largest header (24 bits of the second int).
pub const MAX_HEADER_LEN: usize = 0x00FF_FFFF;
/// Length prefix + serialize-type/header-length int.
const PREFIX_LEN: usize = 8;

/// Why bytes are not a valid frame, or a command cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {0} is negative")]
    NegativeLength(i32),
    #[error("frame length {0} is shorter than the 4-byte header-length field")]
    TooShort(i32),
    #[error("frame of {0} bytes exceeds the {MAX_FRAME_LEN}-byte limit")]
    TooLarge(usize),
    #[error("header length {header} exceeds what the frame holds ({available} bytes)")]
    HeaderTooLong { header: usize, available: usize },
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("bad JSON header: {0}")]
    Json(String),
    #[error(transparent)]
    Binary(#[from] BinaryHeaderError),
    #[error(transparent)]
    BinaryEncode(#[from] BinaryEncodeError),
    #[error("encoded header of {0} bytes exceeds the 24-bit header length")]
    HeaderTooLarge(usize),
}

fn be_i32(buf: &[u8], at: usize) -> Option<i32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(i32::from_be_bytes(b.try_into().ok()?))
}

/// The whole size (length prefix included) of the frame at the start of `buf`, once its 4-byte
/// length is buffered; `Ok(None)` before that. Fails on a negative, too short or too large length.
pub fn frame_length(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let Some(length) = be_i32(buf, 0) else {
        return Ok(None);
    };
    let body_and_header =
        usize::try_from(length).map_err(|_| FrameError::NegativeLength(length))?;
    if body_and_header < 4 {
        return Err(FrameError::TooShort(length));
    }
    let total = body_and_header.saturating_add(4);
    if total > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge(total));
    }
    Ok(Some(total))
}

/// Splits the serialize-type/header-length int and checks both against the frame size.
fn header_info(buf: &[u8], total: usize) -> Result<Option<(SerializeType, usize)>, FrameError> {
    let Some(word) = be_i32(buf, 4) else {
        return Ok(None);
    };
    let type_code = (word as u32 >> 24) as u8;
    let serialize_type =
        SerializeType::from_code(type_code).ok_or(FrameError::UnknownSerializeType(type_code))?;
    let header_len = (word & 0x00FF_FFFF) as usize;
    let available = total.saturating_sub(PREFIX_LEN);
    if header_len > available {
        return Err(FrameError::HeaderTooLong {
            header: header_len,
            available,
        });
    }
    Ok(Some((serialize_type, header_len)))
}

/// Bytes a [`FrameBuffer`] makes room for when no frame is under way.
const READ_CHUNK: usize = 64 * 1024;

/// One connection's read buffer, for clients that do their own reading (on tokio or any other
/// runtime; nothing here does I/O): read into [`FrameBuffer::read_space`], take whole commands out
/// with [`FrameBuffer::next_frame`]. A frame's length is checked before room is made for it.
#[derive(Debug, Default)]
pub struct FrameBuffer {
    buf: BytesMut,
}

impl FrameBuffer {
    pub fn new() -> Self {
        FrameBuffer {
            buf: BytesMut::with_capacity(READ_CHUNK),
        }
    }

    /// The buffer to read into (append only), with room for the rest of the frame being received
    /// or for a chunk when none is under way. Fails on a frame length that is refused (negative,
    /// too short, over [`MAX_FRAME_LEN`]): the connection cannot be resynchronised.
    pub fn read_space(&mut self) -> Result<&mut BytesMut, FrameError> {
        let missing = match frame_length(&self.buf)? {
            Some(total) => total.saturating_sub(self.buf.len()),
            None => 0,
        };
        let want = missing.max(READ_CHUNK);
        if self.buf.capacity() - self.buf.len() < want {
            self.buf.reserve(want);
        }
        Ok(&mut self.buf)
    }

    /// The next whole command, if one is buffered (see [`decode_frame`] for the errors).
    pub fn next_frame(&mut self) -> Result<Option<RemotingCommand>, FrameError> {
        decode_frame(&mut self.buf)
    }

    /// Bytes received but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

/// Decodes one frame from the front of `buf`.
///
/// `Ok(None)`: more bytes are needed (nothing consumed). `Ok(Some)`: exactly one frame consumed;
/// the body shares the frame's memory. A bad length, header length or serialize type is an error
/// with nothing consumed (the connection cannot be resynchronised). A header that fails to parse
/// is an error after the frame was consumed, so a caller may answer it and go on.
pub fn decode_frame(buf: &mut BytesMut) -> Result<Option<RemotingCommand>, FrameError> {
    let Some(total) = frame_length(buf)? else {
        return Ok(None);
    };
    // Checked before waiting for the rest, so a bad frame fails as early as possible.
    let Some((serialize_type, header_len)) = header_info(buf, total)? else {
        return Ok(None);
    };
    if buf.len() < total {
        return Ok(None);
    }
    // total >= PREFIX_LEN (a length of at least 4) and header_len <= total - PREFIX_LEN (checked).
    let mut header = buf.split_to(total).freeze();
    header.advance(PREFIX_LEN);
    let body = header.split_off(header_len);
    decode_header(serialize_type, header, body)
}

/// Decodes a header of the given type; `body` becomes the command's body. A ROCKETMQ header's
/// fields keep sharing `header`'s memory.
pub fn decode_header(
    serialize_type: SerializeType,
    header: Bytes,
    body: Bytes,
) -> Result<Option<RemotingCommand>, FrameError> {
    let cmd = match serialize_type {
        SerializeType::Json => {
            json::decode(&header, body).map_err(|e| FrameError::Json(e.to_string()))?
        }
        SerializeType::RocketMq => binary::decode(header, body)?,
    };
    Ok(Some(cmd))
}

/// Appends the length prefix and header of `cmd` (in `cmd.serialize_type`) to `out`; the length
/// counts `cmd.body` and `cmd.body_tail`, which the caller sends next (lets large bodies go out
/// without a copy).
/// On error `out` is left as it was.
pub fn encode_frame_head(cmd: &RemotingCommand, out: &mut BytesMut) -> Result<(), FrameError> {
    let start = out.len();
    let result = write_head(cmd, out, start);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn write_head(cmd: &RemotingCommand, out: &mut BytesMut, start: usize) -> Result<(), FrameError> {
    out.put_u64(0);
    match cmd.serialize_type {
        SerializeType::Json => {
            out.reserve(160 + cmd.ext_fields.text_len() + 8 * cmd.ext_fields.len());
            json::encode(cmd, out);
        }
        SerializeType::RocketMq => {
            out.reserve(binary::encoded_len(cmd));
            binary::encode(cmd, out)?;
        }
    }
    let header_len = out.len() - start - PREFIX_LEN;
    if header_len > MAX_HEADER_LEN {
        return Err(FrameError::HeaderTooLarge(header_len));
    }
    let total = PREFIX_LEN
        .saturating_add(header_len)
        .saturating_add(cmd.body_len());
    if total > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge(total));
    }
    // Both fit in an i32: total <= 16 MiB and header_len < 2^24.
    let length = (total - 4) as i32;
    let word = (i32::from(cmd.serialize_type.code()) << 24) | header_len as i32;
    if let Some(prefix) = out.get_mut(start..start + PREFIX_LEN) {
        let (length_field, word_field) = prefix.split_at_mut(4);
        length_field.copy_from_slice(&length.to_be_bytes());
        word_field.copy_from_slice(&word.to_be_bytes());
    }
    Ok(())
}

/// Appends the whole frame of `cmd` (header in `cmd.serialize_type`, then the body) to `out`.
/// On error `out` is left as it was.
pub fn encode_frame(cmd: &RemotingCommand, out: &mut BytesMut) -> Result<(), FrameError> {
    encode_frame_head(cmd, out)?;
    out.extend_from_slice(&cmd.body);
    for part in &cmd.body_tail {
        out.extend_from_slice(part);
    }
    Ok(())
}

/// The whole frame of `cmd` as one buffer.
pub fn encode_to_bytes(cmd: &RemotingCommand) -> Result<Bytes, FrameError> {
    let mut out = BytesMut::with_capacity(cmd.body_len().saturating_add(256));
    encode_frame(cmd, &mut out)?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_frames_wait() {
        let cmd = RemotingCommand::request(10)
            .with_ext("a", "b")
            .with_body(&b"xyz"[..]);
        let bytes = encode_to_bytes(&cmd).unwrap();
        for cut in 0..bytes.len() {
            let mut buf = BytesMut::from(&bytes[..cut]);
            assert_eq!(decode_frame(&mut buf).unwrap(), None, "cut at {cut}");
            assert_eq!(buf.len(), cut);
        }
        let mut buf = BytesMut::from(&bytes[..]);
        buf.extend_from_slice(&bytes);
        assert_eq!(decode_frame(&mut buf).unwrap(), Some(cmd.clone()));
        assert_eq!(decode_frame(&mut buf).unwrap(), Some(cmd));
        assert!(buf.is_empty());
    }

    #[test]
    fn a_frame_buffer_yields_frames_read_in_pieces() {
        let cmd = RemotingCommand::request(10)
            .with_ext("a", "b")
            .with_body(vec![7u8; 100_000]);
        let bytes = encode_to_bytes(&cmd).unwrap();
        let mut frames = FrameBuffer::new();
        let mut decoded = 0;
        for piece in bytes.chunks(3000).chain(bytes.chunks(70_000)) {
            let space = frames.read_space().unwrap();
            // Room for the whole rest of a frame whose length is known: one read can finish it.
            assert!(space.capacity() - space.len() >= piece.len());
            space.extend_from_slice(piece);
            while let Some(got) = frames.next_frame().unwrap() {
                assert_eq!(got, cmd);
                decoded += 1;
            }
        }
        assert_eq!(decoded, 2);
        assert_eq!(frames.buffered(), 0);
        let mut hostile = FrameBuffer::new();
        hostile
            .read_space()
            .unwrap()
            .extend_from_slice(&[0x7F, 0xFF, 0xFF, 0xFF]);
        assert!(matches!(hostile.read_space(), Err(FrameError::TooLarge(_))));
    }

    #[test]
    fn bad_lengths_fail_without_consuming() {
        let mut buf = BytesMut::from(&[0xFFu8, 0xFF, 0xFF, 0xFF][..]);
        assert_eq!(decode_frame(&mut buf), Err(FrameError::NegativeLength(-1)));
        let mut buf = BytesMut::from(&[0u8, 0, 0, 3][..]);
        assert_eq!(decode_frame(&mut buf), Err(FrameError::TooShort(3)));
        // 16 MiB - 4 is the largest length; one more is refused before any body arrives.
        let mut buf = BytesMut::from(&[0x00u8, 0xFF, 0xFF, 0xFD][..]);
        assert_eq!(
            decode_frame(&mut buf),
            Err(FrameError::TooLarge(MAX_FRAME_LEN + 1))
        );
        let mut buf = BytesMut::from(&[0x00u8, 0xFF, 0xFF, 0xFC][..]);
        assert_eq!(decode_frame(&mut buf), Ok(None));
        assert_eq!(buf.len(), 4);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 8, 2, 0, 0, 0][..]);
        assert_eq!(
            decode_frame(&mut buf),
            Err(FrameError::UnknownSerializeType(2))
        );
        let mut buf = BytesMut::from(&[0u8, 0, 0, 8, 0, 0, 0, 5][..]);
        assert!(matches!(
            decode_frame(&mut buf),
            Err(FrameError::HeaderTooLong {
                header: 5,
                available: 4
            })
        ));
    }

    #[test]
    fn a_body_tail_is_framed_after_the_body() {
        let joined = RemotingCommand::response(1, None).with_body(&b"abcdefg"[..]);
        let mut parts = RemotingCommand::response(1, None).with_body(&b"ab"[..]);
        parts.body_tail = vec![Bytes::from_static(b"cde"), Bytes::new(), Bytes::from_static(b"fg")];
        assert_eq!(parts.body_len(), 7);
        assert_eq!(parts.joined_body(), joined.body);
        assert_eq!(encode_to_bytes(&parts).unwrap(), encode_to_bytes(&joined).unwrap());
        let mut head = BytesMut::new();
        encode_frame_head(&parts, &mut head).unwrap();
        let whole = encode_to_bytes(&joined).unwrap();
        assert_eq!(&whole[..head.len()], &head[..]);
        let mut tail = RemotingCommand::response(1, None);
        tail.body_tail = vec![Bytes::from(vec![0u8; MAX_FRAME_LEN])];
        assert!(matches!(
            encode_frame(&tail, &mut BytesMut::new()),
            Err(FrameError::TooLarge(_))
        ));
    }

    #[test]
    fn oversized_commands_are_not_encoded() {
        let cmd = RemotingCommand::request(10).with_body(vec![0u8; MAX_FRAME_LEN]);
        let mut out = BytesMut::from(&b"keep"[..]);
        assert!(matches!(
            encode_frame(&cmd, &mut out),
            Err(FrameError::TooLarge(_))
        ));
        assert_eq!(&out[..], b"keep");
    }
}

//! Frame-level reading and writing of `RemotingCommand`s over any async byte stream.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use protocol::command::RemotingCommand;
use protocol::frame::{decode_frame, encode_frame};

use crate::error::RemotingError;

/// Bytes asked of the socket per read when the buffer has no room.
const READ_CHUNK: usize = 64 * 1024;

/// Owns the read buffer: decodes whole frames, reads more only when a frame is incomplete.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    /// What the socket reads into: zeroed once, so a read costs a copy of what arrived rather than
    /// zeroing the whole free capacity of `buf` each time (2% of the broker's CPU in S3).
    scratch: Vec<u8>,
    /// When the first byte of the frame now being received arrived; `None` between frames.
    frame_started: Rc<Cell<Option<Instant>>>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scratch: vec![0; READ_CHUNK],
            frame_started: Rc::new(Cell::new(None)),
        }
    }

    /// Shared view of when the partial frame now buffered began (for a watchdog against slowloris).
    pub fn frame_clock(&self) -> Rc<Cell<Option<Instant>>> {
        self.frame_started.clone()
    }

    /// The next command; `Ok(None)` when the peer closed cleanly between frames.
    pub async fn read_command(&mut self) -> Result<Option<RemotingCommand>, RemotingError> {
        loop {
            if let Some(cmd) = decode_frame(&mut self.buf)? {
                // Bytes left over are the start of the next frame.
                self.frame_started
                    .set((!self.buf.is_empty()).then(Instant::now));
                return Ok(Some(cmd));
            }
            if !self.buf.is_empty() && self.frame_started.get().is_none() {
                self.frame_started.set(Some(Instant::now()));
            }
            let n = match self.inner.read(&mut self.scratch).await {
                Ok(n) => n,
                // A TLS peer that closes without close_notify (the Java client, most clients): the
                // same end of stream as a plaintext close, clean between frames.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                Err(e) => return Err(e.into()),
            };
            if self.buf.capacity() - self.buf.len() < n {
                self.buf.reserve(n.max(READ_CHUNK));
            }
            self.buf
                .extend_from_slice(self.scratch.get(..n).unwrap_or_default());
            if n == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(RemotingError::Closed)
                };
            }
        }
    }

    /// Bytes received but not yet decoded (a partial frame).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

/// Encodes commands into one buffer and writes them with as few syscalls as possible.
pub struct FrameWriter<W> {
    inner: W,
    buf: BytesMut,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
        }
    }

    /// Queues a command in the write buffer (nothing is sent until `flush`).
    pub fn buffer_command(&mut self, cmd: &RemotingCommand) -> Result<(), RemotingError> {
        encode_frame(cmd, &mut self.buf)?;
        Ok(())
    }

    /// Bytes waiting in the write buffer.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Sends everything buffered.
    pub async fn flush(&mut self) -> Result<(), RemotingError> {
        if !self.buf.is_empty() {
            self.inner.write_all(&self.buf).await?;
            self.buf.clear();
        }
        self.inner.flush().await?;
        Ok(())
    }

    /// Sends everything buffered, failing with `Timeout` only when the peer takes no byte at all for
    /// `stall`: a slow reader that keeps reading is not stalled, however long the whole buffer takes.
    pub async fn flush_unless_stalled(&mut self, stall: Duration) -> Result<(), RemotingError> {
        while !self.buf.is_empty() {
            let (inner, buf) = (&mut self.inner, &self.buf);
            let written =
                crate::timeout::with_timeout(stall, async move { Ok(inner.write(buf).await?) })
                    .await?;
            if written == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
            }
            self.buf.advance(written);
        }
        let inner = &mut self.inner;
        crate::timeout::with_timeout(stall, async move { Ok(inner.flush().await?) }).await
    }

    /// Buffers and sends one command.
    pub async fn write_command(&mut self, cmd: &RemotingCommand) -> Result<(), RemotingError> {
        self.buffer_command(cmd)?;
        self.flush().await
    }

    /// Closes the write side.
    pub async fn close(&mut self) -> Result<(), RemotingError> {
        self.inner.close().await?;
        Ok(())
    }
}

//! Frame-level reading and writing of `RemotingCommand`s over any async byte stream.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use std::collections::VecDeque;
use std::os::fd::RawFd;

use bytes::{Buf, Bytes, BytesMut};
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use protocol::command::RemotingCommand;
use protocol::frame::{decode_frame, encode_frame, encode_frame_head};

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

/// On a plain socket, bodies at least this large are not copied into the write buffer: they are
/// queued as they are (a pull's records) and sent after their frame's head.
const SHARED_BODY_MIN: usize = 8 * 1024;
/// Most buffers handed to one `sendmsg`.
const MAX_IOVECS: usize = 256;

/// Encodes commands into one buffer and writes them with as few syscalls as possible. Large bodies
/// are queued without a copy (`SHARED_BODY_MIN`); on a plain socket (`with_direct_socket`) the queue
/// goes out in one vectored `sendmsg` when the socket takes it, else piece by piece.
pub struct FrameWriter<W> {
    inner: W,
    buf: BytesMut,
    /// What goes out before `buf`'s bytes, in order: frames' heads (split off `buf`) and large bodies.
    parts: VecDeque<Bytes>,
    /// Bytes in `parts`.
    queued: usize,
    /// The plain socket under `inner`, written with non-blocking `sendmsg` before `inner` is asked.
    direct: Option<RawFd>,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            parts: VecDeque::new(),
            queued: 0,
            direct: None,
        }
    }

    /// Sends queued bytes straight to `fd` with vectored, non-blocking `sendmsg` calls, falling back
    /// to `inner` only to wait for room. `fd` must be the plain socket `inner` writes to, with
    /// nothing between them (never a TLS stream's socket): bytes written there bypass `inner`.
    pub fn with_direct_socket(mut self, fd: RawFd) -> Self {
        self.direct = Some(fd);
        self
    }

    /// Queues a command in the write buffer (nothing is sent until `flush`).
    pub fn buffer_command(&mut self, cmd: &RemotingCommand) -> Result<(), RemotingError> {
        // Through TLS (or any stream without a socket of its own) a separate write of the body
        // would cost a record and a syscall of its own: it is copied as before.
        if cmd.body_len() < SHARED_BODY_MIN || self.direct.is_none() {
            encode_frame(cmd, &mut self.buf)?;
            return Ok(());
        }
        encode_frame_head(cmd, &mut self.buf)?;
        let head = self.buf.split().freeze();
        self.queue(head);
        for part in std::iter::once(&cmd.body).chain(&cmd.body_tail) {
            self.queue(part.clone());
        }
        Ok(())
    }

    /// As `buffer_command`, taking the command: a large body's parts are moved into the queue, not
    /// cloned (a clone of a buffer that is not shared yet allocates).
    pub fn buffer_owned(&mut self, mut cmd: RemotingCommand) -> Result<(), RemotingError> {
        if cmd.body_len() < SHARED_BODY_MIN || self.direct.is_none() {
            return self.buffer_command(&cmd);
        }
        encode_frame_head(&cmd, &mut self.buf)?;
        let head = self.buf.split().freeze();
        self.queue(head);
        let body = std::mem::take(&mut cmd.body);
        for part in std::iter::once(body).chain(std::mem::take(&mut cmd.body_tail)) {
            self.queue(part);
        }
        Ok(())
    }

    /// Appends a non-empty part to the queue.
    fn queue(&mut self, part: Bytes) {
        if !part.is_empty() {
            self.queued += part.len();
            self.parts.push_back(part);
        }
    }

    /// Bytes waiting to be sent.
    pub fn buffered(&self) -> usize {
        self.queued + self.buf.len()
    }

    /// Sends everything buffered.
    pub async fn flush(&mut self) -> Result<(), RemotingError> {
        self.send_all(None).await?;
        self.inner.flush().await?;
        Ok(())
    }

    /// Sends everything buffered, failing with `Timeout` only when the peer takes no byte at all for
    /// `stall`: a slow reader that keeps reading is not stalled, however long the whole buffer takes.
    pub async fn flush_unless_stalled(&mut self, stall: Duration) -> Result<(), RemotingError> {
        self.send_all(Some(stall)).await?;
        let inner = &mut self.inner;
        crate::timeout::with_timeout(stall, async move { Ok(inner.flush().await?) }).await
    }

    /// Writes the queued parts then the buffer; each wait for the peer is bounded by `stall`.
    async fn send_all(&mut self, stall: Option<Duration>) -> Result<(), RemotingError> {
        if self.parts.is_empty() && self.direct.is_none() && stall.is_none() {
            // The common case of small frames to a TLS stream or a client: one write_all.
            if !self.buf.is_empty() {
                self.inner.write_all(&self.buf).await?;
                self.buf.clear();
            }
            return Ok(());
        }
        if !self.buf.is_empty() && !self.parts.is_empty() {
            let rest = self.buf.split().freeze();
            self.queue(rest);
        }
        while !self.parts.is_empty() || !self.buf.is_empty() {
            let sent = match self
                .direct
                .map(|fd| send_vectored(fd, &self.parts, &self.buf))
            {
                Some(Ok(n)) => n,
                Some(Err(e)) if e.kind() != std::io::ErrorKind::WouldBlock => return Err(e.into()),
                // No room (or no socket of our own): wait through `inner`, which takes some bytes.
                _ => {
                    let (inner, piece) = match self.parts.front() {
                        Some(p) => (&mut self.inner, &p[..]),
                        None => (&mut self.inner, &self.buf[..]),
                    };
                    match stall {
                        Some(limit) => {
                            crate::timeout::with_timeout(limit, async move {
                                Ok(inner.write(piece).await?)
                            })
                            .await?
                        }
                        None => inner.write(piece).await?,
                    }
                }
            };
            if sent == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
            }
            self.advance(sent);
        }
        Ok(())
    }

    /// Drops `n` sent bytes from the front of the queue, then of the buffer.
    fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let Some(front) = self.parts.front_mut() else {
                break;
            };
            if n < front.len() {
                front.advance(n);
                self.queued -= n;
                return;
            }
            n -= front.len();
            self.queued -= front.len();
            self.parts.pop_front();
        }
        self.buf.advance(n.min(self.buf.len()));
        if self.buf.is_empty() {
            self.buf.clear();
        }
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

/// One non-blocking `sendmsg` of the queued parts then `buf` (the first `MAX_IOVECS` buffers) to
/// the socket `fd`; the bytes it took, or why not (`WouldBlock` when the socket has no room).
fn send_vectored(fd: RawFd, parts: &VecDeque<Bytes>, buf: &[u8]) -> std::io::Result<usize> {
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_IOVECS];
    let mut count = 0;
    let pieces = parts.iter().map(|p| &p[..]).chain(std::iter::once(buf));
    for (slot, piece) in iov.iter_mut().zip(pieces.filter(|p| !p.is_empty())) {
        slot.iov_base = piece.as_ptr() as *mut libc::c_void;
        slot.iov_len = piece.len();
        count += 1;
    }
    // SAFETY: a zeroed msghdr is valid (no name, no control data); it then points at `iov`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = count as _;
    // SAFETY: the first `count` iovecs point into buffers borrowed for this call; sendmsg only
    // reads them.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.kind() == std::io::ErrorKind::Interrupted {
            std::io::ErrorKind::WouldBlock.into()
        } else {
            e
        });
    }
    Ok(n as usize)
}

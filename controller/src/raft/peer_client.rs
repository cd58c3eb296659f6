//! A small remoting client on tokio: one connection, one request at a time. Raft messages to the
//! other controllers and role-change notices to brokers go out through it from the raft thread.
//!
//! Why this is not `remoting::Client`: that client lives on a glommio executor (its state is
//! `Rc`/`Cell`, its socket, tasks and timers are glommio's), and raft (openraft) runs on a tokio
//! thread of its own, where a glommio future can be neither polled nor sent between threads. What
//! needs no runtime is shared through `protocol`: commands, headers, frame encoding and decoding
//! (`FrameBuffer` is this client's read buffer). The proxy's tokio client multiplexes many requests
//! per connection; raft needs one at a time per peer, so this one stays this small.

use std::time::Duration;

use protocol::frame::FrameBuffer;
use protocol::RemotingCommand;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connection to one address, opened on first use and again after any failure.
pub struct PeerClient {
    addr: String,
    /// The socket and what was read from it but not yet decoded; dropped together after a failure.
    conn: Option<(TcpStream, FrameBuffer)>,
    next_opaque: i32,
}

impl PeerClient {
    pub fn new(addr: String) -> PeerClient {
        PeerClient {
            addr,
            conn: None,
            next_opaque: 1,
        }
    }

    async fn connected(&mut self) -> std::io::Result<&mut (TcpStream, FrameBuffer)> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(&self.addr).await?;
            stream.set_nodelay(true)?;
            self.conn = Some((stream, FrameBuffer::new()));
        }
        self.conn
            .as_mut()
            .ok_or_else(|| std::io::Error::other("not connected"))
    }

    async fn exchange(
        &mut self,
        request: RemotingCommand,
        oneway: bool,
    ) -> std::io::Result<Option<RemotingCommand>> {
        let frame = protocol::frame::encode_to_bytes(&request).map_err(std::io::Error::other)?;
        let (stream, frames) = self.connected().await?;
        stream.write_all(&frame).await?;
        if oneway {
            return Ok(None);
        }
        loop {
            while let Some(cmd) = frames.next_frame().map_err(std::io::Error::other)? {
                // A late answer to an earlier request that timed out is skipped.
                if cmd.is_response() && cmd.opaque == request.opaque {
                    return Ok(Some(cmd));
                }
            }
            // The frame's length is checked (16 MiB at most) before room is made for it.
            let space = frames.read_space().map_err(std::io::Error::other)?;
            if stream.read_buf(space).await? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
    }

    /// Sends `request` and waits up to `timeout` for its response. Any failure drops the connection.
    pub async fn call(
        &mut self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> std::io::Result<RemotingCommand> {
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        let result = match tokio::time::timeout(timeout, self.exchange(request, false)).await {
            Ok(Ok(Some(cmd))) => Ok(cmd),
            Ok(Ok(None)) => Err(std::io::Error::other("no response")),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer from {} in {timeout:?}", self.addr),
            )),
        };
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// Sends a oneway request (no response expected).
    pub async fn send_oneway(
        &mut self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> std::io::Result<()> {
        request.mark_oneway();
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        match tokio::time::timeout(timeout, self.exchange(request, true)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.conn = None;
                Err(e)
            }
            Err(_) => {
                self.conn = None;
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "send timed out",
                ))
            }
        }
    }
}

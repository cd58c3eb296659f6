//! A small remoting client on tokio: one connection, one request at a time. Raft messages to the
//! other controllers and role-change notices to brokers go out through it from the raft thread.

use std::time::Duration;

use bytes::BytesMut;
use protocol::RemotingCommand;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Frames larger than this are refused (as the remoting layer does).
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// A connection to one address, opened on first use and again after any failure.
pub struct PeerClient {
    addr: String,
    stream: Option<TcpStream>,
    next_opaque: i32,
}

impl PeerClient {
    pub fn new(addr: String) -> PeerClient {
        PeerClient {
            addr,
            stream: None,
            next_opaque: 1,
        }
    }

    async fn connected(&mut self) -> std::io::Result<&mut TcpStream> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.addr).await?;
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
        }
        self.stream
            .as_mut()
            .ok_or_else(|| std::io::Error::other("not connected"))
    }

    async fn exchange(&mut self, request: RemotingCommand, oneway: bool) -> std::io::Result<Option<RemotingCommand>> {
        let frame = protocol::frame::encode_to_bytes(&request).map_err(std::io::Error::other)?;
        let stream = self.connected().await?;
        stream.write_all(&frame).await?;
        if oneway {
            return Ok(None);
        }
        loop {
            let mut len = [0u8; 4];
            stream.read_exact(&mut len).await?;
            let n = u32::from_be_bytes(len) as usize;
            if n > MAX_FRAME {
                return Err(std::io::Error::other(format!("frame of {n} bytes refused")));
            }
            let mut buf = BytesMut::with_capacity(n + 4);
            buf.extend_from_slice(&len);
            buf.resize(n + 4, 0);
            stream.read_exact(buf.get_mut(4..).unwrap_or_default()).await?;
            let cmd = protocol::decode_frame(&mut buf)
                .map_err(std::io::Error::other)?
                .ok_or_else(|| std::io::Error::other("short frame"))?;
            // A late answer to an earlier request that timed out is skipped.
            if cmd.is_response() && cmd.opaque == request.opaque {
                return Ok(Some(cmd));
            }
        }
    }

    /// Sends `request` and waits up to `timeout` for its response. Any failure drops the connection.
    pub async fn call(&mut self, mut request: RemotingCommand, timeout: Duration) -> std::io::Result<RemotingCommand> {
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        let result = match tokio::time::timeout(timeout, self.exchange(request, false)).await {
            Ok(Ok(Some(cmd))) => Ok(cmd),
            Ok(Ok(None)) => Err(std::io::Error::other("no response")),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, format!("no answer from {} in {timeout:?}", self.addr))),
        };
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    /// Sends a oneway request (no response expected).
    pub async fn send_oneway(&mut self, mut request: RemotingCommand, timeout: Duration) -> std::io::Result<()> {
        request.mark_oneway();
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        match tokio::time::timeout(timeout, self.exchange(request, true)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.stream = None;
                Err(e)
            }
            Err(_) => {
                self.stream = None;
                Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "send timed out"))
            }
        }
    }
}

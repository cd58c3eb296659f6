//! Serving one accepted connection: read requests, run each on its own task, write responses in batches.

use std::cell::Cell;
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;

use futures_lite::future::poll_once;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::net::TcpStream;
use glommio::sync::Semaphore;
use protocol::command::RemotingCommand;

use crate::framed::{FrameReader, FrameWriter};
use crate::RemotingError;

/// Stop gathering responses into one write past this many bytes.
const MAX_WRITE_BATCH: usize = 1024 * 1024;

/// A request handler shared by every connection of one executor.
pub trait Handler: 'static {
    /// Handles one request. The returned response is sent unless the request was oneway; its opaque,
    /// response bit and serialize type are set from the request here, so handlers can't get them wrong.
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>>;

    /// Called once when the connection is gone (peer closed, error, or bad frame).
    fn on_close(&self, _ctx: &ConnectionContext) {}
}

/// Sends commands (responses, or server-initiated oneway requests) to one connection.
#[derive(Clone)]
pub struct ResponseSink {
    tx: Rc<LocalSender<RemotingCommand>>,
    closed: Rc<Cell<bool>>,
    fd: RawFd,
}

impl ResponseSink {
    /// Queues a command, waiting while the connection's write queue is full.
    pub async fn send(&self, cmd: RemotingCommand) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed);
        }
        self.tx.send(cmd).await.map_err(|_| RemotingError::Closed)
    }

    /// Queues a command without waiting; fails when the queue is full or the connection closed.
    pub fn try_send(&self, cmd: RemotingCommand) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed);
        }
        self.tx.try_send(cmd).map_err(|_| RemotingError::Closed)
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Closes the connection (e.g. an expired or misbehaving peer); pending reads end at once.
    pub fn close(&self) {
        if !self.closed.replace(true) {
            shutdown_socket(self.fd);
        }
    }
}

/// Shuts a socket down both ways. Only called while the socket is known to be open: the `closed`
/// flag is set before the stream's halves are dropped, so the descriptor can't have been reused.
pub(crate) fn shutdown_socket(fd: RawFd) {
    // SAFETY: shutdown(2) on a descriptor we own; errors (e.g. already disconnected) are harmless.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

/// What a handler knows about the connection a request came on.
#[derive(Clone)]
pub struct ConnectionContext {
    /// Unique per executor while the process runs.
    pub id: u64,
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub sink: ResponseSink,
}

thread_local! {
    static NEXT_CONNECTION_ID: Cell<u64> = const { Cell::new(1) };
}

async fn write_loop<W: futures_lite::AsyncWrite + Unpin>(
    mut writer: FrameWriter<W>,
    rx: LocalReceiver<RemotingCommand>,
    closed: Rc<Cell<bool>>,
) {
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        // Gather whatever else is ready into the same write.
        while let Some(cmd) = next.take() {
            if let Err(e) = writer.buffer_command(&cmd) {
                tracing::warn!("dropping a response that cannot be encoded: {e}");
            }
            if writer.buffered() >= MAX_WRITE_BATCH {
                break;
            }
            next = poll_once(rx.recv()).await.flatten();
        }
        if let Err(e) = writer.flush().await {
            tracing::debug!("write failed, closing connection: {e}");
            closed.set(true);
            return;
        }
    }
}

/// Serves `stream` until the peer closes it or sends an unreadable frame. At most `max_in_flight`
/// requests of this connection run at once; past that, reading pauses (back-pressure on the client).
pub async fn serve_connection<H: Handler>(
    stream: TcpStream,
    handler: Rc<H>,
    max_in_flight: usize,
) -> Result<(), RemotingError> {
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr()?;
    let local = stream.local_addr()?;
    let fd = stream.as_raw_fd();
    let (read_half, write_half) = futures_lite::io::split(stream);
    let (tx, rx) = local_channel::new_bounded(max_in_flight.max(1) * 2);
    let closed = Rc::new(Cell::new(false));
    let writer = glommio::spawn_local(write_loop(FrameWriter::new(write_half), rx, closed.clone()));
    let id = NEXT_CONNECTION_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    });
    let ctx = ConnectionContext {
        id,
        peer,
        local,
        sink: ResponseSink {
            tx: Rc::new(tx),
            closed: closed.clone(),
            fd,
        },
    };
    let permits = Rc::new(Semaphore::new(max_in_flight.max(1) as u64));
    let mut reader = FrameReader::new(read_half);
    let result = loop {
        let request = match reader.read_command().await {
            Ok(Some(_)) if closed.get() => break Ok(()),
            Ok(Some(cmd)) => cmd,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        if request.is_response() {
            // Answers to server-initiated oneway requests: nothing waits for them.
            continue;
        }
        let Ok(permit) = permits.acquire_static_permit(1).await else {
            break Ok(());
        };
        let handler = handler.clone();
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            let opaque = request.opaque;
            let oneway = request.is_oneway();
            let serialize_type = request.serialize_type;
            let response = handler.handle(request, ctx.clone()).await;
            if let (Some(mut response), false) = (response, oneway) {
                response.opaque = opaque;
                response.mark_response();
                response.serialize_type = serialize_type;
                let _ = ctx.sink.send(response).await;
            }
            drop(permit);
        })
        .detach();
    };
    closed.set(true);
    handler.on_close(&ctx);
    drop(ctx);
    // The writer ends once every in-flight handler has dropped its sink.
    writer.detach();
    result
}

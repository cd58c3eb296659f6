//! Serving one accepted connection: read requests, run each (on its own task when it waits), write
//! responses in batches.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures_lite::future::poll_once;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::net::TcpStream;
use glommio::sync::Semaphore;
use protocol::command::RemotingCommand;

use crate::error::RemotingError;
use crate::framed::{FrameReader, FrameWriter};
use crate::limits::ConnectionLimits;
use crate::stream::Connection;

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

    /// Called once when the connection is accepted, before its first request.
    fn on_open(&self, _ctx: &ConnectionContext) {}

    /// Called once when the connection is gone (peer closed, error, or bad frame).
    fn on_close(&self, _ctx: &ConnectionContext) {}

    /// A response from the peer: its answer to a request the server sent on this connection.
    fn on_response(&self, _response: RemotingCommand, _ctx: &ConnectionContext) {}
}

/// What serves a connection's requests: every `Handler` (its future boxed), or a handler that names
/// no boxed type and implements this directly. The connection polls the future where it stands, in a
/// slot of its own that it reuses (see `serve_connection_as`), so a request answered without waiting
/// allocates nothing for its future; one that waits goes on, in its slot, on a task of its own.
pub trait Serve: 'static {
    /// As [`Handler::handle`].
    fn serve(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> impl Future<Output = Option<RemotingCommand>> + 'static;

    /// As [`Handler::on_open`].
    fn opened(&self, ctx: &ConnectionContext);

    /// As [`Handler::on_close`].
    fn closed(&self, ctx: &ConnectionContext);

    /// As [`Handler::on_response`].
    fn peer_response(&self, response: RemotingCommand, ctx: &ConnectionContext);
}

impl<H: Handler> Serve for H {
    fn serve(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> impl Future<Output = Option<RemotingCommand>> + 'static {
        self.handle(request, ctx)
    }

    fn opened(&self, ctx: &ConnectionContext) {
        self.on_open(ctx);
    }

    fn closed(&self, ctx: &ConnectionContext) {
        self.on_close(ctx);
    }

    fn peer_response(&self, response: RemotingCommand, ctx: &ConnectionContext) {
        self.on_response(response, ctx);
    }
}

/// Homes of handler futures kept by a connection between requests: at most this many.
const KEPT_SLOTS: usize = 1;

/// Keeps an emptied slot for a later request, unless enough are kept.
fn keep_slot<T>(slots: &RefCell<Vec<T>>, slot: T) {
    if let Ok(mut kept) = slots.try_borrow_mut() {
        if kept.len() < KEPT_SLOTS {
            kept.push(slot);
        }
    }
}

/// Polls the future in `slot`; an empty slot answers nothing.
fn poll_slot<F: Future<Output = Option<RemotingCommand>>>(
    slot: Pin<&mut Option<F>>,
    cx: &mut Context<'_>,
) -> Poll<Option<RemotingCommand>> {
    match slot.as_pin_mut() {
        Some(future) => future.poll(cx),
        None => Poll::Ready(None),
    }
}

/// A command queued for the writer, with the pending-bytes budget it holds until written.
/// Server-initiated commands (small, rare) hold none.
pub(crate) struct Outgoing {
    cmd: RemotingCommand,
    cost: u64,
}

/// Sends commands (responses, or server-initiated oneway requests) to one connection.
#[derive(Clone)]
pub struct ResponseSink {
    tx: Rc<LocalSender<Outgoing>>,
    closed: Rc<Cell<bool>>,
    fd: RawFd,
}

impl ResponseSink {
    /// Queues a command, waiting while the connection's write queue is full.
    pub async fn send(&self, cmd: RemotingCommand) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed);
        }
        self.tx
            .send(Outgoing { cmd, cost: 0 })
            .await
            .map_err(|_| RemotingError::Closed)
    }

    async fn send_outgoing(&self, out: Outgoing) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed);
        }
        self.tx.send(out).await.map_err(|_| RemotingError::Closed)
    }

    /// Queues a command without waiting; fails when the queue is full or the connection closed.
    pub fn try_send(&self, cmd: RemotingCommand) -> Result<(), RemotingError> {
        if self.closed.get() {
            return Err(RemotingError::Closed);
        }
        self.tx
            .try_send(Outgoing { cmd, cost: 0 })
            .map_err(|_| RemotingError::Closed)
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

/// Bytes a response will take on the wire, near enough to bound memory by.
fn wire_size(cmd: &RemotingCommand) -> u64 {
    let remark = cmd.remark.as_ref().map_or(0, String::len);
    let fields = cmd.ext_fields.text_len() + cmd.ext_fields.len() * 8;
    (cmd.body_len() + remark + fields + 128) as u64
}

/// State the reader, the writer, the request tasks and the watchdog share.
struct Shared {
    closed: Rc<Cell<bool>>,
    fd: RawFd,
    peer: SocketAddr,
    /// Last time a request was read or a response written.
    last_io: Cell<Instant>,
    /// A write failed: the peer is gone (reset, or closed before reading its answers). Requests it sent
    /// before are still read and handled, their answers dropped.
    write_failed: Cell<bool>,
    /// Budget of encoded response bytes that may wait for the writer.
    pending: Semaphore,
}

impl Shared {
    /// Closes the connection for a reason worth a log line.
    fn close_because(&self, reason: &str) {
        if !self.closed.replace(true) {
            tracing::info!("closing connection from {}: {reason}", self.peer);
            shutdown_socket(self.fd);
        }
        // Wake request tasks waiting for budget: their responses are no longer wanted.
        self.pending.close();
    }
}

async fn write_loop<W: futures_lite::AsyncWrite + Unpin>(
    mut writer: FrameWriter<W>,
    rx: LocalReceiver<Outgoing>,
    shared: Rc<Shared>,
    stall: Option<Duration>,
) {
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut cost = 0u64;
        // Gather whatever else is ready into the same write.
        while let Some(out) = next.take() {
            cost = cost.saturating_add(out.cost);
            if let Err(e) = writer.buffer_owned(out.cmd) {
                tracing::warn!("dropping a response that cannot be encoded: {e}");
            }
            if writer.buffered() >= MAX_WRITE_BATCH {
                break;
            }
            next = poll_once(rx.recv()).await.flatten();
        }
        let flushed = match stall {
            // A deadline for the whole write would cut off a slow peer that keeps reading.
            Some(limit) => writer.flush_unless_stalled(limit).await,
            None => writer.flush().await,
        };
        match flushed {
            Ok(()) => {
                shared.last_io.set(Instant::now());
                shared.pending.signal(cost);
            }
            Err(RemotingError::Timeout(limit)) => {
                shared.close_because(&format!(
                    "it has not read its responses for {limit:?} ({} bytes waiting)",
                    writer.buffered()
                ));
                discard_rest(&rx).await;
                return;
            }
            Err(e) => {
                // The peer reset the connection, or closed it before reading its answers (the Go
                // client rocketmq-client-go v2 closes right after its "oneway" sends, which it does
                // not flag oneway, so they are answered). The requests it sent before are still in our
                // receive buffer: the reader goes on handling them up to the end of the stream (Apache's
                // broker, reading eagerly, has them already); only the answers are lost. Handlers
                // waiting for response budget are woken: their answers are not wanted.
                tracing::debug!("write failed, reading what the peer sent before: {e}");
                shared.write_failed.set(true);
                shared.pending.close();
                discard_rest(&rx).await;
                return;
            }
        }
    }
}

/// Once nothing more can be written: takes and drops the answers still coming until every sender is
/// gone. Returning instead would leave handlers waiting forever for room in a full queue (glommio's
/// bounded channel does not fail a waiting send when its receiver is dropped), holding their
/// in-flight permits, so the reader, the socket and the connection's slot would never be freed: a
/// peer that pipelined requests without reading kept its connection open after the stall limit.
async fn discard_rest(rx: &LocalReceiver<Outgoing>) {
    while rx.recv().await.is_some() {}
}

/// Sets what the request decides on an answer: its opaque, the response bit and the serialize type.
fn stamp(
    mut response: RemotingCommand,
    opaque: i32,
    serialize_type: protocol::SerializeType,
) -> RemotingCommand {
    response.opaque = opaque;
    response.mark_response();
    response.serialize_type = serialize_type;
    response
}

/// Queues an answer for the writer, first waiting while the peer has too many unread bytes; a closed
/// connection drops the answer.
async fn send_answer(
    shared: &Shared,
    ctx: &ConnectionContext,
    response: RemotingCommand,
    budget: u64,
) {
    let cost = wire_size(&response).min(budget);
    if shared.pending.acquire(cost).await.is_ok() {
        let outgoing = Outgoing {
            cmd: response,
            cost,
        };
        if ctx.sink.send_outgoing(outgoing).await.is_err() {
            shared.pending.signal(cost);
        }
    }
}

/// What `try_queue_answer` did with an answer.
enum Queued {
    /// Queued for the writer, or dropped because the connection is closed.
    Done,
    /// It holds its share of the response budget (`cost`), but the writer's queue is full.
    NeedsRoom(Outgoing),
    /// The response budget has no room for it now (nothing is held).
    NeedsBudget(RemotingCommand),
}

/// `send_answer` without waiting: queues the answer when the budget and the writer's queue have room
/// now (or drops it when the connection is closed); otherwise hands it back to be sent by a task
/// that waits.
fn try_queue_answer(
    shared: &Shared,
    ctx: &ConnectionContext,
    response: RemotingCommand,
    budget: u64,
) -> Queued {
    let cost = wire_size(&response).min(budget);
    match shared.pending.try_acquire(cost) {
        // Closed: the answer is not wanted.
        Err(_) => Queued::Done,
        Ok(false) => Queued::NeedsBudget(response),
        Ok(true) => {
            let outgoing = Outgoing {
                cmd: response,
                cost,
            };
            if ctx.sink.closed.get() {
                shared.pending.signal(cost);
                Queued::Done
            } else if ctx.sink.tx.is_full() {
                Queued::NeedsRoom(outgoing)
            } else {
                if ctx.sink.tx.try_send(outgoing).is_err() {
                    shared.pending.signal(cost);
                }
                Queued::Done
            }
        }
    }
}

/// Closes connections that stay idle or dribble a frame for too long.
async fn watchdog(
    shared: Rc<Shared>,
    frame_clock: Rc<Cell<Option<Instant>>>,
    permits: Rc<Semaphore>,
    limits: ConnectionLimits,
    every: Duration,
) {
    while !shared.closed.get() {
        glommio::timer::sleep(every).await;
        if let (Some(limit), Some(started)) = (limits.frame_timeout, frame_clock.get()) {
            if started.elapsed() > limit {
                shared.close_because(&format!("a frame did not complete within {limit:?}"));
                return;
            }
        }
        if let Some(limit) = limits.idle_timeout {
            // A parked request (a long-polling pull) is not idleness.
            let busy = permits.available() < limits.max_in_flight as u64;
            if !busy && shared.last_io.get().elapsed() > limit {
                shared.close_because(&format!("idle for over {limit:?}"));
                return;
            }
        }
    }
}

/// Serves `stream` until the peer closes it or sends an unreadable frame. At most `max_in_flight`
/// requests of this connection run at once; past that, reading pauses (back-pressure on the client).
/// Other limits have `ConnectionLimits::new`'s defaults.
pub async fn serve_connection<H: Serve>(
    stream: TcpStream,
    handler: Rc<H>,
    max_in_flight: usize,
) -> Result<(), RemotingError> {
    serve_connection_with(stream, handler, ConnectionLimits::new(max_in_flight)).await
}

/// Serves `stream` under `limits` (see `ConnectionLimits`).
/// `stream` is a plain socket or TLS over one (`Connection`); closing goes through the socket's
/// descriptor either way.
pub async fn serve_connection_with<H: Serve, S: Connection>(
    stream: S,
    handler: Rc<H>,
    limits: ConnectionLimits,
) -> Result<(), RemotingError> {
    serve_connection_as(next_connection_id(), stream, handler, limits).await
}

/// A new connection id (in accept order: handlers may take a higher id for a newer connection).
pub(crate) fn next_connection_id() -> u64 {
    NEXT_CONNECTION_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

/// `serve_connection_with` under an id taken at accept, before a TLS handshake or the first byte.
pub(crate) async fn serve_connection_as<H: Serve, S: Connection>(
    id: u64,
    stream: S,
    handler: Rc<H>,
    limits: ConnectionLimits,
) -> Result<(), RemotingError> {
    let tcp = stream.tcp();
    let _ = tcp.set_nodelay(true);
    let peer = tcp.peer_addr()?;
    let local = tcp.local_addr()?;
    let fd = tcp.as_raw_fd();
    let plain = stream.is_plain();
    let max_in_flight = limits.max_in_flight.max(1);
    let budget = limits.max_pending_response_bytes.max(1);
    let (read_half, write_half) = futures_lite::io::split(stream);
    let (tx, rx) = local_channel::new_bounded(max_in_flight * 2);
    let closed = Rc::new(Cell::new(false));
    let shared = Rc::new(Shared {
        closed: closed.clone(),
        fd,
        peer,
        last_io: Cell::new(Instant::now()),
        write_failed: Cell::new(false),
        pending: Semaphore::new(budget),
    });
    let mut frame_writer = FrameWriter::new(write_half);
    if plain {
        frame_writer = frame_writer.with_direct_socket(fd);
    }
    let writer = glommio::spawn_local(write_loop(
        frame_writer,
        rx,
        shared.clone(),
        limits.write_stall_timeout,
    ));
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
    handler.opened(&ctx);
    let permits = Rc::new(Semaphore::new(max_in_flight as u64));
    let mut reader = FrameReader::new(read_half);
    // Slots for the handler's futures, reused (see `Serve`).
    let slots: Rc<RefCell<Vec<Pin<Box<Option<_>>>>>> = Rc::new(RefCell::new(Vec::new()));
    let watch = limits.watch_every().map(|every| {
        glommio::spawn_local(watchdog(
            shared.clone(),
            reader.frame_clock(),
            permits.clone(),
            limits.clone(),
            every,
        ))
    });
    let result = loop {
        // A peer that does not read its responses gets no more requests read either.
        match shared.pending.acquire(1).await {
            Ok(()) => shared.pending.signal(1),
            // After a failed write no answer is sent, and what the peer sent before is still read.
            Err(_) if shared.write_failed.get() && !closed.get() => {}
            Err(_) => break Ok(()),
        }
        let request = match reader.read_command().await {
            Ok(Some(_)) if closed.get() => break Ok(()),
            Ok(Some(cmd)) => cmd,
            Ok(None) => break Ok(()),
            // A connection we closed on purpose (idle, stalled, slowloris), or one whose peer is gone
            // (a failed write, then the reset at the end of what it sent), ends without an error.
            Err(_) if closed.get() || shared.write_failed.get() => break Ok(()),
            Err(e) => break Err(e),
        };
        shared.last_io.set(Instant::now());
        if request.is_response() {
            // The peer's answer to a request the server sent it.
            handler.peer_response(request, &ctx);
            continue;
        }
        let Ok(permit) = permits.acquire_static_permit(1).await else {
            break Ok(());
        };
        let opaque = request.opaque;
        let oneway = request.is_oneway();
        let serialize_type = request.serialize_type;
        let mut slot = slots.borrow_mut().pop().unwrap_or_else(|| Box::pin(None));
        slot.set(Some(handler.clone().serve(request, ctx.clone())));
        // The handler's first poll runs here, as it would in a new task (glommio's spawn_local runs
        // a task at once, inline): a request answered without waiting (a send to this shard's own
        // store, most requests) then needs no task of its own, and its slot serves the next request.
        // One that waits goes on in its own task (polled there at once, which registers that task's
        // waker), so a connection's requests overlap as before, and requests are started and
        // answered in the same order as before.
        let response = match poll_slot(slot.as_mut(), &mut Context::from_waker(Waker::noop())) {
            Poll::Ready(response) => response,
            Poll::Pending => {
                let (ctx, shared, slots) = (ctx.clone(), shared.clone(), slots.clone());
                glommio::spawn_local(async move {
                    let response = std::future::poll_fn(|cx| poll_slot(slot.as_mut(), cx)).await;
                    slot.set(None);
                    keep_slot(&slots, slot);
                    if let Some(response) = response.filter(|_| !oneway) {
                        let response = stamp(response, opaque, serialize_type);
                        send_answer(&shared, &ctx, response, budget).await;
                    }
                    drop(permit);
                })
                .detach();
                continue;
            }
        };
        slot.set(None);
        keep_slot(&slots, slot);
        if let Some(response) = response.filter(|_| !oneway) {
            let response = stamp(response, opaque, serialize_type);
            match try_queue_answer(&shared, &ctx, response, budget) {
                Queued::Done => {}
                // No room for it now: it waits on its own task, as every answer did.
                Queued::NeedsRoom(outgoing) => {
                    let (ctx, shared) = (ctx.clone(), shared.clone());
                    glommio::spawn_local(async move {
                        let cost = outgoing.cost;
                        if ctx.sink.send_outgoing(outgoing).await.is_err() {
                            shared.pending.signal(cost);
                        }
                        drop(permit);
                    })
                    .detach();
                    continue;
                }
                Queued::NeedsBudget(response) => {
                    let (ctx, shared) = (ctx.clone(), shared.clone());
                    glommio::spawn_local(async move {
                        send_answer(&shared, &ctx, response, budget).await;
                        drop(permit);
                    })
                    .detach();
                    continue;
                }
            }
        }
        drop(permit);
    };
    closed.set(true);
    shared.pending.close();
    handler.closed(&ctx);
    drop(ctx);
    if let Some(watch) = watch {
        watch.detach();
    }
    // The writer ends once every in-flight handler has dropped its sink.
    writer.detach();
    result
}

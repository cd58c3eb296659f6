//! A request/response client over one connection: requests are matched to responses by opaque.
//!
//! This is the glommio client (brokers, name servers, the Rust client library, mqadmin). The proxy
//! (`proxy::remoting::connection`) and the controller's raft (`controller::raft::peer_client`) have
//! tokio clients of their own, because they run on tokio (tonic, openraft): this client's state is
//! `Rc`/`Cell` and its socket, tasks and timers are glommio's, so its futures can be neither polled
//! by tokio nor sent between its threads. What needs no runtime is shared through `protocol`:
//! commands, headers, frame encoding and decoding, and request signing.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::channels::local_channel::{self, LocalSender};
use glommio::net::TcpStream;
use protocol::command::RemotingCommand;

use crate::error::RemotingError;
use crate::framed::{FrameReader, FrameWriter};
use crate::timeout::with_timeout;

/// Answers requests a server sends to this client (e.g. NOTIFY_CONSUMER_IDS_CHANGED).
pub trait ServerRequestHandler: 'static {
    /// The response to send, if any (oneway requests get none regardless).
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand>;
}

/// Changes every request just before it is sent, as RocketMQ's `RPCHook.doBeforeRequest` does (an ACL
/// client adds its `AccessKey` and `Signature` there).
pub trait RpcHook: 'static {
    fn before_request(&self, request: &mut RemotingCommand);
}

struct Shared {
    addr: SocketAddr,
    rpc_hook: RefCell<Option<Rc<dyn RpcHook>>>,
    fd: RawFd,
    to_writer: LocalSender<RemotingCommand>,
    pending: RefCell<HashMap<i32, LocalSender<RemotingCommand>>>,
    next_opaque: Cell<i32>,
    closed: Cell<bool>,
}

impl Shared {
    fn close(&self) {
        if !self.closed.replace(true) {
            crate::server::shutdown_socket(self.fd);
        }
        // Dropping the waiters' senders wakes them with "closed".
        self.pending.borrow_mut().clear();
    }
}

impl Drop for Shared {
    /// The last `Client` clone is gone: close the connection so the reader task ends too.
    fn drop(&mut self) {
        self.close();
    }
}

/// One connection to a broker or name server. Cheap to clone; all clones share the connection.
#[derive(Clone)]
pub struct Client {
    shared: Rc<Shared>,
}

/// Resolves `host:port` (blocking name lookup: for control paths, not per request).
pub fn resolve(addr: &str) -> Result<SocketAddr, RemotingError> {
    addr.to_socket_addrs()
        .map_err(|e| RemotingError::Connect {
            addr: addr.to_owned(),
            reason: e.to_string(),
        })?
        .next()
        .ok_or_else(|| RemotingError::Connect {
            addr: addr.to_owned(),
            reason: "address resolves to nothing".into(),
        })
}

impl Client {
    /// Connects, failing after `timeout`.
    pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<Client, RemotingError> {
        Client::connect_with_handler(addr, timeout, None).await
    }

    /// Connects; requests the server sends us go to `handler` (ignored when `None`).
    /// Uses TLS when this process has a default TLS client config (`tls::set_default_client`,
    /// set from `tls.enable`).
    pub async fn connect_with_handler(
        addr: SocketAddr,
        timeout: Duration,
        handler: Option<Rc<dyn ServerRequestHandler>>,
    ) -> Result<Client, RemotingError> {
        Client::connect_tls(addr, timeout, handler, crate::tls::default_client()).await
    }

    /// Connects over TLS with `tls` (plaintext when `None`); the handshake counts in `timeout`.
    pub async fn connect_tls(
        addr: SocketAddr,
        timeout: Duration,
        handler: Option<Rc<dyn ServerRequestHandler>>,
        tls: Option<Arc<crate::tls::ClientConfig>>,
    ) -> Result<Client, RemotingError> {
        let started = std::time::Instant::now();
        let stream = with_timeout(timeout, async {
            TcpStream::connect(addr)
                .await
                .map_err(|e| RemotingError::Connect {
                    addr: addr.to_string(),
                    reason: e.to_string(),
                })
        })
        .await?;
        let _ = stream.set_nodelay(true);
        let fd = stream.as_raw_fd();
        match tls {
            None => Ok(Client::start(stream, fd, addr, handler)),
            Some(config) => {
                let left = timeout.saturating_sub(started.elapsed());
                let stream = crate::tls::handshake(stream, addr, config, left).await?;
                Ok(Client::start(stream, fd, addr, handler))
            }
        }
    }

    /// Runs the reader and writer tasks of a connected stream (plain or TLS; `fd` is its socket's).
    fn start<S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin + 'static>(
        stream: S,
        fd: RawFd,
        addr: SocketAddr,
        handler: Option<Rc<dyn ServerRequestHandler>>,
    ) -> Client {
        let (read_half, write_half) = futures_lite::io::split(stream);
        let (to_writer, from_client) = local_channel::new_bounded::<RemotingCommand>(1024);
        let shared = Rc::new(Shared {
            addr,
            rpc_hook: RefCell::new(None),
            fd,
            to_writer,
            pending: RefCell::new(HashMap::new()),
            next_opaque: Cell::new(1),
            closed: Cell::new(false),
        });

        let writer_shared = Rc::downgrade(&shared);
        glommio::spawn_local(async move {
            let mut writer = FrameWriter::new(write_half);
            while let Some(first) = from_client.recv().await {
                let mut next = Some(first);
                while let Some(cmd) = next.take() {
                    if let Err(e) = writer.buffer_command(&cmd) {
                        tracing::warn!("cannot encode request: {e}");
                    }
                    next = futures_lite::future::poll_once(from_client.recv())
                        .await
                        .flatten();
                }
                if writer.flush().await.is_err() {
                    break;
                }
            }
            if let Some(shared) = writer_shared.upgrade() {
                shared.close();
            }
        })
        .detach();

        let reader_shared = Rc::downgrade(&shared);
        glommio::spawn_local(async move {
            let mut reader = FrameReader::new(read_half);
            while let Ok(Some(cmd)) = reader.read_command().await {
                let Some(shared) = reader_shared.upgrade() else {
                    return;
                };
                if cmd.is_response() {
                    let waiter = shared.pending.borrow_mut().remove(&cmd.opaque);
                    if let Some(waiter) = waiter {
                        let _ = waiter.try_send(cmd);
                    }
                } else if let Some(handler) = &handler {
                    let oneway = cmd.is_oneway();
                    let (opaque, st) = (cmd.opaque, cmd.serialize_type);
                    if let (Some(mut resp), false) = (handler.handle(cmd), oneway) {
                        resp.opaque = opaque;
                        resp.serialize_type = st;
                        resp.mark_response();
                        let _ = shared.to_writer.try_send(resp);
                    }
                }
            }
            if let Some(shared) = reader_shared.upgrade() {
                shared.close();
            }
        })
        .detach();

        Client { shared }
    }

    /// Connects to `host:port`.
    pub async fn connect_str(addr: &str, timeout: Duration) -> Result<Client, RemotingError> {
        Client::connect(resolve(addr)?, timeout).await
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// Runs `hook` on every request sent from now on, by every clone of this connection.
    pub fn set_rpc_hook(&self, hook: Option<Rc<dyn RpcHook>>) {
        *self.shared.rpc_hook.borrow_mut() = hook;
    }

    fn run_rpc_hook(&self, request: &mut RemotingCommand) {
        let hook = self.shared.rpc_hook.borrow().clone();
        if let Some(hook) = hook {
            hook.before_request(request);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.get()
    }

    /// Closes the connection for every clone; waiting requests fail with `Closed`.
    pub fn close(&self) {
        self.shared.close();
    }

    fn take_opaque(&self) -> i32 {
        let opaque = self.shared.next_opaque.get();
        self.shared.next_opaque.set(opaque.wrapping_add(1).max(1));
        opaque
    }

    /// Sends a request and waits for its response (at most `timeout`).
    pub async fn invoke(
        &self,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        if self.is_closed() {
            return Err(RemotingError::Closed);
        }
        self.run_rpc_hook(&mut request);
        let opaque = self.take_opaque();
        request.opaque = opaque;
        let (tx, rx) = local_channel::new_bounded(1);
        self.shared.pending.borrow_mut().insert(opaque, tx);
        let shared = self.shared.clone();
        let result = with_timeout(timeout, async move {
            shared
                .to_writer
                .send(request)
                .await
                .map_err(|_| RemotingError::Closed)?;
            rx.recv().await.ok_or(RemotingError::Closed)
        })
        .await;
        if result.is_err() {
            self.shared.pending.borrow_mut().remove(&opaque);
        }
        result
    }

    /// Sends a oneway request (no response expected).
    pub async fn invoke_oneway(&self, mut request: RemotingCommand) -> Result<(), RemotingError> {
        if self.is_closed() {
            return Err(RemotingError::Closed);
        }
        self.run_rpc_hook(&mut request);
        request.opaque = self.take_opaque();
        request.mark_oneway();
        self.shared
            .to_writer
            .send(request)
            .await
            .map_err(|_| RemotingError::Closed)
    }
}

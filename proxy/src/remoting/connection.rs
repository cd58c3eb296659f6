//! One TCP connection to a name server or broker: requests are matched to responses by `opaque`, so
//! any number can be in flight; requests the peer sends us (CHECK_TRANSACTION_STATE) go to `inbound`.
//!
//! Why this is not `remoting::Client`: that client lives on a glommio executor (its state is
//! `Rc`/`Cell`, its socket, tasks and timers are glommio's), and the proxy runs on tokio for tonic,
//! where a glommio future can be neither polled nor sent between threads. What needs no runtime is
//! shared through `protocol`: commands, headers, frame encoding and decoding (`FrameBuffer` is this
//! reader's buffer), and request signing (`protocol::signature`). The controller's raft client
//! (`controller::raft::peer_client`) is tokio too but one request at a time; this one multiplexes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use protocol::frame::{encode_to_bytes, FrameBuffer};
use protocol::RemotingCommand;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Why a remoting call got no response.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    #[error("cannot connect to {0}: {1}")]
    Connect(String, std::io::Error),
    #[error("connection to {0} closed")]
    Closed(String),
    #[error("no response from {0} within {1:?}")]
    Timeout(String, Duration),
    #[error("cannot encode request: {0}")]
    Encode(String),
}

/// A request a peer sent on one of our connections, with the address it came from.
#[derive(Debug)]
pub struct Inbound {
    pub addr: String,
    pub command: RemotingCommand,
    /// Writes a response on the same connection.
    pub reply: mpsc::Sender<Bytes>,
}

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>>;

/// A live connection; cheap to share. Closed connections are replaced by [`super::Pool`].
pub struct Connection {
    addr: String,
    out: mpsc::Sender<Bytes>,
    pending: Pending,
    next_opaque: AtomicI32,
    closed: Arc<AtomicBool>,
}

/// Frames written ahead of the socket before senders wait.
const OUT_QUEUE: usize = 4096;
/// Bytes of queued frames gathered into one socket write.
const WRITE_BATCH: usize = 64 * 1024;

impl Connection {
    pub async fn connect(
        addr: &str,
        inbound: mpsc::UnboundedSender<Inbound>,
    ) -> Result<Arc<Connection>, RemotingError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| RemotingError::Connect(addr.to_string(), e))?;
        let _ = stream.set_nodelay(true);
        let (mut rd, mut wr) = stream.into_split();
        let (out, mut out_rx) = mpsc::channel::<Bytes>(OUT_QUEUE);
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));

        let writer_closed = closed.clone();
        tokio::spawn(async move {
            // Under load many frames wait at once: they go out in one write, not one write each.
            let mut batch = BytesMut::new();
            while let Some(frame) = out_rx.recv().await {
                let written = match out_rx.try_recv() {
                    // Only this one waiting: written as it is, no copy.
                    Err(_) => wr.write_all(&frame).await,
                    Ok(next) => {
                        batch.clear();
                        batch.extend_from_slice(&frame);
                        batch.extend_from_slice(&next);
                        while batch.len() < WRITE_BATCH {
                            let Ok(more) = out_rx.try_recv() else {
                                break;
                            };
                            batch.extend_from_slice(&more);
                        }
                        wr.write_all(&batch).await
                    }
                };
                if written.is_err() {
                    break;
                }
            }
            writer_closed.store(true, Ordering::Release);
        });

        let reader_pending = pending.clone();
        let reader_closed = closed.clone();
        let reader_addr = addr.to_string();
        let reply = out.clone();
        tokio::spawn(async move {
            let mut frames = FrameBuffer::new();
            'read: loop {
                let space = match frames.read_space() {
                    Ok(space) => space,
                    Err(e) => {
                        tracing::warn!("bad frame from {reader_addr}: {e}; closing");
                        break;
                    }
                };
                match rd.read_buf(space).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                loop {
                    match frames.next_frame() {
                        Ok(Some(cmd)) if cmd.is_response() => {
                            let waiter = lock(&reader_pending).remove(&cmd.opaque);
                            if let Some(w) = waiter {
                                let _ = w.send(cmd);
                            }
                        }
                        Ok(Some(cmd)) => {
                            let _ = inbound.send(Inbound {
                                addr: reader_addr.clone(),
                                command: cmd,
                                reply: reply.clone(),
                            });
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::warn!("bad frame from {reader_addr}: {e}; closing");
                            break 'read;
                        }
                    }
                }
            }
            reader_closed.store(true, Ordering::Release);
            // Dropping the waiters fails their calls at once instead of at their timeouts.
            lock(&reader_pending).clear();
        });

        Ok(Arc::new(Connection {
            addr: addr.to_string(),
            out,
            pending,
            next_opaque: AtomicI32::new(1),
            closed,
        }))
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.out.is_closed()
    }

    /// Sends `cmd` and waits for its response.
    pub async fn invoke(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        cmd.opaque = opaque;
        let frame = encode_to_bytes(&cmd).map_err(|e| RemotingError::Encode(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(opaque, tx);
        let sent = tokio::time::timeout(timeout, self.out.send(frame)).await;
        if !matches!(sent, Ok(Ok(()))) {
            lock(&self.pending).remove(&opaque);
            return Err(RemotingError::Closed(self.addr.clone()));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(_)) => Err(RemotingError::Closed(self.addr.clone())),
            Err(_) => {
                lock(&self.pending).remove(&opaque);
                Err(RemotingError::Timeout(self.addr.clone(), timeout))
            }
        }
    }

    /// Sends `cmd` marked oneway; no response is awaited.
    pub async fn oneway(&self, mut cmd: RemotingCommand) -> Result<(), RemotingError> {
        cmd.opaque = self.next_opaque.fetch_add(1, Ordering::Relaxed);
        cmd.mark_oneway();
        let frame = encode_to_bytes(&cmd).map_err(|e| RemotingError::Encode(e.to_string()))?;
        self.out
            .send(frame)
            .await
            .map_err(|_| RemotingError::Closed(self.addr.clone()))
    }
}

/// A poisoned lock only means another task panicked while holding it; the map is still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

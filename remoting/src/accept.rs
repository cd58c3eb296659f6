//! An accept loop that admits connections through a `ConnectionGate` and serves each under
//! `ConnectionLimits`; a connection beyond the cap is closed at once (the peer sees EOF). With a
//! `ServerTls`, each connection is first sorted into TLS or plaintext on its own task.

use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::net::TcpListener;

use crate::error::RemotingError;
use crate::limits::{ConnectionGate, ConnectionLimits};
use crate::server::{next_connection_id, serve_connection_as, serve_connection_with, Serve};
use crate::tls::{Accepted, ServerTls, HANDSHAKE_TIMEOUT};

/// Pause after a failed accept (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(10);

/// Accepts on `listener` until `stop` completes; the listener is closed then. Connections already
/// open go on being served.
///
/// Accepting runs as a task of its own, woken only by the listener: glommio keeps a waker clone for
/// every poll of a pending accept, so an accept polled again each time a sibling `stop` future (a
/// flag checked every 50 ms) woke a shared task overflowed that task's reference count after
/// 27 minutes and the server stopped accepting.
pub async fn accept_connections<H: Serve>(
    listener: TcpListener,
    handler: Rc<H>,
    limits: ConnectionLimits,
    gate: Rc<ConnectionGate>,
    stop: impl Future<Output = ()>,
) {
    accept_connections_tls(listener, handler, limits, gate, None, stop).await
}

/// `accept_connections` with TLS as `tls` says (`None`: plaintext only, `tls.server.mode =
/// disabled`). A connection holds its slot from accept, through its first byte and handshake.
pub async fn accept_connections_tls<H: Serve>(
    listener: TcpListener,
    handler: Rc<H>,
    limits: ConnectionLimits,
    gate: Rc<ConnectionGate>,
    tls: Option<ServerTls>,
    stop: impl Future<Output = ()>,
) {
    let accepting = glommio::spawn_local(accept_loop(listener, handler, limits, gate, tls));
    stop.await;
    // Dropping a glommio task cancels it; the listener it owns closes with it.
    drop(accepting);
}

async fn accept_loop<H: Serve>(
    listener: TcpListener,
    handler: Rc<H>,
    limits: ConnectionLimits,
    gate: Rc<ConnectionGate>,
    tls: Option<ServerTls>,
) {
    let mut last_refusal_log: Option<Instant> = None;
    let mut refused_since_log = 0u64;
    loop {
        let stream = match listener.accept().await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                glommio::timer::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        let Some(slot) = gate.try_admit() else {
            // Dropping the stream closes it: the peer sees the connection end before any answer.
            refused_since_log += 1;
            if last_refusal_log.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                tracing::warn!(
                    "refused {refused_since_log} connection(s): {} open, the maximum here",
                    gate.max()
                );
                last_refusal_log = Some(Instant::now());
                refused_since_log = 0;
            }
            drop(stream);
            continue;
        };
        let handler = handler.clone();
        let limits = limits.clone();
        let tls = tls.clone();
        glommio::spawn_local(async move {
            let served = match tls {
                None => serve_connection_with(stream, handler, limits).await,
                // The id is taken now: connections are numbered in accept order either way.
                Some(tls) => {
                    serve_sorted(next_connection_id(), &tls, stream, handler, limits).await
                }
            };
            if let Err(e) = served {
                tracing::info!("connection closed: {e}");
            }
            drop(slot);
        })
        .detach();
    }
}

/// Sorts a connection into TLS or plaintext, then serves it. The first byte may take as long as
/// the connection may idle (`serverChannelMaxIdleTimeSeconds`), else `HANDSHAKE_TIMEOUT`.
async fn serve_sorted<H: Serve>(
    id: u64,
    tls: &ServerTls,
    stream: glommio::net::TcpStream,
    handler: Rc<H>,
    limits: ConnectionLimits,
) -> Result<(), RemotingError> {
    let peer = stream.peer_addr().ok();
    let wait = limits.idle_timeout.unwrap_or(HANDSHAKE_TIMEOUT);
    match tls.sort(stream, wait).await {
        Ok(Accepted::Plain(stream)) => serve_connection_as(id, stream, handler, limits).await,
        Ok(Accepted::Tls(stream)) => serve_connection_as(id, *stream, handler, limits).await,
        Err(e) => {
            tracing::debug!("connection from {peer:?} not served: {e}");
            Ok(())
        }
    }
}

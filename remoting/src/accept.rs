//! An accept loop that admits connections through a `ConnectionGate` and serves each under
//! `ConnectionLimits`; a connection beyond the cap is closed at once (the peer sees EOF).

use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use glommio::net::TcpListener;

use crate::limits::{ConnectionGate, ConnectionLimits};
use crate::server::{serve_connection_with, Handler};

/// Accepts on `listener` until `stop` completes.
pub async fn accept_connections<H: Handler>(
    listener: TcpListener,
    handler: Rc<H>,
    limits: ConnectionLimits,
    gate: Rc<ConnectionGate>,
    stop: impl Future<Output = ()>,
) {
    let stop = std::pin::pin!(stop);
    let mut stop = stop;
    let mut last_refusal_log: Option<Instant> = None;
    let mut refused_since_log = 0u64;
    loop {
        let accepted = async { Some(listener.accept().await) }
            .or(async {
                stop.as_mut().await;
                None
            })
            .await;
        let stream = match accepted {
            Some(Ok(stream)) => stream,
            Some(Err(e)) => {
                tracing::warn!("accept failed: {e}");
                glommio::timer::sleep(Duration::from_millis(10)).await;
                continue;
            }
            None => return,
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
        glommio::spawn_local(async move {
            if let Err(e) = serve_connection_with(stream, handler, limits).await {
                tracing::info!("connection closed: {e}");
            }
            drop(slot);
        })
        .detach();
    }
}

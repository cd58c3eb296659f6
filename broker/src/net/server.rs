//! The shard's listeners (listenPort and the fast "VIP" port, SO_REUSEPORT so every shard binds them,
//! both with TLS as `tls.server.mode` says) and the remoting `Serve` handler that feeds requests to the
//! processors.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;

use glommio::net::TcpListener;
use protocol::RemotingCommand;
use remoting::{ConnectionContext, ConnectionGate, Serve};

use crate::error::BrokerError;
use crate::net::client_calls;
use crate::shard::Shard;

pub struct BrokerHandler {
    shard: Rc<Shard>,
    /// Open connections of this shard, counted in the metrics while they live.
    open: RefCell<HashMap<u64, crate::feature::metrics::OpenConnection>>,
}

/// Counts a request as in flight until dropped.
struct InFlight<'a>(&'a Shard);

impl<'a> InFlight<'a> {
    fn new(shard: &'a Shard) -> Self {
        shard.in_flight.set(shard.in_flight.get() + 1);
        InFlight(shard)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .in_flight
            .set(self.0.in_flight.get().saturating_sub(1));
    }
}

// `Serve` rather than `Handler`: the connection keeps this future in a reused slot instead of a box
// per request.
impl Serve for BrokerHandler {
    async fn serve(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> Option<RemotingCommand> {
        let shard = self.shard.clone();
        let _guard = InFlight::new(&shard);
        if request.code == protocol::request_code::HEART_BEAT {
            // Remember the connection so the control shard can reach its client
            // (NOTIFY_CONSUMER_IDS_CHANGED, calls to consumers, request-reply pushes).
            client_calls::state(&shard).remember(ctx.id, &ctx.sink);
        }
        if !crate::feature::metrics::apache_local::enabled() {
            return crate::processor::dispatch(shard.clone(), request, ctx).await;
        }
        let started = std::time::Instant::now();
        let code = request.code;
        let (response, long_polling) = crate::feature::metrics::long_polling::observe(
            crate::processor::dispatch(shard.clone(), request, ctx),
        )
        .await;
        if let Some(r) = &response {
            crate::feature::metrics::apache_local::record_rpc(
                code,
                r.code,
                long_polling,
                started.elapsed(),
            );
        }
        response
    }

    fn opened(&self, ctx: &ConnectionContext) {
        self.open
            .borrow_mut()
            .insert(ctx.id, crate::feature::metrics::OpenConnection::new());
    }

    fn peer_response(&self, response: RemotingCommand, ctx: &ConnectionContext) {
        client_calls::state(&self.shard).answer(ctx.id, response);
    }

    fn closed(&self, ctx: &ConnectionContext) {
        self.open.borrow_mut().remove(&ctx.id);
        let had_clients = client_calls::state(&self.shard).closed(ctx.id);
        if had_clients {
            let shard = self.shard.clone();
            let conn_id = ctx.id;
            glommio::spawn_local(async move {
                shard
                    .control_shard()
                    .connection_closed(shard.id, conn_id)
                    .await;
            })
            .detach();
        }
    }
}

/// Binds every address and accepts until the shard stops accepting. The shard's listeners share one
/// connection cap (`serverMaxConnectionsPerShard`); every connection gets `conn_limits`' limits.
pub fn start_listeners(shard: &Rc<Shard>, addrs: &[SocketAddr]) -> Result<(), BrokerError> {
    let handler = Rc::new(BrokerHandler {
        shard: shard.clone(),
        open: RefCell::new(HashMap::new()),
    });
    let gate = Rc::new(ConnectionGate::new(
        shard.cfg.server_max_connections_per_shard,
    ));
    let limits = crate::net::conn_limits::connection_limits(&shard.cfg);
    let tls = crate::net::tls::server(&shard.cfg)?;
    for addr in addrs {
        let listener = TcpListener::bind(*addr).map_err(|e| BrokerError::Io {
            path: format!("listen {addr}"),
            source: std::io::Error::other(e.to_string()),
        })?;
        let stop_shard = shard.clone();
        let (id, addr) = (shard.id, *addr);
        let accepting = remoting::accept_connections_tls(
            listener,
            handler.clone(),
            limits.clone(),
            gate.clone(),
            tls.clone(),
            async move { stop_shard.stop_accepting.wait().await },
        );
        glommio::spawn_local(async move {
            accepting.await;
            tracing::debug!("shard {id}: stopped accepting on {addr}");
        })
        .detach();
    }
    Ok(())
}

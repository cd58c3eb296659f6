//! The Prometheus exporter: a text endpoint on its own port (`metricsPort`, 0 = off) served by shard 0,
//! which gathers every shard's figures over the mesh (`gather`) with the hot-path slots and disk
//! figures (`feature::metrics`), and formats them (`render`). Apache's metric names are served on
//! their own port by `apache` (`metricsExporterType = PROM`).

pub mod apache;
pub mod gather;
pub mod http;
pub mod render;

use std::net::SocketAddr;
use std::rc::Rc;

use crate::error::BrokerError;
use crate::shard::Shard;

/// Starts the endpoint on shard 0 when `metricsPort` is set; it stops with the broker.
pub fn start(shard: &Rc<Shard>) -> Result<(), BrokerError> {
    let port = shard.cfg.metrics_port;
    if port == 0 || shard.id != 0 {
        return Ok(());
    }
    let ip = shard
        .cfg
        .bind_address
        .parse()
        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    serve_on(
        shard,
        SocketAddr::new(ip, port),
        "metrics endpoint",
        |shard| async move { render::render(&gather::gather(&shard).await) },
    )
}

/// Binds `addr` and serves, from this shard until it stops accepting, the text `page` builds from
/// the shard at each scrape (empty once the shard is gone). `what` names the endpoint in the log.
pub fn serve_on<P, Fut>(
    shard: &Rc<Shard>,
    addr: SocketAddr,
    what: &str,
    page: P,
) -> Result<(), BrokerError>
where
    P: Fn(Rc<Shard>) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = String> + 'static,
{
    let listener = http::bind(addr).map_err(|e| BrokerError::io(format!("{what} {addr}"), e))?;
    tracing::info!("{what} on http://{addr}/metrics");
    let weak = Rc::downgrade(shard);
    let stop_on = shard.clone();
    glommio::spawn_local(async move {
        let page = move || {
            let weak = weak.clone();
            let page = page.clone();
            async move {
                match weak.upgrade() {
                    Some(shard) => page(shard).await,
                    None => String::new(),
                }
            }
        };
        http::serve(listener, page, async move {
            stop_on.stop_accepting.wait().await
        })
        .await;
    })
    .detach();
    Ok(())
}

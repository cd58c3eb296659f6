//! Apache RocketMQ 5's broker metrics by Apache's names (`metricsExporterType = PROM`): a Prometheus
//! text endpoint on `metricsPromExporterHost:metricsPromExporterPort` (Apache's default 5557), served
//! by shard 0, which gathers every shard's figures over the mesh (`gather`) and prints them as
//! Apache's OpenTelemetry Prometheus exporter does (`render`, `labels`). Our own names stay on
//! `metricsPort` (`crate::exporter`).

pub mod gather;
pub mod labels;
pub mod render;

use std::net::SocketAddr;
use std::rc::Rc;

use crate::error::BrokerError;
use crate::shard::Shard;

/// Turns recording on (every shard) and starts the endpoint on shard 0 when the exporter is PROM.
pub fn start(shard: &Rc<Shard>) -> Result<(), BrokerError> {
    let prom = &shard.cfg.prom_exporter;
    if !prom.enabled() {
        return Ok(());
    }
    crate::feature::metrics::apache_local::enable();
    if shard.id != 0 {
        return Ok(());
    }
    let host = if prom.host.is_empty() {
        shard.cfg.bind_address.as_str()
    } else {
        prom.host.as_str()
    };
    let ip = host.parse().unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let addr = SocketAddr::new(ip, prom.port);
    super::serve_on(
        shard,
        addr,
        "Apache-named metrics (metricsExporterType = PROM)",
        |shard| async move { render::render(&gather::gather(&shard).await) },
    )
}

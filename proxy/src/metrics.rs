//! Prometheus text metrics: per gRPC method the calls, the failed calls and the summed latency, and
//! messages sent and received; served on `GET /metrics` of `metricsPromExporterPort`, beside Apache's
//! names (`metrics_apache`) when `metricsExporterType = PROM`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Default, Clone, Copy)]
struct Rpc {
    calls: u64,
    failures: u64,
    micros: u64,
}

#[derive(Default)]
pub struct Metrics {
    rpcs: Mutex<BTreeMap<&'static str, Rpc>>,
    pub messages_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub messages_acked: AtomicU64,
    /// Apache's `rocketmq_rpc_latency` per RPC and status code.
    pub rpc_latency: crate::metrics_apache::RpcLatency,
}

impl Metrics {
    /// One RPC answered with status `code`; `ok`: the handler succeeded.
    pub fn record(&self, method: &'static str, ok: bool, code: i32, took: Duration) {
        self.rpc_latency.record(method, code, took);
        let mut m = self.rpcs.lock().unwrap_or_else(|e| e.into_inner());
        let r = m.entry(method).or_default();
        r.calls += 1;
        r.failures += u64::from(!ok);
        r.micros += u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    }

    pub fn render(&self, sessions: usize) -> String {
        let mut out = String::new();
        let rpcs = self.rpcs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = writeln!(out, "# TYPE rocketmq_proxy_rpc_calls_total counter");
        for (m, r) in &rpcs {
            let _ = writeln!(
                out,
                "rocketmq_proxy_rpc_calls_total{{method=\"{m}\"}} {}",
                r.calls
            );
        }
        let _ = writeln!(out, "# TYPE rocketmq_proxy_rpc_failures_total counter");
        for (m, r) in &rpcs {
            let _ = writeln!(
                out,
                "rocketmq_proxy_rpc_failures_total{{method=\"{m}\"}} {}",
                r.failures
            );
        }
        let _ = writeln!(out, "# TYPE rocketmq_proxy_rpc_latency_seconds_sum counter");
        for (m, r) in &rpcs {
            let _ = writeln!(
                out,
                "rocketmq_proxy_rpc_latency_seconds_sum{{method=\"{m}\"}} {:.6}",
                r.micros as f64 / 1e6
            );
        }
        for (name, v) in [
            ("rocketmq_proxy_messages_sent_total", &self.messages_sent),
            (
                "rocketmq_proxy_messages_received_total",
                &self.messages_received,
            ),
            ("rocketmq_proxy_messages_acked_total", &self.messages_acked),
        ] {
            let _ = writeln!(
                out,
                "# TYPE {name} counter\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# TYPE rocketmq_proxy_telemetry_sessions gauge\nrocketmq_proxy_telemetry_sessions {sessions}"
        );
        out
    }
}

/// Serves `GET /metrics` (any path answers the same text, made by `render`) until the process ends.
pub async fn serve(listener: TcpListener, render: Arc<dyn Fn() -> String + Send + Sync>) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let render = render.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            // One read is enough for a scraper's GET; the request itself is not needed.
            let _ = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await;
            let body = render();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(body.as_bytes()).await;
        });
    }
}

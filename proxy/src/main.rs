//! `proxy`: serves the RocketMQ 5 SDKs (gRPC, port 8081) in front of this project's name servers and
//! brokers. Runs on a multi-threaded tokio runtime (docs/proxy.md says why).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use proxy::acl::Acl;
use proxy::config::ProxyConfig;
use proxy::pb::messaging_service_server::MessagingServiceServer;
use proxy::remoting::Pool;
use proxy::service::{transaction, Service};
use proxy::state::Proxy;

// Every RPC allocates and frees many small buffers (HTTP/2 frames, protobuf messages, remoting
// frames) across the runtime's threads; glibc's malloc took about a quarter of the proxy's CPU in
// `bench/proxy.sh` sends (2026-12-02).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "proxy", about = "gRPC proxy for RocketMQ 5 SDKs")]
struct Args {
    /// Config file: flat TOML, or .properties with the same keys.
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    /// Name servers, `;`-separated (overrides namesrvAddr).
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv_addr: Option<String>,
    /// gRPC port (overrides grpcServerPort).
    #[arg(short = 'p', long = "port")]
    port: Option<u16>,
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    if let Err(e) = run(Args::parse()) {
        eprintln!("proxy: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let mut cfg = match &args.config {
        Some(p) => ProxyConfig::load(p)?,
        None => ProxyConfig::default(),
    };
    if let Some(n) = &args.namesrv_addr {
        cfg.set("namesrvAddr", n)?;
    }
    if let Some(p) = args.port {
        cfg.grpc_server_port = p;
    }
    let acl = match (cfg.acl_enable, &cfg.acl_file) {
        (false, _) => None,
        (true, Some(f)) => Some(Acl::load(f)?),
        (true, None) => {
            return Err("aclEnable = true needs aclFile (the brokers' plain_acl.yml)".into())
        }
    };
    if acl.is_some() && cfg.auth.enabled() {
        return Err(
            "aclEnable (plain ACL) and authenticationEnabled / authorizationEnabled \
                    (ACL 2.0) cannot both be on: choose one"
                .into(),
        );
    }
    if cfg.auth.enabled() && cfg.auth.inner_credentials.is_none() {
        tracing::warn!(
            "ACL 2.0 is on without innerClientAuthenticationCredentials: the proxy's requests to \
             brokers (users and ACLs included) are unsigned, which brokers enforcing ACL 2.0 refuse"
        );
    }
    if cfg.auth.authorization_enabled && !cfg.auth.authentication_enabled {
        tracing::warn!(
            "authorizationEnabled without authenticationEnabled: requests are authorized as the user \
             their authorization header names, without checking its signature"
        );
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if cfg.grpc_threads > 0 {
        runtime.worker_threads(cfg.grpc_threads);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(serve(cfg, acl))
}

async fn serve(cfg: ProxyConfig, acl: Option<Acl>) -> Result<(), String> {
    let grpc_addr: SocketAddr = format!("{}:{}", cfg.bind_address, cfg.grpc_server_port)
        .parse()
        .map_err(|e| format!("bad bindAddress/grpcServerPort: {e}"))?;
    let (inbound_tx, inbound_rx) = tokio::sync::mpsc::unbounded_channel();
    let pool = Pool::new(cfg.remoting_timeout, inbound_tx);
    let metrics_port = cfg.metrics_port;
    let apache = cfg.metrics.prom.then(|| proxy::metrics_apache::NodeLabels {
        cluster: cfg.metrics.cluster.clone(),
        node_id: cfg.metrics.proxy_name.clone(),
        extra: cfg.metrics.labels.clone(),
        unit_suffix: cfg.metrics.unit_suffix,
    });
    if apache.is_some() && metrics_port == 0 {
        return Err("metricsExporterType = PROM needs a metricsPromExporterPort (0 turns the metrics \
                    listener off)"
            .into());
    }
    let bind = if cfg.metrics.prom && !cfg.metrics.host.is_empty() {
        cfg.metrics.host.clone()
    } else {
        cfg.bind_address.clone()
    };
    let proxy = Arc::new(Proxy::new(cfg, pool, acl));

    tokio::spawn(transaction::serve_inbound(proxy.clone(), inbound_rx));
    tokio::spawn(transaction::register_producers(
        proxy.clone(),
        proxy.producers_changed.clone(),
    ));
    if metrics_port != 0 {
        let listener = tokio::net::TcpListener::bind((bind.as_str(), metrics_port))
            .await
            .map_err(|e| format!("cannot listen for metrics on {bind}:{metrics_port}: {e}"))?;
        let p = proxy.clone();
        tokio::spawn(proxy::metrics::serve(
            listener,
            Arc::new(move || {
                let mut text = p.metrics.render(p.sessions.len());
                if let Some(node) = &apache {
                    text.push_str(&p.metrics.rpc_latency.render(node));
                }
                text
            }),
        ));
    }
    let acceptor = proxy::tls::acceptor(&proxy.cfg)?;
    let listener = tokio::net::TcpListener::bind(grpc_addr)
        .await
        .map_err(|e| format!("cannot listen on {grpc_addr}: {e}"))?;
    tracing::info!(
        "proxy serving apache.rocketmq.v2.MessagingService on {grpc_addr} (TLS {:?}{}), name servers {:?}",
        proxy.cfg.tls_mode,
        if proxy.cfg.tls_test_mode { ", self-signed certificate" } else { "" },
        proxy.cfg.namesrv_addr
    );
    let incoming = proxy::tls::incoming(listener, acceptor, proxy.cfg.tls_mode);
    let service =
        MessagingServiceServer::new(Service { proxy }).max_decoding_message_size(64 * 1024 * 1024);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| format!("gRPC server failed: {e}"))
}

//! Running a name server: connections served through `remoting::accept_connections` (a connection
//! cap and per-connection limits from the config), the silent-broker scan, and the executor that
//! hosts them.

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;

use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;

use crate::config::NamesrvConfig;
use crate::name_server::NameServer;
use controller::shutdown;

/// Why the name server could not run.
#[derive(Debug, thiserror::Error)]
pub enum NamesrvError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("{0}")]
    Config(String),
    #[error("executor failed: {0}")]
    Executor(String),
}

/// Binds the listening socket (call inside a glommio executor). Unlike glommio's own `bind`, this
/// does not set `SO_REUSEPORT`: a second name server on a taken port must fail, not silently share
/// the connections (and so split the route table).
pub fn bind(addr: SocketAddr) -> Result<TcpListener, NamesrvError> {
    remoting::bind(addr).map_err(|source| NamesrvError::Bind { addr, source })
}

async fn scan_loop(ns: Rc<NameServer>) {
    loop {
        glommio::timer::sleep(ns.config().scan_interval).await;
        for addr in ns.expire_silent_brokers() {
            tracing::warn!(
                "broker {addr} removed: silent for more than {} ms",
                ns.config().broker_expire.as_millis()
            );
        }
    }
}

/// Serves `listener` with `ns` until `stop` completes (inside a glommio executor), under the
/// config's connection cap (`serverMaxConnectionsPerShard`) and per-connection limits. Open
/// connections end with the executor.
///
/// The scan runs as a task of its own, and `accept_connections` accepts in one of its own, so a stop
/// future that wakes often never re-polls a pending accept (glommio keeps a waker clone per poll).
pub async fn serve(listener: TcpListener, ns: Rc<NameServer>, stop: impl Future<Output = ()>) {
    let gate = Rc::new(remoting::ConnectionGate::new(ns.config().max_connections));
    let limits = ns.config().limits.clone();
    // Checked by `run` before the server starts; never served in plaintext instead.
    let tls = match remoting::tls::ServerTls::from_settings(&ns.config().tls) {
        Ok(tls) => tls,
        Err(e) => {
            tracing::error!("TLS settings refused, not serving: {e}");
            return;
        }
    };
    let scan = glommio::spawn_local(scan_loop(ns.clone()));
    remoting::accept_connections_tls(listener, ns, limits, gate, tls, stop).await;
    // Dropping a glommio task cancels it.
    drop(scan);
    remoting::sd_notify::notify_stopping();
    tracing::info!("name server stopping");
}

/// Runs a name server on its own glommio executor until SIGTERM or SIGINT. `on_bound` gets the
/// bound address (useful with port 0) once the server listens.
pub fn run(
    config: NamesrvConfig,
    on_bound: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), NamesrvError> {
    run_with_controller(config, None, on_bound)
}

/// [`run`], with a controller embedded when `controller` is given (`enableControllerInNamesrv`):
/// its raft runs on a thread of its own, its requests arrive on the name server's port.
pub fn run_with_controller(
    config: NamesrvConfig,
    controller: Option<controller::ControllerConfig>,
    on_bound: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), NamesrvError> {
    if let Some(tls) =
        remoting::tls::ServerTls::from_settings(&config.tls).map_err(NamesrvError::Config)?
    {
        if tls.mode() == remoting::tls::ServerMode::Enforcing && controller.is_some() {
            return Err(NamesrvError::Config(
                "tls.server.mode = enforcing with enableControllerInNamesrv: the controllers' \
                 raft messages to each other are plaintext on this port; use permissive"
                    .into(),
            ));
        }
        tracing::info!("TLS on the port: tls.server.mode = {}", tls.mode().as_str());
    }
    shutdown::install_signal_handlers().map_err(NamesrvError::Signals)?;
    let embedded = match controller {
        Some(c) => {
            Some(controller::Embedded::start(c).map_err(|e| NamesrvError::Config(e.to_string()))?)
        }
        None => None,
    };
    let controller_handler = embedded.as_ref().map(|e| e.handler());
    let handle = LocalExecutorBuilder::default()
        .name("namesrv")
        .spawn(move || async move {
            let listener = bind(config.listen)?;
            let local = listener.local_addr().map_err(|e| NamesrvError::Bind {
                addr: config.listen,
                source: std::io::Error::other(e.to_string()),
            })?;
            tracing::info!(
                "name server listening on {local} (broker expiry {} ms, scan every {} ms)",
                config.broker_expire.as_millis(),
                config.scan_interval.as_millis()
            );
            let ns = NameServer::new(config).map_err(NamesrvError::Config)?;
            if let Some(handler) = controller_handler {
                tracing::info!("controller embedded (enableControllerInNamesrv)");
                ns.embed_controller(Rc::new(handler));
            }
            on_bound(local);
            serve(listener, Rc::new(ns), shutdown::signalled()).await;
            Ok(())
        })
        .map_err(|e| NamesrvError::Executor(e.to_string()))?;
    let served = handle
        .join()
        .map_err(|e| NamesrvError::Executor(e.to_string()))?;
    if let Some(embedded) = embedded {
        embedded.shutdown();
    }
    served
}

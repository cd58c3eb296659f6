//! Running a name server: the accept loop, the silent-broker scan, and the executor that hosts them.

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;

use crate::config::NamesrvConfig;
use crate::name_server::NameServer;
use controller::shutdown;

/// Requests of one connection handled at once (brokers and clients send few; this bounds memory).
const MAX_IN_FLIGHT_PER_CONNECTION: usize = 64;

/// Pause after a failed accept (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);

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

async fn accept_loop(listener: TcpListener, ns: Rc<NameServer>) {
    loop {
        match listener.accept().await {
            Ok(stream) => {
                let ns = ns.clone();
                glommio::spawn_local(async move {
                    if let Err(e) =
                        remoting::serve_connection(stream, ns, MAX_IN_FLIGHT_PER_CONNECTION).await
                    {
                        tracing::info!("connection closed: {e}");
                    }
                })
                .detach();
            }
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                glommio::timer::sleep(ACCEPT_RETRY_DELAY).await;
            }
        }
    }
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

/// Serves `listener` with `ns` until `stop` completes (inside a glommio executor). Open
/// connections end with the executor.
///
/// Accepting and scanning run as tasks of their own: glommio keeps a waker clone for every poll of
/// a pending accept, so an accept polled again each time a sibling future (a stop flag checked every
/// 50 ms) wakes their shared task overflowed the task's reference count after 27 minutes.
pub async fn serve(listener: TcpListener, ns: Rc<NameServer>, stop: impl Future<Output = ()>) {
    let accept = glommio::spawn_local(accept_loop(listener, ns.clone()));
    let scan = glommio::spawn_local(scan_loop(ns));
    stop.await;
    // Dropping a glommio task cancels it; the accept task owns the listener, which closes with it.
    drop(accept);
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
    shutdown::install_signal_handlers().map_err(NamesrvError::Signals)?;
    let embedded = match controller {
        Some(c) => Some(
            controller::Embedded::start(c).map_err(|e| NamesrvError::Config(e.to_string()))?,
        ),
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

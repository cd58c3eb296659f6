//! Running a controller: the raft thread (tokio) and the remoting executor (glommio), and how they
//! meet. Connections are served through `remoting::accept_connections`, under the config's
//! connection cap and per-connection limits.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::LocalExecutorBuilder;

use crate::config::ControllerConfig;
use crate::controller::Controller;
use crate::processor::ControllerHandler;
use crate::shutdown;

/// Why a controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
    #[error("raft: {0}")]
    Raft(String),
    #[error("executor failed: {0}")]
    Executor(String),
}

/// Binds without `SO_REUSEPORT`, so a second controller on a taken port fails to start.
fn bind(addr: SocketAddr) -> Result<glommio::net::TcpListener, ControllerError> {
    remoting::bind(addr).map_err(|source| ControllerError::Bind { addr, source })
}

/// How long a restarted controller waits for its port: connections of the process it replaces
/// (killed, so closed by the kernel) hold it until their peers notice, which raft peers and
/// heartbeating brokers do within a second or two.
const PORT_WAIT: Duration = Duration::from_secs(15);

/// Binds (and releases) the port before raft starts, so a port held by another server fails at
/// once instead of after joining the group; waits out the leftovers of a killed predecessor.
fn wait_for_port(listen: SocketAddr) -> Result<(), ControllerError> {
    let any = SocketAddr::from(([0, 0, 0, 0], listen.port()));
    let start = std::time::Instant::now();
    loop {
        match std::net::TcpListener::bind(any) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && start.elapsed() < PORT_WAIT => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(source) => {
                return Err(ControllerError::Bind {
                    addr: listen,
                    source,
                })
            }
        }
    }
}

/// A controller's raft side, running on a tokio thread of its own: what a glommio server (the
/// `controller` binary's, or a name server's with `enableControllerInNamesrv`) hands requests to.
pub struct Embedded {
    runtime: tokio::runtime::Runtime,
    controller: Arc<Controller>,
}

impl Embedded {
    /// Opens the store, starts raft and the leader's scan. The caller serves the requests on the
    /// config's own peer address (see [`Embedded::handler`]).
    pub fn start(config: ControllerConfig) -> Result<Embedded, ControllerError> {
        config.check().map_err(ControllerError::Config)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("raft")
            .enable_all()
            .build()
            .map_err(|e| ControllerError::Raft(e.to_string()))?;
        let (raft, store) = runtime
            .block_on(crate::raft::start(&config))
            .map_err(ControllerError::Raft)?;
        let controller = Arc::new(Controller::new(raft, store, config));
        runtime.spawn(controller.clone().scan_loop());
        Ok(Embedded {
            runtime,
            controller,
        })
    }

    /// A request handler for a glommio executor (controller codes only; see
    /// [`crate::processor::is_controller_code`]).
    pub fn handler(&self) -> ControllerHandler {
        ControllerHandler {
            controller: self.controller.clone(),
            runtime: self.runtime.handle().clone(),
        }
    }

    /// Stops raft and its thread.
    pub fn shutdown(self) {
        let _ = self.runtime.block_on(self.controller.raft.shutdown());
        self.runtime.shutdown_timeout(Duration::from_secs(2));
    }
}

/// Runs a controller until SIGTERM or SIGINT. Raft (openraft, on tokio) gets a thread of its own;
/// requests are served on a glommio executor like the name server's and handed over to it.
/// `on_bound` gets the listening address once the controller serves.
pub fn run(
    config: ControllerConfig,
    on_bound: impl FnOnce(SocketAddr) + Send + 'static,
) -> Result<(), ControllerError> {
    config.check().map_err(ControllerError::Config)?;
    shutdown::install_signal_handlers().map_err(|e| ControllerError::Config(e.to_string()))?;
    let listen = config
        .self_addr()
        .ok_or_else(|| ControllerError::Config("no address for controllerDLegerSelfId".into()))?;
    wait_for_port(listen)?;
    let self_id = config.self_id;
    let max_connections = config.max_connections;
    let limits = config.limits.clone();
    let tls =
        remoting::tls::ServerTls::from_settings(&config.tls).map_err(ControllerError::Config)?;
    let embedded = Embedded::start(config)?;
    let handler = embedded.handler();
    let executor = LocalExecutorBuilder::default()
        .name("controller")
        .spawn(move || async move {
            let listener = bind(SocketAddr::from(([0, 0, 0, 0], listen.port())))?;
            tracing::info!("controller n{self_id} listening on {listen}");
            on_bound(listen);
            remoting::accept_connections_tls(
                listener,
                Rc::new(handler),
                limits,
                Rc::new(remoting::ConnectionGate::new(max_connections)),
                tls,
                shutdown::signalled(),
            )
            .await;
            remoting::sd_notify::notify_stopping();
            Ok::<(), ControllerError>(())
        })
        .map_err(|e| ControllerError::Executor(e.to_string()))?;
    let served = executor
        .join()
        .map_err(|e| ControllerError::Executor(e.to_string()))?;
    tracing::info!("controller stopping");
    embedded.shutdown();
    served
}

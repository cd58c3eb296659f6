//! A slave shard's replication loop: connects to the master, runs a session in the protocol the
//! config names (ours, `slave::session`; Apache's classic HA, `apache::session`), and on any end logs,
//! backs off and reconnects from the store's true end.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use storage::MessageStore;

use crate::slave::{MasterProtocol, SlaveConfig, SlaveStatus};

const BACKOFF_MIN: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Where to find the master, asked before each connection (config or name server answer).
pub type MasterAddr = Rc<dyn Fn() -> Option<SocketAddr>>;

/// Replicates one shard until `stopped()` says so. Never returns an error: failures are logged and
/// retried with back-off.
pub async fn run_slave(
    store: MessageStore,
    cfg: Rc<SlaveConfig>,
    master: MasterAddr,
    status: Rc<SlaveStatus>,
    stopped: Rc<dyn Fn() -> bool>,
) {
    let shard = store.shard_id();
    let mut backoff = BACKOFF_MIN;
    let mut last_error = String::new();
    while !stopped() {
        let Some(addr) = master() else {
            glommio::timer::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let started = Instant::now();
        let result = match cfg.protocol {
            MasterProtocol::Native => {
                crate::slave::session(&store, &cfg, addr, &status, &stopped).await
            }
            MasterProtocol::Apache => {
                crate::apache::session(&store, &cfg, addr, &status, &stopped).await
            }
        };
        status.connected.set(false);
        if stopped() {
            break;
        }
        let msg = match result {
            Ok(()) => "master closed the connection".to_owned(),
            Err(e) => e.to_string(),
        };
        // A long session means the master was fine: retry quickly.
        if started.elapsed() > Duration::from_secs(10) {
            backoff = BACKOFF_MIN;
        }
        if msg != last_error {
            tracing::warn!(
                "HA shard {shard}: replication from {addr} stopped: {msg}; reconnecting"
            );
            last_error = msg;
        }
        glommio::timer::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

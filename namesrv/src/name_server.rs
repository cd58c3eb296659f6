//! The shared state of one name server: its route table, clock and settings.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use remoting::ResponseSink;

use crate::config::NamesrvConfig;
use crate::route_table::RouteTable;

/// One name server's state, shared (by `Rc`) by every connection of its executor.
pub struct NameServer {
    /// Borrowed only inside synchronous code, never across an `.await`.
    pub(crate) table: RefCell<RouteTable>,
    pub(crate) config: NamesrvConfig,
    /// Open connections by id, so an expired broker's channel can be closed.
    pub(crate) channels: RefCell<HashMap<u64, ResponseSink>>,
    started: Instant,
}

impl NameServer {
    pub fn new(config: NamesrvConfig) -> Self {
        NameServer {
            table: RefCell::new(RouteTable::new()),
            config,
            channels: RefCell::new(HashMap::new()),
            started: Instant::now(),
        }
    }

    /// Milliseconds since start (monotonic: liveness must not jump with the wall clock).
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Drops brokers silent for too long and closes their channels; returns their addresses.
    pub fn expire_silent_brokers(&self) -> Vec<String> {
        let default_ms = u64::try_from(self.config.broker_expire.as_millis()).unwrap_or(u64::MAX);
        let now = self.now_ms();
        let gone = self.table.borrow_mut().expire(now, default_ms);
        gone.into_iter()
            .map(|(addr, connection_id)| {
                let channel = self.channels.borrow_mut().remove(&connection_id);
                if let Some(channel) = channel {
                    channel.close();
                }
                addr
            })
            .collect()
    }

    pub fn config(&self) -> &NamesrvConfig {
        &self.config
    }
}

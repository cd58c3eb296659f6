//! The shared state of one name server: its route table, clock and settings.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

use remoting::ResponseSink;

use crate::config::NamesrvConfig;
use crate::kv_config::{write_atomically, KvConfig};
use crate::route_table::RouteTable;

/// The one `configStorePath` key UPDATE_NAMESRV_CONFIG changes at runtime.
pub(crate) const ORDER_MESSAGE_ENABLE: &str = "orderMessageEnable";

/// Settings an earlier UPDATE_NAMESRV_CONFIG stored in `configStorePath` (Java properties text),
/// which win over the command line at the next start.
#[derive(Debug, Default)]
pub(crate) struct StoredSettings {
    pub(crate) order_message_enable: Option<bool>,
}

impl StoredSettings {
    /// Reads `path` (missing = nothing stored).
    pub(crate) fn load(path: &Path) -> Result<StoredSettings, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(StoredSettings::default())
            }
            Err(e) => return Err(format!("name server config {}: {e}", path.display())),
        };
        let order_message_enable = protocol::properties_text::parse(&text)
            .into_iter()
            .rev() // a later duplicate wins
            .find(|(k, _)| k == ORDER_MESSAGE_ENABLE)
            .map(|(k, v)| parse_bool(&k, &v))
            .transpose()
            .map_err(|e| format!("name server config {}: {e}", path.display()))?;
        Ok(StoredSettings {
            order_message_enable,
        })
    }

    /// Writes the settings to `path`, replacing what it held.
    pub(crate) fn store(&self, path: &Path) -> std::io::Result<()> {
        let mut text = String::new();
        if let Some(enable) = self.order_message_enable {
            text.push_str(&format!("{ORDER_MESSAGE_ENABLE}={enable}\n"));
        }
        write_atomically(path, text.as_bytes())
    }
}

/// A `true` / `false` setting (any case).
pub(crate) fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{key} must be true or false, not {value:?}")),
    }
}

/// One name server's state, shared (by `Rc`) by every connection of its executor.
pub struct NameServer {
    /// Borrowed only inside synchronous code, never across an `.await`.
    pub(crate) table: RefCell<RouteTable>,
    pub(crate) config: NamesrvConfig,
    /// Open connections by id, so an expired broker's channel can be closed.
    pub(crate) channels: RefCell<HashMap<u64, ResponseSink>>,
    /// The KV config (PUT/GET/DELETE_KV_CONFIG), kept in `config.kv_config_path`.
    pub(crate) kv: RefCell<KvConfig>,
    /// `orderMessageEnable`, changeable by UPDATE_NAMESRV_CONFIG.
    pub(crate) order_message_enable: Cell<bool>,
    /// The embedded controller's handler (`enableControllerInNamesrv`): controller codes go there.
    pub(crate) controller: RefCell<Option<Rc<controller::ControllerHandler>>>,
    started: Instant,
}

impl NameServer {
    /// Loads the KV config and the settings an earlier UPDATE_NAMESRV_CONFIG stored; an unreadable
    /// file is an error (starting without it would drop the operator's settings at the next write).
    pub fn new(config: NamesrvConfig) -> Result<Self, String> {
        let kv = KvConfig::load(&config.kv_config_path)?;
        let stored = StoredSettings::load(&config.config_store_path)?;
        let order_message_enable = stored
            .order_message_enable
            .unwrap_or(config.order_message_enable);
        Ok(NameServer {
            table: RefCell::new(RouteTable::new()),
            config,
            channels: RefCell::new(HashMap::new()),
            kv: RefCell::new(kv),
            order_message_enable: Cell::new(order_message_enable),
            controller: RefCell::new(None),
            started: Instant::now(),
        })
    }

    /// Milliseconds since start (monotonic: liveness must not jump with the wall clock).
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Drops brokers silent for too long and closes their channels; returns their addresses. A
    /// channel that a live broker registered on too stays open: the shard-brokers of one process
    /// share one connection, and closing it would drop the live ones with the silent one.
    pub fn expire_silent_brokers(&self) -> Vec<String> {
        let default_ms = u64::try_from(self.config.broker_expire.as_millis()).unwrap_or(u64::MAX);
        let now = self.now_ms();
        let (gone, to_close) = {
            let mut table = self.table.borrow_mut();
            let gone = table.expire(now, default_ms);
            let mut to_close: Vec<u64> = gone
                .iter()
                .map(|(_, connection_id)| *connection_id)
                .filter(|id| !table.connection_in_use(*id))
                .collect();
            to_close.sort_unstable();
            to_close.dedup();
            (gone, to_close)
        };
        // Closing runs the connection's close handler, which borrows the table: not borrowed here.
        for connection_id in to_close {
            let channel = self.channels.borrow_mut().remove(&connection_id);
            if let Some(channel) = channel {
                channel.close();
            }
        }
        gone.into_iter().map(|(addr, _)| addr).collect()
    }

    /// The connection that a registration of `broker_addr` arriving on `connection_id` ties the
    /// broker to. A broker whose request timed out registers again on a new connection and closes
    /// the old one; the old one's registration may still arrive after the new one's (held up by
    /// retransmissions). Tied back to the old connection, the broker would be dropped at its close,
    /// so a newer connection the broker registered on stays its connection while it is open.
    pub fn registration_connection(&self, broker_addr: &str, connection_id: u64) -> u64 {
        let current = self.table.borrow().live_connection(broker_addr);
        match current {
            Some(newer) if newer > connection_id && self.channels.borrow().contains_key(&newer) => {
                newer
            }
            _ => connection_id,
        }
    }

    /// Hands controller requests to an embedded controller from now on.
    pub fn embed_controller(&self, handler: Rc<controller::ControllerHandler>) {
        *self.controller.borrow_mut() = Some(handler);
    }

    pub fn config(&self) -> &NamesrvConfig {
        &self.config
    }
}

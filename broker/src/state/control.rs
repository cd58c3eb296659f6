//! The control shard's state: the client registry and orderly consumers' queue locks, with the
//! semaphore that orders metadata writes. (The master topic table, subscription groups and ACL 2.0
//! users and ACLs are the control shard's `Shard::topics`, `Shard::groups` and `Shard::auth`; its name-server registrar and controller-mode
//! replica state belong to `role::namesrv` and `replication`.)

use std::cell::RefCell;

use crate::state::clients::ClientRegistry;
use crate::state::rebalance_locks::RebalanceLocks;

pub struct Control {
    pub clients: RefCell<ClientRegistry>,
    pub locks: RefCell<RebalanceLocks>,
    /// Serializes metadata writes so the newest state is written last.
    pub(crate) persist_lock: glommio::sync::Semaphore,
}

impl Control {
    pub fn new() -> Control {
        Control {
            clients: RefCell::new(ClientRegistry::default()),
            locks: RefCell::new(RebalanceLocks::default()),
            persist_lock: glommio::sync::Semaphore::new(1),
        }
    }
}

impl Default for Control {
    fn default() -> Self {
        Control::new()
    }
}

//! The control shard's state: the client registry, orderly consumers' queue locks and ACL 2.0's users
//! and ACLs, with the semaphore that orders metadata writes. (The master topic table and subscription groups are the
//! control shard's `Shard::topics` and `Shard::groups`; its name-server registrar and controller-mode
//! replica state belong to `role::namesrv` and `replication`.)

use std::cell::RefCell;

use crate::state::auth_metadata::AuthMetadata;
use crate::state::clients::ClientRegistry;
use crate::state::rebalance_locks::RebalanceLocks;

pub struct Control {
    pub clients: RefCell<ClientRegistry>,
    pub locks: RefCell<RebalanceLocks>,
    /// ACL 2.0 users and ACLs (`config/auth.json`).
    pub auth: RefCell<AuthMetadata>,
    /// Serializes metadata writes so the newest state is written last.
    pub(crate) persist_lock: glommio::sync::Semaphore,
}

impl Control {
    pub fn new(auth: AuthMetadata) -> Control {
        Control {
            clients: RefCell::new(ClientRegistry::default()),
            locks: RefCell::new(RebalanceLocks::default()),
            auth: RefCell::new(auth),
            persist_lock: glommio::sync::Semaphore::new(1),
        }
    }
}

impl Default for Control {
    fn default() -> Self {
        Control::new(AuthMetadata::default())
    }
}

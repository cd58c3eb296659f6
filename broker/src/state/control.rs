//! The control shard's state: the client registry, the subscription groups, orderly consumers' queue
//! locks and the name-server registrar, with the semaphores that order its writes.

use std::cell::{Cell, RefCell};

use crate::role::namesrv::Registrar;
use crate::state::clients::ClientRegistry;
use crate::state::rebalance_locks::RebalanceLocks;
use crate::state::subscription_groups::SubscriptionGroupTable;

pub struct Control {
    pub clients: RefCell<ClientRegistry>,
    pub groups: RefCell<SubscriptionGroupTable>,
    pub registrar: Registrar,
    pub locks: RefCell<RebalanceLocks>,
    /// A background registration is waiting to run.
    pub(crate) registration_queued: Cell<bool>,
    /// One registration round at a time, so the newest table is sent last.
    pub(crate) registration_round: glommio::sync::Semaphore,
    /// Serializes metadata writes so the newest state is written last.
    pub(crate) persist_lock: glommio::sync::Semaphore,
}

impl Control {
    pub fn new(groups: SubscriptionGroupTable) -> Control {
        Control {
            clients: RefCell::new(ClientRegistry::default()),
            groups: RefCell::new(groups),
            registrar: Registrar::default(),
            locks: RefCell::new(RebalanceLocks::default()),
            registration_queued: Cell::new(false),
            registration_round: glommio::sync::Semaphore::new(1),
            persist_lock: glommio::sync::Semaphore::new(1),
        }
    }
}

//! The control shard's state: the client registry, orderly consumers' queue locks and the name-server
//! registrar, with the semaphores that order its writes. (The master subscription groups are the
//! control shard's `Shard::groups`, as its `Shard::topics` is the master topic table.)

use std::cell::{Cell, RefCell};

use crate::role::namesrv::Registrar;
use crate::role::replica_state::Replicas;
use crate::state::clients::ClientRegistry;
use crate::state::rebalance_locks::RebalanceLocks;

pub struct Control {
    pub clients: RefCell<ClientRegistry>,
    pub registrar: Registrar,
    pub locks: RefCell<RebalanceLocks>,
    /// A background registration is waiting to run.
    pub(crate) registration_queued: Cell<bool>,
    /// One registration round at a time, so the newest table is sent last.
    pub(crate) registration_round: glommio::sync::Semaphore,
    /// Serializes metadata writes so the newest state is written last.
    pub(crate) persist_lock: glommio::sync::Semaphore,
    /// Controller mode: this broker's group as the controllers see it.
    pub replicas: Replicas,
}

impl Control {
    pub fn new() -> Control {
        Control {
            clients: RefCell::new(ClientRegistry::default()),
            registrar: Registrar::default(),
            locks: RefCell::new(RebalanceLocks::default()),
            registration_queued: Cell::new(false),
            registration_round: glommio::sync::Semaphore::new(1),
            persist_lock: glommio::sync::Semaphore::new(1),
            replicas: Replicas::default(),
        }
    }
}

impl Default for Control {
    fn default() -> Self {
        Control::new()
    }
}

//! Controller mode, the control shard's record of its group (in its extensions): what the
//! controllers last said, the connection to them, and the lock that orders role changes. The logic
//! that keeps it is `replicas`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;

use std::rc::Rc;

use crate::replication::controller_client::ControllerClient;
use crate::shard::Shard;

/// The control shard's replica manager; `None` on other shards.
pub fn replicas(shard: &Shard) -> Option<Rc<Replicas>> {
    shard.is_control().then(|| shard.extensions.get())
}

/// The control shard's view of its group, as the controllers last said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaState {
    /// This broker's id in its group (from CONTROLLER_APPLY_BROKER_ID; kept in `brokerIdentity.json`).
    pub broker_id: Option<u64>,
    pub master_epoch: i32,
    pub master_broker_id: Option<u64>,
    pub master_addr: Option<String>,
    pub sync_state_set: BTreeSet<u64>,
    pub sync_state_set_epoch: i32,
}

impl ReplicaState {
    pub fn is_master(&self) -> bool {
        self.broker_id.is_some() && self.master_broker_id == self.broker_id
    }
}

/// What /metrics reports of controller mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicaFigures {
    pub is_master: bool,
    pub master_epoch: i32,
    pub sync_state_set_size: usize,
    pub role_changes: u64,
}

/// The replica manager of the control shard.
pub struct Replicas {
    pub client: ControllerClient,
    pub state: RefCell<ReplicaState>,
    pub(crate) role_changes: Cell<u64>,
    /// One role change at a time, in the order they were decided.
    pub(crate) changing: glommio::sync::Semaphore,
}

impl Default for Replicas {
    fn default() -> Self {
        Replicas {
            client: ControllerClient::default(),
            state: RefCell::new(ReplicaState::default()),
            role_changes: Cell::new(0),
            changing: glommio::sync::Semaphore::new(1),
        }
    }
}

impl Replicas {
    pub fn figures(&self) -> ReplicaFigures {
        let st = self.state.borrow();
        ReplicaFigures {
            is_master: st.is_master(),
            master_epoch: st.master_epoch,
            sync_state_set_size: st.sync_state_set.len(),
            role_changes: self.role_changes.get(),
        }
    }
}

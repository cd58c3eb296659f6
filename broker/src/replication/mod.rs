//! Replication in the broker: the HA role of every shard (`ha`: master sender or slave receiver, the
//! SYNC_MASTER wait, whose rule is `ack_rule`, and in controller mode `set_wait` and the confirm
//! offset readers are held at, `confirm`; `ha_state`: a
//! shard's replication state), a slave following its master's address
//! and copying its metadata (`ha_sync`), and in controller mode the replica that the controllers make
//! master or slave (`replicas`, `replica_state`, `role_change`, `controller_client`,
//! `broker_identity`). The wire format and the two ends of a stream are the `ha` crate; the store's
//! read and append primitives are `storage::ha`.

pub(crate) mod ack_rule;
pub(crate) mod broker_identity;
pub(crate) mod confirm;
pub(crate) mod controller_client;
pub(crate) mod ha;
pub(crate) mod ha_state;
pub(crate) mod ha_sync;
pub(crate) mod replica_state;
pub(crate) mod replicas;
pub(crate) mod role_change;
pub(crate) mod set_wait;

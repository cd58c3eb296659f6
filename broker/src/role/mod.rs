//! The roles a broker plays: the control role of shard 0 (master topic table, client registry,
//! name-server registration), the HA role of every shard (master sender or slave receiver), and in
//! controller mode the replica that the controllers make master or slave (`replicas`).

pub(crate) mod broker_identity;
pub(crate) mod control;
pub(crate) mod controller_client;
pub(crate) mod ha;
pub(crate) mod ha_state;
pub(crate) mod ha_sync;
pub(crate) mod namesrv;
pub(crate) mod replica_state;
pub(crate) mod replicas;
pub(crate) mod role_change;

//! The roles a broker plays: the control role of shard 0 (master topic table, client registry,
//! name-server registration) and the HA role of every shard (master sender or slave receiver).

pub(crate) mod control;
pub(crate) mod ha;
pub(crate) mod ha_state;
pub(crate) mod ha_sync;
pub(crate) mod namesrv;

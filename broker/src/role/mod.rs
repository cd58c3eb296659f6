//! The control role of shard 0: the master topic table and subscription groups, the client registry,
//! shutdown, and registration with the name servers (`namesrv`). Replication is in `replication`.

pub(crate) mod control;
pub(crate) mod namesrv;

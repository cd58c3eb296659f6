//! The network side of a shard: its listeners and the limits each client connection is served under.

pub(crate) mod conn_limits;
pub(crate) mod server;

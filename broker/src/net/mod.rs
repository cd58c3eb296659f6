//! The network side of a shard: its listeners, the limits each client connection is served under, and
//! the requests the broker sends to clients and waits on, and TLS on both sides (`tls`).

pub(crate) mod client_calls;
pub(crate) mod conn_limits;
pub(crate) mod server;
pub(crate) mod tls;

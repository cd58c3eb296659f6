//! The proxy's remoting side: a tokio TCP client for name servers and brokers, speaking the frames,
//! headers and codes of the `protocol` crate, and the name-server route, topic message type and
//! consumer-group lookups built on it.

pub mod connection;
pub mod group;
pub mod pool;
pub mod route;
pub mod topic_type;

pub use connection::{Connection, Inbound, RemotingError};
pub use pool::Pool;

//! The broker: config, shards, connections and request processors.
//!
//! One glommio executor per shard (`runtime`), each with its own store, listeners and copy of the topic
//! table; queues are owned by shards (`ownership`); shards talk only through the channel mesh (`mesh`);
//! shard 0 also plays the control role (`control`).

pub mod acl;
pub mod clients;
pub mod config;
pub mod conn_limits;
pub mod consumer_offsets;
pub mod control;
pub mod error;
pub mod event;
pub mod ha_role;
pub mod ha_sync;
pub mod long_poll;
pub mod mesh;
pub mod metrics;
pub mod namesrv;
pub mod ownership;
pub mod persist;
pub mod processor;
pub mod rebalance_locks;
pub mod runtime;
pub mod schedule;
pub mod server;
pub mod shard;
pub mod shard_calls;
pub mod shards_file;
pub mod signals;
pub mod stats;
pub mod subscription_groups;
pub mod tag_filter;
pub mod topics;
pub mod transaction;

pub use error::BrokerError;
pub use runtime::run;

//! The broker: config, shards, connections and request processors.
//!
//! Start-up (`startup`) runs one glommio executor per shard, each with its own store, listeners and
//! copy of the topic table (`shard`); queues are owned by shards (`shard::ownership`); shards talk only
//! through typed requests and broadcast events over the channel mesh (`shard::requests`,
//! `shard::events`, `shard::mesh`). Connections (`net`) feed the request processors (`processor`)
//! found in the request table (`processor::commands`), which read and change metadata (`state`); shard
//! 0 also plays the control role (`role::control`), and every shard its HA role (`replication`). POP,
//! delayed messages, transactions, ACL, metrics and long polling are in `feature`; what processors and
//! features share is in `common`. docs/architecture.md draws the layers.

pub(crate) mod common;
pub mod config;
pub(crate) mod error;
pub(crate) mod exporter;
pub(crate) mod feature;
pub mod import;
pub(crate) mod net;
pub(crate) mod processor;
pub(crate) mod replication;
pub(crate) mod role;
pub(crate) mod shard;
pub(crate) mod startup;
pub(crate) mod state;

pub use error::BrokerError;
pub use feature::acl::check_at_start as check_acl_at_start;
pub use net::tls::start as start_tls;
pub use startup::run;

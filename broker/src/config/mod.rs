//! Broker configuration: Apache RocketMQ's property names and defaults, read from TOML or
//! `.properties`, with the overlay of keys changed at run time (`overlay`, `live`).

pub mod auth;
pub mod classification;
pub mod controller_mode;
mod error;
mod file;
mod issue;
mod keys;
pub mod live;
mod local_address;
pub mod overlay;
pub mod prom_exporter;
mod render;
mod shard_brokers;
mod store_paths;
pub mod tls;

pub use error::LoadError;
pub use file::{parse_properties, parse_toml};
pub use keys::{BrokerConfig, BrokerRole, ConfigIssue, FlushDiskType, ShardRouting};
pub use overlay::load;
pub use shard_brokers::{ShardBroker, SHARD_PORT_STEP};

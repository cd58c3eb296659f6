//! Broker configuration: Apache RocketMQ's property names and defaults, read from TOML or `.properties`.

mod error;
mod file;
mod keys;
mod shard_brokers;

pub use error::LoadError;
pub use file::{load, parse_properties, parse_toml};
pub use keys::{BrokerConfig, BrokerRole, ConfigIssue, FlushDiskType};
pub use shard_brokers::{ShardBroker, ShardRouting, SHARD_PORT_STEP};

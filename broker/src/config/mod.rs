//! Broker configuration: Apache RocketMQ's property names and defaults, read from TOML or `.properties`.

mod file;
mod keys;

pub use file::{load, parse_properties, parse_toml, LoadError};
pub use keys::{BrokerConfig, BrokerRole, ConfigIssue, FlushDiskType};

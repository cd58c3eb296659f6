//! Broker configuration: Apache RocketMQ's property names and defaults, read from TOML or `.properties`.

mod error;
mod file;
mod keys;

pub use error::LoadError;
pub use file::{load, parse_properties, parse_toml};
pub use keys::{BrokerConfig, BrokerRole, ConfigIssue, FlushDiskType};

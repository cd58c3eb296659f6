//! The broker: config, shards, connections and request processors.

pub mod config;

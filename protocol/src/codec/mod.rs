//! Header codecs: the JSON header and RocketMQ's binary ("ROCKETMQ") header.

pub mod binary;
pub mod json;
mod json_reader;
mod text;

//! loadgen: a load generator for RocketMQ-compatible brokers (produce, consume, end-to-end), and a
//! null broker to measure loadgen itself. The binary is `src/main.rs`; modules are public for tests.

pub mod ack_log;
pub mod aggregate;
pub mod cli;
pub mod consume;
pub mod duration_arg;
pub mod errors;
pub mod executor;
pub mod null_broker;
pub mod omb;
pub mod pacing;
pub mod payload;
pub mod produce;
pub mod recorder;
pub mod report;
pub mod run;
pub mod stats;
pub mod timeline;
pub mod topic_setup;
pub mod verify;
pub mod workload;

//! The controller of RocketMQ 5's controller mode: per broker group the master, its epoch and the
//! SyncStateSet, replicated among controllers by raft (openraft), with the leader electing a new
//! master when one goes silent.

pub mod config;
pub mod config_keys;
pub mod controller;
pub mod processor;
pub mod raft;
pub mod replicas;
pub mod server;
pub mod shutdown;

pub use config::ControllerConfig;
pub use processor::{is_controller_code, ControllerHandler};
pub use server::{run, ControllerError, Embedded};

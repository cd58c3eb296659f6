//! The name server: route table, broker registration and expiry, route queries.
//!
//! The `namesrv` binary is [`run`] with [`NamesrvConfig`] from the command line; tests and other
//! programs can run [`serve`] inside their own glommio executor instead.

// Bytes from the network are parsed here: no indexing or slicing that could panic on them.
#![warn(clippy::indexing_slicing)]

pub mod config;
pub mod config_file;
pub mod config_keys;
pub mod kv_config;
mod name_server;
mod processor;
mod response;
pub mod route_table;
mod server;
/// SIGTERM / SIGINT handling, shared with the controller (which the name server can embed).
pub use controller::shutdown;

pub use config::{Args, NamesrvConfig};
pub use name_server::NameServer;
pub use route_table::RouteTable;
pub use server::{bind, run, run_with_controller, serve, NamesrvError};

//! The figures the hot paths keep for metrics: per-shard slots written without a hop (`local`:
//! put latency, parked pulls, open connections) and the process's figures read from them and from the
//! disk (`figures`), and the per-shard tables behind Apache's metric names (`apache_local`). The
//! Prometheus endpoints that gather and format them are `crate::exporter` and
//! `crate::exporter::apache`.

pub mod apache_local;
pub mod figures;
pub mod local;
pub mod long_polling;

pub use local::{record_put, register_shard, OpenConnection, Parked};

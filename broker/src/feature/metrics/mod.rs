//! The figures the hot paths keep for metrics: per-shard slots written without a hop (`local`:
//! put latency, parked pulls, open connections) and the process's figures read from them and from the
//! disk (`figures`). The Prometheus endpoint that gathers and formats them is `crate::exporter`.

pub mod figures;
pub mod local;

pub use local::{record_put, register_shard, OpenConnection, Parked};

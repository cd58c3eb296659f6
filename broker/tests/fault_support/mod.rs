//! Fault-injection helpers shared by the `fault_*` tests: a TCP proxy that cuts, delays, reorders,
//! slows and stalls connections, a loop-mounted small file system, a FUSE file system that answers EIO on demand,
//! and the acknowledged-message ledger with its zero-loss check. Brokers and name servers come from the common harness (`common`).
#![allow(dead_code)]

pub mod acked;
pub mod faultfs;
pub mod loopfs;
pub mod netns;
pub mod proxy;
pub mod routes;

//! Fault-injection helpers shared by the `fault_*` tests: a TCP proxy that cuts, delays and stalls
//! connections, a name server in its own process, a loop-mounted small file system, and the
//! acknowledged-message ledger with its zero-loss check.
#![allow(dead_code)]

pub mod acked;
pub mod broker_proc;
pub mod loopfs;
pub mod namesrv_proc;
pub mod proxy;

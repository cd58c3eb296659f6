//! The `namesrv` binary under slow and hostile clients, with its connection limits set from the
//! command line: connections past `serverMaxConnectionsPerShard` are refused, a slowloris frame is
//! cut off, an idle connection is closed, and a flood of requests whose responses are never read is
//! cut off after the write stall limit while other clients are still answered.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/hostile.rs"]
mod hostile;

use std::time::Duration;

use common::NameServerProcess;
use hostile::*;

#[test]
fn the_name_server_cuts_off_floods_slowloris_and_idle_connections() {
    let mut ns = NameServerProcess::start(&[
        "--serverMaxConnectionsPerShard",
        "3",
        "--serverFrameTimeoutSeconds",
        "1",
        "--serverChannelMaxIdleTimeSeconds",
        "3",
        "--serverWriteStallTimeoutSeconds",
        "1",
        "--serverMaxPendingResponseBytes",
        "65536",
    ]);
    let addr = ns.addr;
    let mut silent = connections_past_the_cap_are_refused(addr, 3);
    slowloris_is_cut_off(addr, Duration::from_secs(1));
    request_flood_is_cut_off(addr, Duration::from_secs(1));
    idle_is_closed(&mut silent, Duration::from_secs(3));
    // Still serving new connections, and still running.
    served_connection(addr, 400);
    assert!(
        ns.wait_exit(Duration::from_millis(10)).is_none(),
        "namesrv exited"
    );
}

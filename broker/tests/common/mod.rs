//! The harness of every broker integration test: free loopback ports, a test broker's config, the
//! real broker binary and a name server (in this process, or in a child process a test can SIGKILL)
//! started, awaited until they serve, stopped with SIGTERM or killed with SIGKILL; requests to the
//! broker through `remoting::Client` inside a glommio executor, and decoding of what it answers.
// Each test binary uses a part of the harness.
#![allow(dead_code, unused_imports)]

mod broker_proc;
mod controller_proc;
mod name_server;
mod ports;
mod requests;

pub use broker_proc::*;
pub use controller_proc::*;
pub use name_server::*;
pub use ports::*;
pub use requests::*;

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a future on a fresh glommio executor in this thread.
pub fn run_local<T>(fut: impl std::future::Future<Output = T>) -> T {
    glommio::LocalExecutor::default().run(fut)
}

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Sends `signal` to the process `pid` (e.g. a broker's, from another thread while a test talks to
/// it); false when the process does not exist (any more).
pub fn send_signal(pid: i32, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) only takes plain integers; the pid is a child this test started.
    unsafe { libc::kill(pid, signal) == 0 }
}

/// Polls `child` until it exits; `None` after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

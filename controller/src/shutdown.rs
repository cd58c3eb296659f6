//! SIGTERM / SIGINT handling: the signal handler only sets a flag; the server polls it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// How often the serving executor looks at the flag; a stop request waits at most this long.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

extern "C" fn on_signal(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// Routes SIGTERM and SIGINT to the stop flag.
pub fn install_signal_handlers() -> std::io::Result<()> {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: `on_signal` is an `extern "C"` function that only touches an atomic, which is
        // allowed in a signal handler; `signal` replaces no handler we rely on.
        let previous = unsafe { libc::signal(signal, handler) };
        if previous == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGTERM or SIGINT arrived.
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::SeqCst)
}

/// Completes once SIGTERM or SIGINT arrived (must run inside a glommio executor).
pub async fn signalled() {
    while !stop_requested() {
        glommio::timer::sleep(POLL_INTERVAL).await;
    }
}

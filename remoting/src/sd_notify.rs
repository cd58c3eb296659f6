//! systemd readiness notification (`Type=notify`): sends `READY=1`, `STOPPING=1` and `STATUS=...`
//! datagrams to `$NOTIFY_SOCKET` with std's `UnixDatagram`, so units know when a server serves.

use std::os::unix::net::UnixDatagram;

/// The variable systemd sets for `Type=notify` services.
pub const NOTIFY_SOCKET_ENV: &str = "NOTIFY_SOCKET";

/// Sends `state` (newline-separated `KEY=value` assignments) to `$NOTIFY_SOCKET`.
/// `Ok(false)` when the variable is unset (not started by systemd): nothing to do.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let Some(path) = std::env::var_os(NOTIFY_SOCKET_ENV) else {
        return Ok(false);
    };
    let path = path.to_string_lossy().into_owned();
    if path.is_empty() {
        return Ok(false);
    }
    let socket = UnixDatagram::unbound()?;
    // A leading '@' names a socket in the abstract namespace (systemd documents both forms).
    if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        socket.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        socket.send_to(state.as_bytes(), &path)?;
    }
    Ok(true)
}

/// Tells systemd the service is ready; a failure is logged, never fatal.
pub fn notify_ready(status: &str) {
    send_logged(&format!("READY=1\nSTATUS={status}"));
}

/// Tells systemd the service is stopping.
pub fn notify_stopping() {
    send_logged("STOPPING=1");
}

fn send_logged(state: &str) {
    if let Err(e) = notify(state) {
        tracing::warn!("cannot notify systemd through ${NOTIFY_SOCKET_ENV}: {e}");
    }
}

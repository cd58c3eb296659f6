//! Binding a listening socket for a glommio executor without `SO_REUSEPORT`.

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};

use glommio::net::TcpListener;

/// Binds `addr` (call inside a glommio executor). Unlike glommio's own `TcpListener::bind`, this does
/// not set `SO_REUSEPORT`: a second server on a port already taken must fail to start rather than
/// silently share the connections with the first.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    let fd = listener.into_raw_fd();
    // SAFETY: `fd` is a bound, listening TCP socket that we own (`into_raw_fd` just released it and
    // nothing else refers to it); glommio's listener takes over its ownership and closes it.
    Ok(unsafe { TcpListener::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_fails_instead_of_being_shared() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let first = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
                let addr = first.local_addr().unwrap();
                let second = bind(addr).map(|_| ());
                assert_eq!(
                    second.err().map(|e| e.kind()),
                    Some(std::io::ErrorKind::AddrInUse)
                );
                assert!(
                    std::net::TcpStream::connect(addr).is_ok(),
                    "the first listener still accepts"
                );
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

//! `sd_notify` against a real datagram socket, as systemd would listen on it: READY=1 and STOPPING=1
//! arrive, and an unset `$NOTIFY_SOCKET` sends nothing. One test function, since it sets the
//! process-wide environment variable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use remoting::sd_notify;

fn receive(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 512];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn ready_and_stopping_reach_the_notify_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();

    std::env::remove_var(sd_notify::NOTIFY_SOCKET_ENV);
    assert!(
        !sd_notify::notify("READY=1").unwrap(),
        "nothing is sent without $NOTIFY_SOCKET"
    );

    std::env::set_var(sd_notify::NOTIFY_SOCKET_ENV, &path);
    sd_notify::notify_ready("serving on 127.0.0.1:1");
    let got = receive(&socket);
    assert!(got.lines().any(|l| l == "READY=1"), "{got:?}");
    assert!(
        got.lines().any(|l| l == "STATUS=serving on 127.0.0.1:1"),
        "{got:?}"
    );
    sd_notify::notify_stopping();
    assert_eq!(receive(&socket), "STOPPING=1");

    // Abstract-namespace sockets ('@name') are what systemd uses in some setups.
    use std::os::linux::net::SocketAddrExt;
    let name = format!("rmq-sd-notify-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_socket = UnixDatagram::bind_addr(&addr).unwrap();
    abstract_socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    std::env::set_var(sd_notify::NOTIFY_SOCKET_ENV, format!("@{name}"));
    assert!(sd_notify::notify("READY=1").unwrap());
    assert_eq!(receive(&abstract_socket), "READY=1");

    // A socket nobody listens on is an error value, not a panic.
    std::env::set_var(sd_notify::NOTIFY_SOCKET_ENV, dir.path().join("absent.sock"));
    assert!(sd_notify::notify("READY=1").is_err());
    std::env::remove_var(sd_notify::NOTIFY_SOCKET_ENV);
}

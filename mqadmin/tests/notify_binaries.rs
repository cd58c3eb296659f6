//! The real namesrv and broker binaries speak systemd's notify protocol: started with
//! `$NOTIFY_SOCKET` they send READY=1 once they serve and STOPPING=1 on SIGTERM, then exit 0.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::os::unix::net::UnixDatagram;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::bin_dir;

fn receive(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 1024];
    match socket.recv(&mut buf) {
        Ok(n) => String::from_utf8_lossy(buf.get(..n).unwrap_or_default()).into_owned(),
        Err(e) => panic!("no notification: {e}"),
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("process did not exit within {limit:?} after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn check(mut cmd: Command, dir: &std::path::Path, ready_status: &str) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut child = cmd
        .env("NOTIFY_SOCKET", &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ready = receive(&socket);
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    assert!(ready.contains(ready_status), "{ready:?}");
    // SAFETY: signals our own child, still running (not yet waited for).
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(receive(&socket), "STOPPING=1");
    assert!(wait_exit(&mut child, Duration::from_secs(60)).success());
}

#[test]
fn namesrv_notifies_ready_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut cmd = Command::new(bin_dir().join("namesrv"));
    cmd.args(["--listen", &format!("127.0.0.1:{port}")]);
    check(
        cmd,
        dir.path(),
        &format!("STATUS=listening on 127.0.0.1:{port}"),
    );
}

#[test]
fn broker_notifies_ready_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    // A listen port whose fast port (-2) and HA port (+1) are free too.
    let port = loop {
        let p = free_port();
        if p > 1024
            && [p - 2, p + 1]
                .iter()
                .all(|q| TcpListener::bind(("127.0.0.1", *q)).is_ok())
        {
            break p;
        }
    };
    let config = dir.path().join("broker.toml");
    std::fs::write(
        &config,
        format!(
            "brokerName = \"broker-n\"\nbrokerIP1 = \"127.0.0.1\"\nbindAddress = \"127.0.0.1\"\nlistenPort = {port}\n\
             storePathRootDir = \"{}\"\nshardCount = 1\nmappedFileSizeCommitLog = 4194304\nmaxMessageSize = 1048576\n",
            dir.path().join("store").display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(bin_dir().join("broker"));
    cmd.arg("--config").arg(&config);
    check(
        cmd,
        dir.path(),
        &format!("STATUS=serving on 127.0.0.1:{port}"),
    );
}

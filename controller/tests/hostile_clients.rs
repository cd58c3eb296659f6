//! The `controller` binary under slow and hostile clients, with its connection limits set from its
//! config file: connections past `serverMaxConnectionsPerShard` are refused, a slowloris frame is cut
//! off, an idle connection is closed, and a flood of requests whose responses are never read is cut
//! off after the write stall limit while other clients are still answered.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../namesrv/tests/common/hostile.rs"]
mod hostile;
#[path = "../../broker/tests/common/ports.rs"]
#[allow(dead_code)]
mod ports;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hostile::*;

/// A one-peer controller group in a temp dir; killed (and its log shown on failure) when dropped.
struct Controller {
    child: Child,
    dir: tempfile::TempDir,
}

impl Controller {
    fn start(extra_config: &str) -> (Controller, SocketAddr) {
        let dir = tempfile::tempdir().unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], ports::free_port()));
        let conf = dir.path().join("controller.conf");
        std::fs::write(
            &conf,
            format!(
                "controllerDLegerPeers = n0-{addr}\ncontrollerDLegerSelfId = n0\n\
                 controllerStorePath = {}\n{extra_config}",
                dir.path().join("store").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("controller.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_controller"))
            .arg("-c")
            .arg(&conf)
            .env("RUST_LOG", "info,openraft=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let controller = Controller { child, dir };
        // The first line says it serves; EOF (an exit) fails here, and the drop shows the log.
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert!(
            line.starts_with("controller listening on "),
            "unexpected first line from the controller: {line:?}"
        );
        (controller, addr)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.path().join("controller.log"));
            eprintln!("--- controller log:\n{}", log.unwrap_or_default());
        }
    }
}

#[test]
fn the_controller_cuts_off_floods_slowloris_and_idle_connections() {
    let (mut controller, addr) = Controller::start(
        "serverMaxConnectionsPerShard = 3\nserverFrameTimeoutSeconds = 1\n\
         serverChannelMaxIdleTimeSeconds = 3\nserverWriteStallTimeoutSeconds = 1\n\
         serverMaxPendingResponseBytes = 65536\n",
    );
    let mut silent = connections_past_the_cap_are_refused(addr, 3);
    slowloris_is_cut_off(addr, Duration::from_secs(1));
    request_flood_is_cut_off(addr, Duration::from_secs(1));
    idle_is_closed(&mut silent, Duration::from_secs(3));
    // Still serving new connections, and still running.
    served_connection(addr, 400);
    assert!(
        controller.child.try_wait().unwrap().is_none(),
        "the controller exited"
    );
}

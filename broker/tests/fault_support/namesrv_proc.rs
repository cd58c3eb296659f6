//! A name server in its own process (so a test can SIGKILL it): the test binary runs itself with an
//! env var naming the listen address and an ignored helper test that serves until killed.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The env var that turns the helper test into a name server.
pub const LISTEN_ENV: &str = "FAULT_NAMESRV_LISTEN";

/// Body of the ignored helper test: serves a name server on $FAULT_NAMESRV_LISTEN until killed;
/// returns at once when the variable is absent (a plain `--ignored` run).
pub fn helper_main() {
    let Some(addr) = std::env::var(LISTEN_ENV)
        .ok()
        .and_then(|a| a.parse::<SocketAddr>().ok())
    else {
        return;
    };
    let config = namesrv::NamesrvConfig {
        listen: addr,
        ..namesrv::NamesrvConfig::default()
    };
    if let Err(e) = namesrv::run(config, |bound| println!("namesrv listening on {bound}")) {
        eprintln!("namesrv helper: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

pub struct NamesrvProcess {
    pub addr: SocketAddr,
    /// The exact name of the helper test in the calling test binary.
    helper: &'static str,
    log: PathBuf,
    child: Option<Child>,
}

impl NamesrvProcess {
    /// Starts a name server on `addr` through the helper test `helper` and waits until it listens.
    pub fn start(addr: SocketAddr, helper: &'static str, log: PathBuf) -> NamesrvProcess {
        let mut p = NamesrvProcess {
            addr,
            helper,
            log,
            child: None,
        };
        p.spawn();
        p
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("namesrv log");
        let exe = std::env::current_exe().expect("test binary path");
        let child = Command::new(exe)
            .args([
                self.helper,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(LISTEN_ENV, self.addr.to_string())
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().expect("log fd")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn namesrv helper");
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("namesrv helper exited ({status}): {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("namesrv helper not listening in 20 s: {}", self.log_text());
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts a fresh name server on the same address (empty route table).
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }
}

impl Drop for NamesrvProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

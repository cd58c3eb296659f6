//! A broker process for the fault tests that may run another build of the broker: `FAULT_BROKER_BIN`
//! names the binary (e.g. a branch's build), else this package's. Temp store, free ports, log file;
//! killed on drop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};

use crate::common::{free_broker_port, run_local, test_config, wait_exit};

pub fn broker_bin() -> PathBuf {
    std::env::var_os("FAULT_BROKER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_broker")))
}

pub struct BrokerProc {
    pub port: u16,
    pub dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
    _temp: tempfile::TempDir,
}

impl BrokerProc {
    /// Starts a broker with `extra` appended to the test config and waits until it serves.
    pub fn start(extra: &str) -> BrokerProc {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().to_path_buf();
        let port = free_broker_port();
        let config = dir.join("broker.toml");
        std::fs::write(&config, test_config(port, &dir.join("store"), extra)).expect("config");
        let mut b = BrokerProc {
            port,
            dir,
            config,
            child: None,
            _temp: temp,
        };
        b.spawn();
        b
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn ha_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port + 1))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default()
    }

    /// Starts the process and waits until it answers GET_ALL_TOPIC_CONFIG.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("broker.log"))
            .expect("log");
        let child = Command::new(broker_bin())
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().expect("log fd")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn broker");
        self.child = Some(child);
        let start = Instant::now();
        let addr = self.addr();
        while start.elapsed() < Duration::from_secs(30) {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("broker exited early ({status}):\n{}", self.log());
            }
            let ready = run_local(async move {
                let Ok(c) = remoting::Client::connect(addr, Duration::from_millis(500)).await
                else {
                    return false;
                };
                let req = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
                matches!(c.invoke(req, Duration::from_secs(2)).await, Ok(r) if r.code == response_code::SUCCESS)
            });
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("broker not ready in 30 s:\n{}", self.log());
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait (SIGKILL after 30 s); true when it exited 0.
    pub fn stop(&mut self) -> bool {
        let Some(mut c) = self.child.take() else {
            return false;
        };
        // SAFETY: kill on a child pid we own.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        match wait_exit(&mut c, Duration::from_secs(30)) {
            Some(status) => status.success(),
            None => {
                let _ = c.kill();
                let _ = c.wait();
                false
            }
        }
    }
}

impl Drop for BrokerProc {
    fn drop(&mut self) {
        self.kill9();
    }
}

//! Name servers for the broker tests, on free loopback ports, waited for until they listen: one
//! served by a thread of this test process (for the rest of the test binary), or one in a child
//! process that a test can SIGKILL and start again. The child is this test binary itself, running an
//! ignored helper test that serves while `NAMESRV_HELPER_ENV` names the address; a test binary that
//! uses [`NamesrvProcess`] declares that helper:
//!
//! ```ignore
//! #[test]
//! #[ignore = "not a test: the name-server process the tests start and SIGKILL"]
//! fn namesrv_helper_process() {
//!     common::namesrv_helper_main();
//! }
//! ```

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::free_port;

/// How long a name server may take to listen.
const LISTEN_LIMIT: Duration = Duration::from_secs(20);

/// The env var that turns the helper test into a name server listening on its value.
pub const NAMESRV_HELPER_ENV: &str = "FAULT_NAMESRV_LISTEN";
/// The env var that sets the helper name server's broker expiry in milliseconds (RocketMQ's 120 s
/// when absent); it then scans every 500 ms.
pub const NAMESRV_EXPIRE_ENV: &str = "FAULT_NAMESRV_EXPIRE_MS";

/// Waits until something accepts TCP connections on `addr`; `Err` after `limit`.
fn wait_listening(addr: SocketAddr, limit: Duration) -> Result<(), ()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(())
}

/// Where a test name server keeps its KV config and stored settings: a folder of its own (created on
/// its first write), never the `~/namesrv` of whoever runs the tests.
pub fn namesrv_files(addr: SocketAddr) -> PathBuf {
    std::env::temp_dir().join(format!(
        "rmq-test-namesrv-{}-{}",
        std::process::id(),
        addr.port()
    ))
}

/// A name server's settings for the tests: `addr`, and its files in `namesrv_files(addr)`.
pub fn namesrv_config(addr: SocketAddr) -> namesrv::NamesrvConfig {
    let dir = namesrv_files(addr);
    namesrv::NamesrvConfig {
        listen: addr,
        kv_config_path: dir.join("kvConfig.json"),
        config_store_path: dir.join("namesrv.properties"),
        ..namesrv::NamesrvConfig::default()
    }
}

/// Starts a name server in a thread of this process, serving until the test binary exits, and
/// waits until it listens.
pub fn start_namesrv_in_process() -> SocketAddr {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    start_namesrv_in_process_with(namesrv_config(addr))
}

/// As [`start_namesrv_in_process`] with settings of the test's own (address, expiry).
pub fn start_namesrv_in_process_with(cfg: namesrv::NamesrvConfig) -> SocketAddr {
    let addr = cfg.listen;
    std::thread::spawn(move || {
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let listener = namesrv::bind(addr).expect("namesrv binds");
                let ns = Rc::new(namesrv::NameServer::new(cfg).expect("name server"));
                namesrv::serve(listener, ns, std::future::pending()).await;
            })
            .expect("namesrv executor")
            .join()
            .expect("namesrv thread");
    });
    if wait_listening(addr, LISTEN_LIMIT).is_err() {
        panic!("in-process name server not listening on {addr} in 20 s");
    }
    addr
}

/// Body of the ignored helper test: serves a name server on $FAULT_NAMESRV_LISTEN until killed;
/// returns at once when the variable is absent (a plain `--ignored` run).
pub fn namesrv_helper_main() {
    let Some(addr) = std::env::var(NAMESRV_HELPER_ENV)
        .ok()
        .and_then(|a| a.parse::<SocketAddr>().ok())
    else {
        return;
    };
    // The name server's log lines (RUST_LOG, info by default) go to the helper's log file.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let mut cfg = namesrv_config(addr);
    if let Some(ms) = std::env::var(NAMESRV_EXPIRE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        cfg.broker_expire = Duration::from_millis(ms);
        cfg.scan_interval = Duration::from_millis(500);
    }
    if let Err(e) = namesrv::run(cfg, |bound| println!("namesrv listening on {bound}")) {
        eprintln!("namesrv helper: {e}");
        std::process::exit(1);
    }
    std::process::exit(0);
}

/// A name server in a child process; SIGKILLed when dropped.
pub struct NamesrvProcess {
    pub addr: SocketAddr,
    /// The exact name of the helper test in the calling test binary.
    helper: &'static str,
    log: PathBuf,
    /// Environment of the helper process besides its address (e.g. `NAMESRV_EXPIRE_ENV`).
    envs: Vec<(String, String)>,
    child: Option<Child>,
}

impl NamesrvProcess {
    /// Starts a name server on a free port through the helper test `helper` (output appended to
    /// `log`) and waits until it listens.
    pub fn start(helper: &'static str, log: PathBuf) -> NamesrvProcess {
        Self::start_with_env(helper, log, &[])
    }

    /// As [`NamesrvProcess::start`], with environment variables for the helper process.
    pub fn start_with_env(
        helper: &'static str,
        log: PathBuf,
        envs: &[(&str, &str)],
    ) -> NamesrvProcess {
        let mut p = NamesrvProcess {
            addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
            helper,
            log,
            envs: envs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
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
            .env(NAMESRV_HELPER_ENV, self.addr.to_string())
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().expect("log fd")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn namesrv helper");
        self.child = Some(child);
        let start = Instant::now();
        while start.elapsed() < LISTEN_LIMIT {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("namesrv helper exited ({status}): {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("namesrv helper not listening in 20 s: {}", self.log_text());
    }

    /// The process id (0 when not running).
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, and reaps the process.
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

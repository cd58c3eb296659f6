//! The real broker binary in a child process: a temp dir holding its config, store and log, free
//! ports, readiness (both listen ports answer), SIGTERM stop, SIGKILL, restart on the same store.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use super::{free_broker_port, run_local, send_signal, wait_exit};

/// How long a broker may take to serve after its start, and to exit after SIGTERM.
const START_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// This package's broker binary.
pub fn broker_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_broker"))
}

/// The broker binary of the fault tests: `FAULT_BROKER_BIN` (e.g. another branch's build), else
/// this package's.
pub fn fault_broker_bin() -> PathBuf {
    std::env::var_os("FAULT_BROKER_BIN").map_or_else(broker_bin, PathBuf::from)
}

/// The TOML config of a test broker: small segments, two shards (unless `extra` sets them), the
/// routing mode `TEST_SHARD_ROUTING` names (`forward` runs a suite with one broker per process and
/// hops between shards; unset: the broker's default, every shard a broker), then `extra`.
pub fn test_config(port: u16, store: &Path, extra: &str) -> String {
    let segment = if extra.contains("mappedFileSizeCommitLog") {
        ""
    } else {
        "mappedFileSizeCommitLog = 4194304\n"
    };
    let shards = if extra.contains("shardCount") {
        ""
    } else {
        "shardCount = 2\n"
    };
    let ip = if extra.contains("brokerIP1") {
        ""
    } else {
        "brokerIP1 = \"127.0.0.1\"\n"
    };
    let routing = match std::env::var("TEST_SHARD_ROUTING") {
        Ok(mode) if !extra.contains("shardRouting") => format!("shardRouting = \"{mode}\"\n"),
        _ => String::new(),
    };
    format!(
        "brokerName = \"broker-t\"\nbrokerClusterName = \"TestCluster\"\n{ip}\
         listenPort = {port}\nstorePathRootDir = \"{}\"\n{shards}{routing}\
         {segment}maxMessageSize = 1048576\n{extra}\n",
        store.display()
    )
}

type ConfigText = Box<dyn FnOnce(u16, &Path) -> String>;

/// How to start a broker; [`Broker::start`] covers the usual case.
pub struct BrokerBuilder {
    bin: PathBuf,
    extra: String,
    store_root: Option<PathBuf>,
    config_file: Option<(String, ConfigText)>,
    netns: Option<(String, Ipv4Addr)>,
    envs: Vec<(String, String)>,
}

impl BrokerBuilder {
    /// An environment variable of the broker process (e.g. an `LD_PRELOAD` that fakes its clock, or
    /// `FAILPOINTS`), kept across restarts until [`Broker::set_env`] changes it.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.envs.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs the broker in network namespace `name` (made by the test), where it has address `ip`
    /// (its `brokerIP1`; the test reaches it there).
    pub fn netns(mut self, name: &str, ip: Ipv4Addr) -> Self {
        self.netns = Some((name.to_owned(), ip));
        self.extra.push_str(&format!("\nbrokerIP1 = \"{ip}\"\n"));
        self
    }

    /// Another broker binary than this package's.
    pub fn bin(mut self, bin: PathBuf) -> Self {
        self.bin = bin;
        self
    }

    /// Appended to the [`test_config`].
    pub fn extra(mut self, extra: &str) -> Self {
        self.extra.insert_str(0, extra);
        self
    }

    /// The store somewhere else than in the broker's temp dir (e.g. on a small file system).
    pub fn store_root(mut self, store: PathBuf) -> Self {
        self.store_root = Some(store);
        self
    }

    /// A config file of the caller's instead of the [`test_config`]: `file_name` in the broker's temp
    /// dir, with the text `text(listen port, temp dir)`.
    pub fn config_file(
        mut self,
        file_name: &str,
        text: impl FnOnce(u16, &Path) -> String + 'static,
    ) -> Self {
        self.config_file = Some((file_name.to_owned(), Box::new(text)));
        self
    }

    /// Writes the config, starts the broker and waits until it serves. With the test config, a start
    /// that fails because another process bound one of its ports between the check and the bind
    /// (seen in CI once) is retried on fresh ports, twice at most.
    pub fn start(self) -> Broker {
        let BrokerBuilder {
            bin,
            extra,
            store_root,
            mut config_file,
            netns,
            envs,
        } = self;
        let attempts = if config_file.is_some() { 1 } else { 3 };
        for attempt in 1..=attempts {
            let temp = tempfile::tempdir().expect("temp dir");
            let dir = temp.path().to_path_buf();
            let port = free_broker_port();
            let (config, text) = match config_file.take() {
                Some((name, text)) => (dir.join(name), text(port, &dir)),
                None => {
                    let store = store_root.clone().unwrap_or_else(|| dir.join("store"));
                    (dir.join("broker.toml"), test_config(port, &store, &extra))
                }
            };
            std::fs::write(&config, text).expect("write broker config");
            let (netns, ip) = match &netns {
                Some((name, ip)) => (Some(name.clone()), *ip),
                None => (None, Ipv4Addr::LOCALHOST),
            };
            let mut b = Broker {
                port,
                ip,
                netns,
                envs: envs.clone(),
                dir,
                config,
                bin: bin.clone(),
                child: None,
                _temp: temp,
            };
            b.spawn();
            match b.ready_or_exit() {
                Ok(()) => return b,
                Err(log) if attempt < attempts && log.contains("Address already in use") => {
                    eprintln!("broker start on port {port} lost a port to another process; again");
                }
                Err(log) => panic!("broker exited early:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }
}

/// A broker process; SIGKILLed when dropped.
pub struct Broker {
    pub port: u16,
    /// The address it is reached at: loopback, or its address in its network namespace.
    pub ip: Ipv4Addr,
    netns: Option<String>,
    envs: Vec<(String, String)>,
    /// The temp dir: config, `broker.log`, and the store unless it was put elsewhere.
    pub dir: PathBuf,
    pub config: PathBuf,
    bin: PathBuf,
    child: Option<Child>,
    _temp: tempfile::TempDir,
}

impl Broker {
    pub fn builder() -> BrokerBuilder {
        BrokerBuilder {
            bin: broker_bin(),
            extra: String::new(),
            store_root: None,
            config_file: None,
            netns: None,
            envs: Vec::new(),
        }
    }

    /// Starts a broker with a fresh store (`extra` appended to the [`test_config`]) and waits until
    /// it serves.
    pub fn start(extra: &str) -> Broker {
        Broker::builder().extra(extra).start()
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// The "VIP" channel, listenPort - 2.
    pub fn fast_addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port - 2))
    }

    /// The HA port a slave connects to, listenPort + 1.
    pub fn ha_addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port + 1))
    }

    /// Starts the process (its output appended to `broker.log`) without waiting.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("broker.log"))
            .expect("broker log");
        let mut cmd = match &self.netns {
            // `ip netns exec` enters the namespace and execs the broker: the child is the broker.
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&self.bin);
                c
            }
            None => Command::new(&self.bin),
        };
        let child = cmd
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(log.try_clone().expect("log fd")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn broker");
        self.child = Some(child);
    }

    /// Sets (`Some`) or removes (`None`) an environment variable for the next starts.
    pub fn set_env(&mut self, key: &str, value: Option<&str>) {
        self.envs.retain(|(k, _)| k != key);
        if let Some(v) = value {
            self.envs.push((key.to_owned(), v.to_owned()));
        }
    }

    /// Starts the process again on the same config and store, and waits until it serves.
    pub fn restart(&mut self) {
        self.spawn();
        self.wait_ready();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default()
    }

    /// Waits until the broker answers GET_ALL_TOPIC_CONFIG on both listen ports (a broker with ACL on
    /// refuses the unsigned request, which is an answer too); panics with its log when it exits first
    /// or is not ready in 30 s.
    pub fn wait_ready(&mut self) {
        if let Err(log) = self.ready_or_exit() {
            panic!("broker exited early:\n{log}");
        }
    }

    /// Waits until the broker serves (as [`Self::wait_ready`]); its exit status and log when it
    /// exits first; panics when it is not ready in 30 s.
    fn ready_or_exit(&mut self) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < START_LIMIT {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(format!("({status}):\n{}", self.log()));
            }
            let mut addrs = vec![self.addr(), self.fast_addr()];
            addrs.extend(self.other_shard_brokers());
            let ready = run_local(async move {
                for addr in addrs {
                    let Ok(c) = Client::connect(addr, Duration::from_millis(500)).await else {
                        return false;
                    };
                    let req = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
                    match c.invoke(req, Duration::from_secs(2)).await {
                        Ok(r)
                            if r.code == response_code::SUCCESS
                                || r.code == response_code::NO_PERMISSION => {}
                        _ => return false,
                    }
                }
                true
            });
            if ready {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("broker not ready in 30 s:\n{}", self.log());
    }

    /// The addresses of shard-brokers 1.. when the config makes shards brokers (the default with
    /// more than one shard; read from the config file, TOML or properties).
    pub fn other_shard_brokers(&self) -> Vec<SocketAddr> {
        let text = std::fs::read_to_string(&self.config).unwrap_or_default();
        let value = |key: &str| {
            text.lines()
                .filter_map(|l| l.split_once('='))
                .filter(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().trim_matches('"').to_owned())
                .next_back()
        };
        if value("shardRouting").is_some_and(|m| m.eq_ignore_ascii_case("forward")) {
            return Vec::new();
        }
        let shards: u16 = value("shardCount")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        (1..shards)
            .map(|i| SocketAddr::from((self.ip, super::shard_broker_port(self.port, i))))
            .collect()
    }

    /// The running process's id (0 when none runs).
    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// SIGTERM, then waits for the exit status; SIGKILL and a panic after 30 s.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("broker running");
        send_signal(child.id() as i32, libc::SIGTERM);
        wait_exit(&mut child, STOP_LIMIT).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("broker did not stop in 30 s:\n{}", self.log())
        })
    }

    /// Waits for the broker to exit on its own (after a signal sent elsewhere).
    pub fn wait_stopped(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("broker running");
        wait_exit(&mut child, STOP_LIMIT).expect("broker exits")
    }

    /// SIGKILL, and reaps the process.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs the binary with this config and expects it to exit on its own (start-up refusal):
    /// its exit status and output.
    pub fn run_expecting_exit(&self) -> (ExitStatus, String) {
        let out = Command::new(&self.bin)
            .arg("--config")
            .arg(&self.config)
            .output()
            .expect("run broker");
        (
            out.status,
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill9();
    }
}

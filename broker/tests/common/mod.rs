//! Test harness: starts the real broker binary on free loopback ports with a temp store, talks to it
//! through `remoting::Client` inside a glommio executor, and stops it (SIGTERM or SIGKILL).
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use protocol::header::{CommandHeader, PullMessageRequestHeader, SendMessageRequestHeaderV2};
use protocol::message::record::MessageRecord;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a future on a fresh glommio executor in this thread.
pub fn run_local<T>(fut: impl std::future::Future<Output = T>) -> T {
    glommio::LocalExecutor::default().run(fut)
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok() && TcpListener::bind(("0.0.0.0", port)).is_ok()
}

/// A listen port p with p-2 (fast port), p and p+1 (HA) free.
pub fn free_broker_port() -> u16 {
    let seed = std::process::id() as u64 ^ Instant::now().elapsed().as_nanos() as u64;
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let p = 20_000 + (x % 40_000) as u16;
        if [p - 2, p, p + 1].iter().all(|q| port_free(*q)) {
            return p;
        }
    }
    panic!("no free port found");
}

/// A single free port (for a name server).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Broker {
    pub port: u16,
    pub dir: PathBuf,
    pub config: PathBuf,
    child: Option<Child>,
    _temp: Option<tempfile::TempDir>,
}

/// The config of a test broker: small segments, two shards.
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
    format!(
        "brokerName = \"broker-t\"\nbrokerClusterName = \"TestCluster\"\nbrokerIP1 = \"127.0.0.1\"\n\
         listenPort = {port}\nstorePathRootDir = \"{}\"\n{shards}\
         {segment}maxMessageSize = 1048576\n{extra}\n",
        store.display()
    )
}

impl Broker {
    /// Starts a broker with a fresh store; `extra` is appended to the TOML config.
    pub fn start(extra: &str) -> Broker {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        let mut b = Broker {
            port: free_broker_port(),
            config: dir.join("broker.toml"),
            dir,
            child: None,
            _temp: Some(temp),
        };
        std::fs::write(&b.config, test_config(b.port, &b.dir.join("store"), extra)).unwrap();
        b.spawn();
        b.wait_ready();
        b
    }

    /// A broker with a config file written by the caller (started, not yet waited for).
    pub fn with_config(temp: tempfile::TempDir, port: u16, config: PathBuf) -> Broker {
        let mut b = Broker {
            port,
            config,
            dir: temp.path().to_path_buf(),
            child: None,
            _temp: Some(temp),
        };
        b.spawn();
        b
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn fast_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port - 2))
    }

    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("broker.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_broker"))
            .arg("--config")
            .arg(&self.config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default()
    }

    /// Waits until the broker answers GET_ALL_TOPIC_CONFIG on both ports.
    pub fn wait_ready(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("broker exited early ({status}):\n{}", self.log());
                }
            }
            let addrs = [self.addr(), self.fast_addr()];
            let ready = run_local(async move {
                for addr in addrs {
                    let Ok(c) = Client::connect(addr, Duration::from_millis(500)).await else {
                        return false;
                    };
                    let req = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
                    match c.invoke(req, Duration::from_secs(2)).await {
                        Ok(r) if r.code == response_code::SUCCESS => {}
                        _ => return false,
                    }
                }
                true
            });
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("broker not ready in 30 s:\n{}", self.log());
    }

    /// SIGTERM, then waits for the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("broker running");
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        wait_exit(&mut child, Duration::from_secs(30)).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("broker did not stop in 30 s:\n{}", self.log())
        })
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Waits for the broker to exit on its own (after a signal sent elsewhere).
    pub fn wait_stopped(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("broker running");
        wait_exit(&mut child, Duration::from_secs(30)).expect("broker exits")
    }

    /// SIGKILL.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn restart(&mut self) {
        self.spawn();
        self.wait_ready();
    }

    /// Runs the binary with this config and expects it to exit on its own (start-up refusal).
    pub fn run_expecting_exit(&self) -> (ExitStatus, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_broker"))
            .arg("--config")
            .arg(&self.config)
            .output()
            .unwrap();
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

pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub async fn connect(addr: SocketAddr) -> Client {
    Client::connect(addr, TIMEOUT)
        .await
        .expect("connect to broker")
}

/// A SEND_MESSAGE_V2 request.
pub fn send_request(topic: &str, queue_id: i32, body: &[u8], properties: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::SEND_MESSAGE_V2)
        .with_ext_fields(send_header(topic, queue_id, properties).to_ext_fields())
        .with_body(Bytes::copy_from_slice(body))
}

/// The header a Java producer sends (SEND_MESSAGE_V2 short names).
pub fn send_header(topic: &str, queue_id: i32, properties: &str) -> SendMessageRequestHeaderV2 {
    SendMessageRequestHeaderV2 {
        a: "test_producer".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: queue_id,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some(properties.into()),
        j: Some(0),
        k: Some(false),
        l: None,
        m: Some(false),
        n: Some("broker-t".into()),
    }
}

pub async fn send(
    client: &Client,
    topic: &str,
    queue_id: i32,
    body: &[u8],
    properties: &str,
) -> RemotingCommand {
    client
        .invoke(send_request(topic, queue_id, body, properties), TIMEOUT)
        .await
        .expect("send answered")
}

pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    suspend_ms: i64,
    sub: Option<&str>,
) -> RemotingCommand {
    let mut sys_flag = 0;
    if suspend_ms > 0 {
        sys_flag |= protocol::header::pull_sys_flag::SUSPEND;
    }
    if sub.is_some() {
        sys_flag |= protocol::header::pull_sys_flag::SUBSCRIPTION;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: sub.map(str::to_owned),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    };
    RemotingCommand::request(request_code::PULL_MESSAGE).with_ext_fields(header.to_ext_fields())
}

pub async fn pull(client: &Client, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    client
        .invoke(
            pull_request("test_consumer", topic, queue_id, offset, 0, None),
            TIMEOUT,
        )
        .await
        .expect("pull answered")
}

/// Decodes a pull body into records (checking every CRC).
pub fn decode_records(body: &[u8]) -> Vec<MessageRecord> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let (rec, len) = MessageRecord::decode(&body[pos..], true).expect("valid record");
        out.push(rec);
        pos += len;
    }
    out
}

/// Every record of a queue from offset 0 (pulls until PULL_NOT_FOUND).
pub async fn pull_all(client: &Client, topic: &str, queue_id: i32) -> Vec<MessageRecord> {
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let r = pull(client, topic, queue_id, offset).await;
        if r.code != response_code::SUCCESS {
            return out;
        }
        let recs = decode_records(&r.body);
        assert!(!recs.is_empty());
        offset = r.ext("nextBeginOffset").unwrap().parse().unwrap();
        out.extend(recs);
    }
}

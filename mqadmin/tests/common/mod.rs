//! Test harness: a cluster started by `deploy/local-cluster.sh` in a temp dir on free loopback ports
//! (stopped on drop), the `mqadmin` binary run with a hard timeout, a client pulling and committing
//! a topic, and a plain HTTP GET.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const MQADMIN: &str = env!("CARGO_BIN_EXE_mqadmin");

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where cargo put this build's binaries (target/<profile>), next to the test executable's deps/.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf();
    for bin in ["broker", "namesrv"] {
        assert!(
            dir.join(bin).is_file(),
            "{} is missing: build it first (`cargo build -p broker -p namesrv`; `cargo test --workspace` does)",
            dir.join(bin).display()
        );
    }
    dir
}

/// Runs `cmd`, killing it after `limit`.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let status = child.wait().expect("wait after kill");
            panic!("{cmd:?} ran over {limit:?} (killed, {status})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The brokers of a layout, in local-cluster.sh's order.
pub fn layout_brokers(layout: &str) -> Vec<(&'static str, bool)> {
    match layout {
        "2m-2s-sync" | "2m-2s-async" => vec![
            ("broker-a", true),
            ("broker-a-s", false),
            ("broker-b", true),
            ("broker-b-s", false),
        ],
        "2m-noslave" => vec![("broker-a", true), ("broker-b", true)],
        "single-node" => vec![("broker-a", true)],
        other => panic!("unknown layout {other}"),
    }
}

/// A cluster brought up by deploy/local-cluster.sh; `down` on drop.
pub struct LocalCluster {
    pub layout: String,
    /// local-cluster.sh's SHARD_ROUTING: `forward` (each broker one name) or `direct` (each shard
    /// a broker `<name>-<N>` on port + 4N).
    pub routing: &'static str,
    pub port_base: u16,
    pub dir: tempfile::TempDir,
    bin_dir: PathBuf,
}

impl LocalCluster {
    /// A port base whose name-server, broker (port-2..port+4) and metrics ports are all free.
    fn free_port_base(brokers: usize) -> u16 {
        let mut x = u64::from(std::process::id())
            ^ (Instant::now().elapsed().as_nanos() as u64)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.subsec_nanos() as u64);
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let base = 20_000 + (x % 35_000) as u16;
            let mut ports = vec![base, base + 1];
            for n in 0..brokers as u16 {
                let p = base + 300 + 40 * n;
                // Its ports, those of a second shard-broker (direct mode), and its metrics port.
                ports.extend([p - 2, p, p + 1, p + 2, p + 4, base + 200 + n]);
            }
            if ports.iter().all(|p| port_free(*p)) {
                return base;
            }
        }
        panic!("no free port range found");
    }

    fn script(&self, action: &str, limit: Duration) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(repo_root().join("deploy/local-cluster.sh"))
            .arg(action)
            .arg(&self.layout)
            .env("CLUSTER_DIR", self.dir.path())
            .env("PORT_BASE", self.port_base.to_string())
            .env("BIN_DIR", &self.bin_dir)
            .env("SHARDS", "2")
            .env("SHARD_ROUTING", self.routing)
            .env("SEGMENT_BYTES", "16777216")
            .env("START_TIMEOUT", "120")
            .env("RUST_LOG", "info");
        run_with_timeout(cmd, limit)
    }

    /// The layout with each broker as one name (`broker-a`), shards forwarding to each other.
    pub fn up(layout: &str) -> LocalCluster {
        Self::up_with_routing(layout, "forward")
    }

    /// The layout with `SHARD_ROUTING=routing`.
    pub fn up_with_routing(layout: &str, routing: &'static str) -> LocalCluster {
        let cluster = LocalCluster {
            layout: layout.to_owned(),
            routing,
            port_base: Self::free_port_base(layout_brokers(layout).len()),
            dir: tempfile::tempdir().expect("temp dir"),
            bin_dir: bin_dir(),
        };
        let out = cluster.script("up", Duration::from_secs(300));
        assert!(
            out.status.success(),
            "local-cluster.sh up failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    pub fn status(&self) -> String {
        String::from_utf8_lossy(&self.script("status", Duration::from_secs(30)).stdout).into_owned()
    }

    pub fn down(&self) -> Output {
        self.script("down", Duration::from_secs(90))
    }

    pub fn namesrv_addr(&self) -> String {
        format!(
            "127.0.0.1:{};127.0.0.1:{}",
            self.port_base,
            self.port_base + 1
        )
    }

    pub fn broker_addr(&self, n: usize) -> String {
        format!("127.0.0.1:{}", self.port_base as usize + 300 + 40 * n)
    }

    pub fn metrics_addr(&self, n: usize) -> String {
        format!("127.0.0.1:{}", self.port_base as usize + 200 + n)
    }

    /// Runs mqadmin with `-n` set to this cluster; returns (success, stdout, stderr).
    pub fn mqadmin(&self, args: &[&str]) -> (bool, String, String) {
        let mut cmd = Command::new(MQADMIN);
        cmd.args(args).env("NAMESRV_ADDR", self.namesrv_addr());
        let out = run_with_timeout(cmd, Duration::from_secs(60));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// mqadmin with `--json`, parsed; panics with its stderr when it fails.
    pub fn mqadmin_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.push("--json");
        let (ok, out, err) = self.mqadmin(&all);
        assert!(ok, "mqadmin {args:?} failed: {err}\n{out}");
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("mqadmin {args:?}: not JSON ({e}): {out}"))
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let _ = self.down();
    }
}

/// GET http://addr/path; returns (status line, body).
pub fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

/// Sum of a metric's samples whose label set contains every `labels` fragment.
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.split('{').next() == Some(name))
        .filter(|l| labels.iter().all(|f| l.contains(f)))
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

/// Runs `fut` on a glommio executor of its own on this thread.
pub fn run_local<T>(fut: impl std::future::Future<Output = T>) -> T {
    glommio::LocalExecutorBuilder::default()
        .make()
        .expect("executor")
        .run(fut)
}

fn pull_consumer(namesrv: &str, group: &str) -> client::PullConsumer {
    let timeout = Duration::from_secs(10);
    let ns = client::NameServer::from_list(namesrv, timeout).expect("name server list");
    client::PullConsumer::new(
        group,
        ns,
        client::BrokerConnections::new(1, timeout),
        timeout,
    )
}

/// Pulls every queue of `topic` as `group` from offset 0 to its end: each queue with the offset
/// after its last message and the bodies found.
pub fn pull_to_end(
    namesrv: &str,
    group: &str,
    topic: &str,
) -> Vec<(client::MessageQueue, i64, Vec<String>)> {
    run_local(async {
        let consumer = pull_consumer(namesrv, group);
        let mut out = Vec::new();
        for queue in consumer.queues(topic).await.expect("topic route") {
            let (mut offset, mut bodies) = (0, Vec::new());
            loop {
                let result = consumer
                    .pull(&queue, offset, &client::pull::PullOptions::default())
                    .await
                    .expect("pull");
                if result.status != client::PullStatus::Found {
                    break;
                }
                for record in result.records() {
                    bodies.push(String::from_utf8_lossy(record.expect("record").body).into_owned());
                }
                offset = result.next_begin_offset;
            }
            out.push((queue, offset, bodies));
        }
        out
    })
}

/// Commits `group`'s offset of each queue.
pub fn commit_offsets(namesrv: &str, group: &str, offsets: &[(client::MessageQueue, i64)]) {
    run_local(async {
        let consumer = pull_consumer(namesrv, group);
        for (queue, offset) in offsets {
            consumer
                .commit_offset(queue, *offset, false)
                .await
                .expect("commit");
        }
    })
}

//! A real Prometheus (Debian's `prometheus` package, installed by scripts/setup-prometheus.sh when
//! missing) scrapes the broker's Apache-named metrics (`metricsExporterType = PROM`) and answers
//! PromQL of common RocketMQ 5 dashboard panels through its HTTP API: produce rate by topic, consumer
//! lag by group, p99 rpc latency by request code, flush and dispatch behind. Without Prometheus and
//! no way to install it the test fails in CI (`CI` set) and skips with a loud message elsewhere.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use protocol::response_code;

const TOPIC: &str = "PromT";
const GROUP: &str = "PromG";

/// The prometheus binary, installing Debian's package when it is missing; `None` when that failed.
fn prometheus_bin() -> Option<PathBuf> {
    let find = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("prometheus"))
                .find(|p| p.is_file())
        })
    };
    if let Some(found) = find() {
        return Some(found);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup-prometheus.sh");
    let status = Command::new(script).status();
    eprintln!("scripts/setup-prometheus.sh: {status:?}");
    find()
}

/// A Prometheus server of this test; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(bin: &Path, target_port: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: rocketmq-broker\n    static_configs:\n\
                 \x20     - targets: ['127.0.0.1:{target_port}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The result vector of an instant query: (labels, value) per series.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let Some(body) = http_get(self.port, &path) else {
            return Vec::new();
        };
        let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        json["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|s| {
                let v = s["value"][1]
                    .as_str()
                    .unwrap_or("NaN")
                    .parse()
                    .unwrap_or(f64::NAN);
                (s["metric"].clone(), v)
            })
            .collect()
    }

    /// Polls `promql` (bounded) until `done` holds for its result; the last result.
    fn wait_for(
        &self,
        promql: &str,
        done: impl Fn(&[(serde_json::Value, f64)]) -> bool,
    ) -> Vec<(serde_json::Value, f64)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self.query(promql);
            if done(&r) || Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The body of a GET, or `None` when the server is not up (yet).
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    conn.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    conn.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
}

fn label<'a>(series: &'a serde_json::Value, key: &str) -> &'a str {
    series[key].as_str().unwrap_or("")
}

#[test]
fn prometheus_scrapes_apache_names_and_answers_rocketmq5_panels() {
    let Some(bin) = prometheus_bin() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: prometheus is missing and scripts/setup-prometheus.sh could not install it"
        );
        eprintln!(
            "\n\n!!! SKIPPED prometheus_scrape: no prometheus binary and no root/apt-get to install \
             Debian's package (scripts/setup-prometheus.sh); in CI this fails !!!\n\n"
        );
        return;
    };
    let prom_port = free_port();
    let broker = Broker::start(&format!(
        "metricsExporterType = \"PROM\"\nmetricsPromExporterPort = {prom_port}\n\
         metricsPromExporterHost = \"127.0.0.1\"\n"
    ));
    let send_some = |n: usize| {
        run_local(async {
            let client = connect(broker.addr()).await;
            for _ in 0..n {
                let r = send(&client, TOPIC, 0, &[b'p'; 512], "").await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
        })
    };
    send_some(20);
    run_local(async {
        let client = connect(broker.addr()).await;
        let r = client
            .invoke(pull_request(GROUP, TOPIC, 0, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let up = protocol::RemotingCommand::request(protocol::request_code::UPDATE_CONSUMER_OFFSET)
            .with_ext("consumerGroup", GROUP)
            .with_ext("topic", TOPIC)
            .with_ext("queueId", "0")
            .with_ext("commitOffset", "5");
        let r = client.invoke(up, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS);
    });
    let prometheus = Prometheus::start(&bin, prom_port);
    let up = prometheus.wait_for("up{job=\"rocketmq-broker\"}", |r| {
        r.iter().any(|(_, v)| *v == 1.0)
    });
    assert!(
        up.iter().any(|(_, v)| *v == 1.0),
        "prometheus scraped the broker: {up:?}\n{}",
        prometheus.log()
    );
    // More sends between scrapes, so rates are above zero.
    send_some(20);
    std::thread::sleep(Duration::from_secs(3));
    send_some(20);

    let rate = prometheus.wait_for(
        "sum(rate(rocketmq_messages_in_total[1m])) by (topic)",
        |r| {
            r.iter()
                .any(|(m, v)| label(m, "topic") == TOPIC && *v > 0.0)
        },
    );
    assert!(
        rate.iter()
            .any(|(m, v)| label(m, "topic") == TOPIC && *v > 0.0),
        "produce rate by topic: {rate:?}"
    );
    let total = prometheus.wait_for("sum(rocketmq_messages_in_total) by (topic)", |r| {
        r.iter()
            .any(|(m, v)| label(m, "topic") == TOPIC && *v == 60.0)
    });
    assert!(
        total
            .iter()
            .any(|(m, v)| label(m, "topic") == TOPIC && *v == 60.0),
        "60 messages in: {total:?}"
    );
    // Lag: 60 stored, 5 committed.
    let lag = prometheus.wait_for(
        "sum(rocketmq_consumer_lag_messages) by (consumer_group, topic)",
        |r| {
            r.iter()
                .any(|(m, v)| label(m, "consumer_group") == GROUP && *v == 55.0)
        },
    );
    assert!(
        lag.iter().any(|(m, v)| label(m, "consumer_group") == GROUP
            && label(m, "topic") == TOPIC
            && *v == 55.0),
        "consumer lag per group: {lag:?}"
    );
    let lag_time = prometheus.query("max(rocketmq_consumer_lag_latency) by (consumer_group)");
    assert!(
        lag_time
            .iter()
            .any(|(m, v)| label(m, "consumer_group") == GROUP && *v > 0.0),
        "consumer lag time per group: {lag_time:?}"
    );
    let out = prometheus.query("sum(rocketmq_messages_out_total) by (topic, consumer_group)");
    assert!(
        out.iter()
            .any(|(m, v)| label(m, "consumer_group") == GROUP && *v == 20.0),
        "messages out per group: {out:?}"
    );
    let p99 = prometheus.query(
        "histogram_quantile(0.99, sum(rate(rocketmq_rpc_latency_bucket[1m])) by (le, request_code))",
    );
    assert!(
        p99.iter()
            .any(|(m, v)| label(m, "request_code") == "send_message_v2"
                && v.is_finite()
                && *v >= 0.0
                && *v <= 3000.0),
        "p99 rpc latency by request code: {p99:?}"
    );
    for gauge in [
        "rocketmq_storage_flush_behind_bytes",
        "rocketmq_storage_dispatch_behind_bytes",
        "rocketmq_storage_message_reserve_time",
    ] {
        let r = prometheus.query(&format!("sum({gauge}) by (node_id)"));
        assert_eq!(r.len(), 1, "{gauge}: {r:?}");
        assert!(r[0].1 >= 0.0, "{gauge}: {r:?}");
    }
    let size =
        prometheus.query("sum(rate(rocketmq_message_size_bucket{le=\"1024.0\"}[1m])) by (topic)");
    assert!(
        size.iter().any(|(m, _)| label(m, "topic") == TOPIC),
        "message size buckets: {size:?}"
    );
}

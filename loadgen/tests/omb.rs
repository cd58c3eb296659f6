//! `loadgen omb` against loadgen's null broker, as separate processes on loopback: an OMB workload
//! file runs at its rate with warm-up, periods and OMB's result fields; the backlog phase pauses the
//! consumers, resumes them and times the drain; a refused key stops the run before it starts; and
//! every workload shipped in bench/omb parses.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// A child process killed when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a null broker on a free port with 8 queues per topic; returns it and its address.
fn null_broker() -> (Guard, String) {
    let mut child = Command::new(LOADGEN)
        .args([
            "null-broker",
            "--listen",
            "127.0.0.1:0",
            "--exit-after",
            "120s",
        ])
        .args(["--queues", "8", "--pull-body-size", "256"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn null-broker");
    let stdout = child.stdout.take().expect("stdout");
    let guard = Guard(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("null-broker did not say where it listens");
    let addr = line.trim().rsplit(' ').next().expect("address").to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");
    (guard, addr)
}

/// Runs loadgen to completion, killing it past `limit`.
fn loadgen(args: &[&str], limit: Duration) -> Output {
    let child = Command::new(LOADGEN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn loadgen");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(output) => output.expect("loadgen output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("loadgen {args:?} did not stop within {limit:?}");
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const WORKLOAD: &str = "name: tiny\ntopics: 2\npartitionsPerTopic: 8\nmessageSize: 256\n\
                        useRandomizedPayloads: true\nrandomBytesRatio: 0.5\nrandomizedPayloadPoolSize: 10\n\
                        subscriptionsPerTopic: 1\nconsumerPerSubscription: 2\nproducersPerTopic: 2\n\
                        producerRate: 2000\nconsumerBacklogSizeGB: 0\ntestDurationMinutes: 15\n";

fn omb(addr: &str, dir: &Path, workload: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let file = dir.join("w.yaml");
    std::fs::write(&file, workload).unwrap();
    let json = dir.join("result.json");
    let _ = std::fs::remove_file(&json);
    let mut args = vec![
        "omb",
        "--workload",
        file.to_str().unwrap(),
        "--namesrv",
        addr,
        "--existing-topics",
        "--interval",
        "1s",
        "--threads",
        "2",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = loadgen(&args, Duration::from_secs(90));
    let value = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, value)
}

#[test]
fn a_workload_runs_at_its_rate_and_reports_omb_fields() {
    let (_broker, addr) = null_broker();
    let dir = tempfile::tempdir().unwrap();
    let (out, v) = omb(
        &addr,
        dir.path(),
        WORKLOAD,
        &["--warmup", "1s", "--test-duration", "3s"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("warm-up] Pub rate"), "{stdout}");
    assert!(
        stdout.contains("----- Aggregated Pub Latency (ms) avg:"),
        "{stdout}"
    );
    assert_eq!(v["workload"], "tiny", "{v}");
    assert_eq!(
        (v["topics"].as_u64(), v["partitions"].as_u64()),
        (Some(2), Some(8))
    );
    let rates: Vec<f64> = v["publishRate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    // Three periods of the test (the warm-up is left out), 2,000 msg/s over the test (a period may
    // be above or below it when a busy machine delays sends into the next one).
    assert_eq!(rates.len(), 3, "{v}");
    assert!(rates.iter().all(|r| *r > 0.0), "{rates:?}");
    let average = v["loadgen"]["publishRateAvg"].as_f64().unwrap();
    assert!((1600.0..2400.0).contains(&average), "{v}");
    let consumed = v["loadgen"]["consumedMessages"].as_f64().unwrap();
    let published = v["loadgen"]["publishedMessages"].as_f64().unwrap();
    assert!(consumed > published * 0.8, "{v}");
    assert!(
        v["aggregatedPublishLatency99pct"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    assert!(
        v["aggregatedEndToEndLatency50pct"].as_f64().unwrap() > 0.0,
        "{v}"
    );
    assert_eq!(v["backlog"].as_array().map(Vec::len), Some(3), "{v}");
    // Open loop as OMB measures it: the lateness of each send apart, in whole microseconds.
    assert!(v["aggregatedPublishDelayLatency50pct"].is_u64(), "{v}");
    assert_eq!(
        v["publishDelayLatencyMax"].as_array().map(Vec::len),
        Some(3),
        "{v}"
    );
    assert!(v["loadgen"].get("backlogDrain").is_none(), "{v}");
}

#[test]
fn the_backlog_is_built_with_consumers_paused_then_drained() {
    let (_broker, addr) = null_broker();
    let dir = tempfile::tempdir().unwrap();
    // 2 topics at 2,000 msg/s of 256 B: 1 MB of backlog takes about 2 s to build.
    let (out, v) = omb(
        &addr,
        dir.path(),
        WORKLOAD,
        &[
            "--warmup",
            "0s",
            "--test-duration",
            "1s",
            "--backlog-bytes",
            "1m",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("backlog built in"), "{stdout}");
    assert!(stdout.contains("backlog drained in"), "{stdout}");
    let b = &v["loadgen"]["backlogDrain"];
    assert!(
        b["backlogAtDrainStart"].as_u64().unwrap() * 256 >= 1_000_000,
        "{v}"
    );
    assert!(b["drainSeconds"].as_f64().unwrap() > 0.0, "{v}");
    assert!(b["drainRate"].as_f64().unwrap() > 0.0, "{v}");
    // Nothing was consumed while the backlog was built.
    let consumed: Vec<f64> = v["consumeRate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    assert_eq!(consumed.first(), Some(&0.0), "{consumed:?}");
}

#[test]
fn refused_keys_and_wrong_queue_counts_stop_the_run() {
    let (_broker, addr) = null_broker();
    let dir = tempfile::tempdir().unwrap();
    let keyed = WORKLOAD.replace(
        "producerRate: 2000",
        "producerRate: 2000\nkeyDistributor: RANDOM_NANO",
    );
    let (out, _) = omb(&addr, dir.path(), &keyed, &["--test-duration", "1s"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("keyDistributor: not supported"),
        "{}",
        text(&out)
    );
    // The null broker serves 8 queues per topic, not 16.
    let wide = WORKLOAD.replace("partitionsPerTopic: 8", "partitionsPerTopic: 16");
    let (out, _) = omb(
        &addr,
        dir.path(),
        &wide,
        &["--warmup", "0s", "--test-duration", "1s"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("has 8 queues in all, the workload's partitionsPerTopic is 16"),
        "{}",
        text(&out)
    );
}

#[test]
fn every_shipped_workload_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/omb");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            loadgen::omb::workload::load(&path).unwrap();
            seen += 1;
        }
    }
    assert!(seen >= 3, "{seen} workloads in {}", dir.display());
}

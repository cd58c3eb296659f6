//! loadgen against its own null broker, as separate processes on loopback: runs stop at their count
//! or duration, errors are counted by response code, and consume / e2e count what was stored.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");

/// A child process killed when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a null broker on a free port; returns it and its address.
fn null_broker(extra: &[&str]) -> (Guard, String) {
    let mut child = Command::new(LOADGEN)
        .args([
            "null-broker",
            "--listen",
            "127.0.0.1:0",
            "--exit-after",
            "120s",
        ])
        .args(extra)
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

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("json file");
    serde_json::from_str(&text).expect("valid json")
}

fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "loadgen failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn produce_stops_at_its_count_and_counts_errors_by_code() {
    let (_broker, addr) = null_broker(&["--fail-every", "10", "--fail-code", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = loadgen(
        &[
            "produce",
            "--namesrv",
            &addr,
            "--topic",
            "T",
            "--count",
            "500",
            "--inflight",
            "8",
            "--threads",
            "2",
            "--connections",
            "2",
            "--key-size",
            "16",
            "--tag-size",
            "8",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_success(&out);
    let v = read_json(&json);
    let p = &v["produce"];
    // Exactly the count: 500 attempted, every 10th answered SYSTEM_BUSY by the null broker.
    assert_eq!(p["attempted_incl_warmup"], 500, "{v}");
    assert_eq!(p["messages"], 450, "{v}");
    assert_eq!(p["response_failed"], 50, "{v}");
    assert_eq!(p["send_failed"], 0, "{v}");
    assert_eq!(p["response_codes"]["2"], 50, "{v}");
    assert_eq!(p["errors"]["SYSTEM_BUSY(2)"], 50, "{v}");
    assert_eq!(p["bytes"], 450 * 1024, "{v}");
    assert!(p["rt_ms"]["p50"].as_f64().unwrap() > 0.0, "{v}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Send TPS:") && stdout.contains("Response Failed: "),
        "{stdout}"
    );
}

#[test]
fn batches_and_async_and_oneway_reach_the_count() {
    let (_broker, addr) = null_broker(&[]);
    let dir = tempfile::tempdir().unwrap();
    for (i, extra) in [
        &["--batch", "10", "--mode", "sync"][..],
        &["--mode", "async", "--inflight", "32"][..],
        &["--mode", "oneway"][..],
        &["--rate", "2000", "--mode", "async"][..],
    ]
    .iter()
    .enumerate()
    {
        let json = dir.path().join(format!("out{i}.json"));
        let mut args = vec![
            "produce",
            "--namesrv",
            &addr,
            "--topic",
            "B",
            "--count",
            "95",
            "--size",
            "100",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = loadgen(&args, Duration::from_secs(60));
        assert_success(&out);
        let v = read_json(&json);
        assert_eq!(v["produce"]["attempted_incl_warmup"], 95, "{extra:?}: {v}");
        assert_eq!(v["produce"]["messages"], 95, "{extra:?}: {v}");
    }
    // The 95 batched messages went as 10 requests (9 of 10, one of 5).
    let v = read_json(&dir.path().join("out0.json"));
    assert_eq!(v["produce"]["requests"], 10, "{v}");
    // The open-loop run kept its schedule.
    let v = read_json(&dir.path().join("out3.json"));
    assert_eq!(v["produce"]["missed_open_loop"], 0, "{v}");
}

#[test]
fn an_open_loop_that_cannot_keep_up_reports_what_it_missed() {
    let (_broker, addr) = null_broker(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    // One request in flight cannot reach a million messages a second: most are due and never sent.
    let out = loadgen(
        &[
            "produce",
            "--namesrv",
            &addr,
            "--topic",
            "R",
            "--duration",
            "1s",
            "--rate",
            "1000000",
            "--inflight",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_success(&out);
    let v = read_json(&json);
    let sent = v["produce"]["messages"].as_u64().unwrap();
    let missed = v["produce"]["missed_open_loop"].as_u64().unwrap();
    assert!(sent > 0, "{v}");
    assert!(missed > 500_000, "{v}");
    assert!(sent + missed >= 990_000, "{v}");
    // Latency counts from the intended send time, so it grows far beyond one round trip.
    assert!(
        v["produce"]["rt_ms"]["max"].as_f64().unwrap() > 100.0,
        "{v}"
    );
}

#[test]
fn a_duration_bounds_the_run_and_warmup_is_left_out() {
    let (_broker, addr) = null_broker(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let began = Instant::now();
    let out = loadgen(
        &[
            "produce",
            "--namesrv",
            &addr,
            "--topic",
            "D",
            "--duration",
            "1500ms",
            "--warmup",
            "500ms",
            "--interval",
            "500ms",
            "--inflight",
            "4",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_success(&out);
    assert!(began.elapsed() < Duration::from_secs(20));
    let v = read_json(&json);
    let measured = v["measured_s"].as_f64().unwrap();
    assert!((1.4..3.0).contains(&measured), "{v}");
    let p = &v["produce"];
    assert!(p["messages"].as_u64().unwrap() > 0, "{v}");
    assert!(
        p["messages"].as_u64().unwrap() < p["ok_incl_warmup"].as_u64().unwrap(),
        "{v}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("warm-up]"), "{stdout}");
}

#[test]
fn consume_reads_a_backlog_to_its_count() {
    let (_broker, addr) = null_broker(&["--backlog", "200", "--queues", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = loadgen(
        &[
            "consume",
            "--namesrv",
            &addr,
            "--topic",
            "C",
            "--count",
            "700",
            "--threads",
            "2",
            "--pull-batch",
            "64",
            "--commit",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_success(&out);
    let v = read_json(&json);
    assert_eq!(v["consume"]["messages_incl_warmup"], 700, "{v}");
    assert_eq!(v["consume"]["pull_failed"], 0, "{v}");
    assert_eq!(v["consume"]["bytes"], 700 * 1024, "{v}");
}

#[test]
fn e2e_consumes_what_it_produced() {
    let (_broker, addr) = null_broker(&["--queues", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = loadgen(
        &[
            "e2e",
            "--namesrv",
            &addr,
            "--topic",
            "E",
            "--count",
            "300",
            "--rate",
            "1000",
            "--json",
            json.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_success(&out);
    let v = read_json(&json);
    assert_eq!(v["produce"]["messages"], 300, "{v}");
    assert_eq!(v["consume"]["messages"], 300, "{v}");
    assert!(
        v["consume"]["e2e_ms"]["p50"].as_f64().unwrap() >= 0.0,
        "{v}"
    );
}

#[test]
fn an_unreachable_name_server_fails_clearly() {
    // A port nothing listens on: bind one and drop it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = loadgen(
        &[
            "produce",
            "--namesrv",
            &addr,
            "--count",
            "10",
            "--timeout",
            "1s",
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loadgen:") && stderr.contains(&addr),
        "{stderr}"
    );
}

//! `--acked-log` and `loadgen verify` against the null broker (separate processes on loopback): every
//! acknowledged send of every mode is listed once (failed ones are not), and `verify` fails naming the
//! loss, because the null broker stores nothing.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
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
    (guard, addr)
}

/// Runs loadgen to completion (killed past 60 s).
fn loadgen(args: &[&str]) -> Output {
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
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.expect("loadgen output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("loadgen {args:?} did not stop within 60 s");
        }
    }
}

#[test]
fn every_acknowledged_send_is_logged_once_and_verify_reports_what_is_missing() {
    // Every 10th send is answered SYSTEM_BUSY: those must not be logged.
    let (_broker, addr) = null_broker(&["--fail-every", "10", "--fail-code", "2"]);
    let dir = tempfile::tempdir().unwrap();
    for (i, extra) in [
        &["--mode", "sync", "--inflight", "4"][..],
        &["--mode", "async", "--inflight", "16", "--threads", "2"][..],
        &["--batch", "5"][..],
        &["--rate", "3000", "--mode", "async"][..],
    ]
    .iter()
    .enumerate()
    {
        let log = dir.path().join(format!("acked{i}.log"));
        let mut args = vec![
            "produce",
            "--namesrv",
            &addr,
            "--topic",
            "A",
            "--count",
            "200",
            "--size",
            "64",
            "--acked-log",
            log.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = loadgen(&args);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let ids: std::collections::HashSet<&str> =
            lines.iter().filter_map(|l| l.split(' ').next()).collect();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The summary's "sent ok N" is what the log must hold.
        let ok: usize = stdout
            .split("sent ok ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no 'sent ok' in {stdout}"));
        assert!(
            ok > 0 && ok < 200,
            "{extra:?}: some sends fail on purpose, got {ok} ok"
        );
        assert_eq!(
            lines.len(),
            ok,
            "{extra:?}: one line per acknowledged message"
        );
        assert_eq!(ids.len(), ok, "{extra:?}: msgIds are distinct");
        for l in &lines {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 6, "{l}");
            assert_eq!(f[4], "64", "{l}");
        }
    }
    // The null broker keeps nothing: verify must fail and count every acknowledged message missing.
    let json = dir.path().join("verify.json");
    let log0 = dir.path().join("acked0.log");
    let out = loadgen(&[
        "verify",
        "--namesrv",
        &addr,
        "--topic",
        "A",
        "--acked-log",
        log0.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        !out.status.success(),
        "verify passed although nothing is stored"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let acked = v["acked"].as_u64().unwrap();
    assert!(acked > 0);
    assert_eq!(v["found"], 0, "{v}");
    assert_eq!(v["missing"].as_u64(), Some(acked), "{v}");
}

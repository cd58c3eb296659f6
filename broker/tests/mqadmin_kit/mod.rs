//! Apache RocketMQ's own `mqadmin` (rocketmq-tools from Maven Central, through tests/apache/) for the
//! tests that run it against our name server and broker: setting up a set, running one command with a
//! time limit, and reading the figures it prints.
// Each test binary uses a part of it.
#![allow(dead_code)]

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::wait_exit;

/// Longest one mqadmin command may run (a JVM start plus a few requests).
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The 4.x mqadmin most users run.
pub const MQADMIN_4: &str = "rocketmq-4.9.8";
/// The newest 5.x mqadmin Maven Central serves whole.
pub const MQADMIN_5: &str = "rocketmq-5.5.0";

/// The project's launchers of Apache's artifacts.
fn apache_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apache")
}

/// The set's mqadmin, installed from Maven Central when missing (tests/apache/setup.sh, idempotent);
/// `None`, with one loud line naming what is missing, when Maven or Java cannot provide it.
pub fn ready_kit(set: &str) -> Option<Kit> {
    let dir = apache_dir();
    let mut setup = Command::new(dir.join("setup.sh"));
    setup.arg(set);
    let (ready, setup_log) = run_limited(setup, COMMAND_LIMIT * 5);
    if !ready {
        println!("SKIPPED: Apache's mqadmin {set} is unavailable (tests/apache/setup.sh {set}):\n{setup_log}");
        return None;
    }
    Some(Kit {
        mqadmin: dir.join("mqadmin.sh"),
        set: set.to_string(),
    })
}

/// One set's mqadmin.
#[derive(Clone)]
pub struct Kit {
    mqadmin: PathBuf,
    pub set: String,
}

/// Runs a command with a time limit; (exit success, stdout + stderr). A command still running at
/// the limit is killed and answers what it printed so far.
pub fn run_limited(mut cmd: Command, limit: Duration) -> (bool, String) {
    let mut child = match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return (false, format!("cannot start: {e}")),
    };
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut text);
        }
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut text);
        }
        text
    });
    let status = wait_exit(&mut child, limit);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let text = reader.join().unwrap_or_default();
    (status.is_some_and(|s| s.success()), text)
}

pub struct Admin {
    pub kit: Kit,
    pub ns: SocketAddr,
}

impl Admin {
    /// Runs `mqadmin ARGS -n <name server>`; its output.
    pub fn run(&self, args: &[&str]) -> String {
        self.run_for(args, COMMAND_LIMIT)
    }

    /// As `run`, killing the command after `limit` (for commands that loop, e.g. clusterRT).
    pub fn run_for(&self, args: &[&str], limit: Duration) -> String {
        let mut cmd = Command::new(&self.kit.mqadmin);
        cmd.arg(&self.kit.set)
            .args(args)
            .args(["-n", &self.ns.to_string()]);
        let started = Instant::now();
        let (_, text) = run_limited(cmd, limit);
        println!(
            "---- mqadmin {} {} ({:.1} s)\n{text}",
            self.kit.set,
            args.join(" "),
            started.elapsed().as_secs_f64()
        );
        text
    }
}

/// The first line that contains every one of `needles`.
pub fn line_with<'a>(text: &'a str, needles: &[&str]) -> Option<&'a str> {
    text.lines()
        .find(|line| needles.iter().all(|n| line.contains(n)))
}

/// Every line that contains every one of `needles`.
pub fn lines_with<'a>(text: &'a str, needles: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .collect()
}

/// The whitespace-separated fields of a line.
pub fn fields(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `key: value` lines (brokerStatus, queryMsgById) or `key = value` (getBrokerConfig), by key.
pub fn value_of<'a>(text: &'a str, key: &str, sep: char) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(sep)?;
        (k.trim() == key).then(|| v.trim())
    })
}

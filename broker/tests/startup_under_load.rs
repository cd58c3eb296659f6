//! Start-up on a loaded or constrained machine: a broker restarted many times beside CPU hogs is
//! ready every time and keeps every acknowledged message; a broker that cannot get the threads or
//! CPUs it asks for either serves or exits with the reason in bounded time, never hangs. (A broker
//! whose second executor failed to start used to wait forever in the shard mesh join, logging only
//! its first line.) The constrained cases need root and cgroup v1 `pids` and `cpuset` controllers;
//! without them they print SKIPPED and pass.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use protocol::response_code;

const TOPIC: &str = "Restarts";
const RESTARTS: usize = 20;
/// A broker that cannot start must say so within this long.
const DECIDE_LIMIT: Duration = Duration::from_secs(20);

/// Busy threads, one per CPU, until dropped.
struct CpuHogs {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHogs {
    fn start() -> CpuHogs {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        CpuHogs { stop, threads }
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[test]
fn restarts_beside_cpu_hogs_are_ready_every_time_and_keep_acknowledged_messages() {
    let hogs = CpuHogs::start();
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    let ledger = Ledger::default();
    let mut slowest = Duration::ZERO;
    for round in 0..RESTARTS {
        run_local(async {
            let c = connect(broker.addr()).await;
            let body = format!("round-{round}").into_bytes();
            let r = send(&c, TOPIC, (round % 4) as i32, &body, "").await;
            assert_eq!(r.code, response_code::SUCCESS, "round {round}");
            let offset = r.ext("queueOffset").unwrap().parse().unwrap();
            ledger.record(TOPIC, (round % 4) as i32, offset, body);
        });
        // Alternate a graceful stop and a SIGKILL (recovery at the next start).
        if round % 2 == 0 {
            broker.stop();
        } else {
            broker.kill9();
        }
        let began = Instant::now();
        broker.restart();
        slowest = slowest.max(began.elapsed());
    }
    run_local(async {
        let c = connect(broker.addr()).await;
        ledger.verify(&c).await.assert_no_loss("after the restarts");
    });
    drop(hogs);
    let slow_reports = broker.log().matches("start-up slow").count();
    println!(
        "{RESTARTS} restarts beside CPU hogs; slowest ready after {slowest:?}; {slow_reports} slow-start reports"
    );
}

/// A cgroup v1 directory of `controller` made for this test, removed when dropped.
struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    fn create(controller: &str, name: &str) -> Result<Cgroup, String> {
        let root = Path::new("/sys/fs/cgroup").join(controller);
        if !root.join("cgroup.procs").exists() {
            return Err(format!(
                "no cgroup v1 {controller} controller at {}",
                root.display()
            ));
        }
        let dir = root.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        Ok(Cgroup { dir })
    }

    fn set(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("write {value} to {}: {e}", self.dir.join(file).display()))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty once its processes are gone (they are killed and reaped first).
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What a start in a cgroup came to.
#[derive(Debug, PartialEq, Eq)]
enum Start {
    Served,
    Refused(String),
}

/// Starts the broker binary inside `cgroup` on a fresh store and waits (bounded) until it serves or
/// exits; panics when it does neither within [`DECIDE_LIMIT`].
fn start_in(cgroup: &Cgroup, what: &str) -> Start {
    let temp = tempfile::tempdir().unwrap();
    let port = free_broker_port();
    let config = temp.path().join("broker.toml");
    std::fs::write(&config, test_config(port, &temp.path().join("store"), "")).unwrap();
    let log_path = temp.path().join("broker.log");
    let log = std::fs::File::create(&log_path).unwrap();
    // The shell moves itself into the cgroup, then becomes the broker.
    let mut child: Child = Command::new("sh")
        .arg("-c")
        .arg("echo $$ > \"$1/cgroup.procs\" && exec \"$2\" --config \"$3\"")
        .arg("sh")
        .arg(&cgroup.dir)
        .arg(broker_bin())
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let began = Instant::now();
    let outcome = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if text.contains("boot success") {
            break Some(Start::Served);
        }
        if let Ok(Some(status)) = child.try_wait() {
            assert!(
                !status.success(),
                "{what}: exited 0 without serving:\n{text}"
            );
            // The reason line is the broker's last `broker: ...` / `broker failed ...`; when two
            // executors panic at once, another thread's backtrace can be written into the middle of
            // it, so it is looked for anywhere in a line.
            let reason = text
                .lines()
                .rev()
                .find_map(|l| {
                    l.find("broker: ")
                        .or_else(|| l.find("broker failed"))
                        .map(|at| l[at..].to_owned())
                })
                .unwrap_or_default();
            break Some(Start::Refused(reason));
        }
        if began.elapsed() > DECIDE_LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    outcome.unwrap_or_else(|| {
        panic!("{what}: neither serving nor exited after {DECIDE_LIMIT:?} (hang):\n{text}")
    })
}

fn skip(why: &str) {
    println!("SKIPPED (start-up under constrained resources): {why}");
}

#[test]
fn a_broker_short_of_threads_serves_or_exits_with_the_reason_never_hangs() {
    let cg = match Cgroup::create("pids", "broker-startup") {
        Ok(cg) => cg,
        Err(e) => return skip(&e),
    };
    let mut refused = 0;
    let mut served = 0;
    // From too few for the executors' threads to enough for all.
    for max in 3..=10 {
        if let Err(e) = cg.set("pids.max", &max.to_string()) {
            return skip(&e);
        }
        let outcome = start_in(&cg, &format!("pids.max = {max}"));
        println!("pids.max = {max}: {outcome:?}");
        match outcome {
            Start::Served => served += 1,
            Start::Refused(reason) => {
                assert!(
                    !reason.is_empty(),
                    "pids.max = {max}: exited without a reason"
                );
                refused += 1;
            }
        }
    }
    let _ = cg.set("pids.max", "max");
    assert!(refused > 0, "the thread limit never bit");
    assert!(served > 0, "never served, even with enough threads");
}

#[test]
fn a_broker_confined_to_one_cpu_starts_its_two_shards() {
    let cg = match Cgroup::create("cpuset", "broker-one-cpu") {
        Ok(cg) => cg,
        Err(e) => return skip(&e),
    };
    let mems = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.mems").unwrap_or_default();
    let first_cpu = std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.cpus")
        .unwrap_or_default()
        .split([',', '-'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    if let Err(e) = cg
        .set("cpuset.mems", mems.trim())
        .and_then(|()| cg.set("cpuset.cpus", &first_cpu))
    {
        return skip(&e);
    }
    assert_eq!(start_in(&cg, "one CPU"), Start::Served);
}

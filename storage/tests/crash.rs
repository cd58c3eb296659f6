//! Crash test: a child process (this binary re-executed with STORAGE_CRASH_CHILD set) appends with
//! SYNC_FLUSH and prints each resolved append; the parent kills it with SIGKILL at a random moment
//! after its first acknowledgement, recovers the store and checks that every resolved append is
//! present and byte-identical, and that the CommitLog, the ConsumeQueues and the index agree. Several
//! rounds reuse the same directory.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{body, message, run, small_config};
use protocol::message::record::{decode_view, peek_head, RecordHead};
use storage::{FlushDiskType, GetMessageStatus, MessageStore, StoreConfig};

const CHILD_ENV: &str = "STORAGE_CRASH_CHILD";
const ROUNDS: u64 = 5;

fn config(dir: &Path) -> StoreConfig {
    let mut cfg = small_config(dir, FlushDiskType::SyncFlush);
    cfg.mapped_file_size_commit_log = 128 * 1024;
    // Two or three index files per run: rolling over is exercised, lookups stay cheap.
    cfg.max_hash_slot_num = 1024;
    cfg.max_index_num = 4000;
    cfg
}

/// One acknowledged append as printed by the child.
#[derive(Debug, Clone)]
struct Acked {
    queue_id: i32,
    queue_offset: i64,
    phys: i64,
    store_ts: i64,
    seed: u64,
    len: usize,
}

fn expected_record(a: &Acked) -> Vec<u8> {
    let mut m = message(
        "Crash",
        a.queue_id,
        &body(a.seed, a.len),
        "T",
        &format!("key{}", a.seed),
        "",
    );
    m.queue_offset = a.queue_offset;
    m.physical_offset = a.phys;
    m.store_timestamp = a.store_ts;
    m.to_vec().expect("encode")
}

fn child(dir: PathBuf, round: u64) {
    run(move || async move {
        let store = MessageStore::open(config(&dir)).await.expect("child open");
        let mut tasks = Vec::new();
        for w in 0..8u64 {
            let store = store.clone();
            tasks.push(glommio::spawn_local(async move {
                for i in 0.. {
                    let seed = round * 1_000_000 + w * 100_000 + i;
                    let len = 100 + (seed as usize * 131) % 3000;
                    let q = (seed % 4) as i32;
                    let msg = message("Crash", q, &body(seed, len), "T", &format!("key{seed}"), "");
                    match store.put(msg).await {
                        Ok(ok) => {
                            let mut out = std::io::stdout().lock();
                            let _ = writeln!(
                                out,
                                "OK {q} {} {} {} {seed} {len}",
                                ok.queue_offset, ok.physical_offset, ok.store_timestamp
                            );
                            let _ = out.flush();
                        }
                        Err(e) => {
                            eprintln!("put failed: {e}");
                            return;
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await;
        }
    });
}

fn parse(line: &str) -> Option<Acked> {
    let mut it = line.strip_prefix("OK ")?.split(' ');
    Some(Acked {
        queue_id: it.next()?.parse().ok()?,
        queue_offset: it.next()?.parse().ok()?,
        phys: it.next()?.parse().ok()?,
        store_ts: it.next()?.parse().ok()?,
        seed: it.next()?.parse().ok()?,
        len: it.next()?.parse().ok()?,
    })
}

/// Runs one child and kills it after `kill_after`; returns the appends it reported.
fn crash_round(dir: &Path, round: u64, kill_after: Duration) -> Vec<Acked> {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .env(CHILD_ENV, dir)
        .env("STORAGE_CRASH_ROUND", round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let (first_tx, first_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        // Only whole lines count: a line cut by the kill is not an acknowledged append.
        let mut acked = Vec::new();
        for a in BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| parse(&l))
        {
            if acked.is_empty() {
                let _ = first_tx.send(());
            }
            acked.push(a);
        }
        acked
    });
    // The kill timer starts at the first acknowledgement: on a loaded machine opening the store can
    // take longer than the whole window, and a round that acknowledges nothing checks nothing.
    if first_rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("round {round}: child acknowledged nothing within 60s");
    }
    std::thread::sleep(kill_after);
    child.kill().expect("SIGKILL child");
    let _ = child.wait();
    reader.join().expect("reader")
}

fn verify(dir: PathBuf, acked: Vec<Acked>) -> usize {
    run(move || async move {
        let store = MessageStore::open(config(&dir)).await.expect("recover");
        // 1. Walk the whole CommitLog, checking every record.
        let mut log: HashMap<(i32, i64), Bytes> = HashMap::new();
        let mut keys: Vec<(String, Bytes)> = Vec::new();
        let mut pos = store.min_physical_offset();
        let end = store.max_physical_offset();
        while pos < end {
            let chunk = store.read_commitlog(pos, 1 << 20).await.expect("read log");
            assert!(!chunk.is_empty(), "no data at {pos} below end {end}");
            let mut at = 0usize;
            while at < chunk.len() {
                let rest = chunk.slice(at..);
                match peek_head(&rest).expect("record head") {
                    Some(RecordHead::Blank { total_size }) => at += total_size,
                    Some(RecordHead::Message { total_size }) if rest.len() >= total_size => {
                        let rec = rest.slice(..total_size);
                        let view = decode_view(&rec, true).expect("valid record");
                        assert_eq!(view.physical_offset, pos + at as i64);
                        let key = protocol::message::properties::keys(view.properties)
                            .next()
                            .expect("key")
                            .to_owned();
                        assert!(
                            log.insert((view.queue_id, view.queue_offset), rec.clone())
                                .is_none(),
                            "duplicate queue offset"
                        );
                        keys.push((key, rec));
                        at += total_size;
                    }
                    _ => break,
                }
            }
            pos += at as i64;
        }
        // 2. Every acknowledged append is there, byte for byte.
        for a in &acked {
            let rec = log
                .get(&(a.queue_id, a.queue_offset))
                .unwrap_or_else(|| panic!("acked {a:?} missing"));
            assert_eq!(rec.as_ref(), &expected_record(a)[..], "acked {a:?} differs");
        }
        // 3. The ConsumeQueues hold exactly the log's records, in order.
        for q in 0..4 {
            let mut offset = store.min_offset("Crash", q);
            assert_eq!(offset, 0);
            loop {
                let got = store
                    .get_messages("Crash", q, offset, 64, 1 << 20, None)
                    .await
                    .expect("get");
                if got.status != GetMessageStatus::Found {
                    break;
                }
                for rec in got.records {
                    assert_eq!(
                        log.get(&(q, offset)),
                        Some(&rec),
                        "ConsumeQueue {q} offset {offset} disagrees with the log"
                    );
                    offset += 1;
                }
            }
            let in_log = log.keys().filter(|(lq, _)| *lq == q).count() as i64;
            assert_eq!(store.max_offset("Crash", q), in_log, "queue {q} unit count");
            assert_eq!(offset, in_log, "queue {q} readable units");
        }
        // 4. The index finds records by key (a sample, plus the newest ones).
        let n = keys.len();
        for (i, (key, rec)) in keys.iter().enumerate() {
            if i % 16 != 0 && i + 20 < n {
                continue;
            }
            let hits = store
                .query_by_key("Crash", key, 4, 0, i64::MAX)
                .await
                .expect("query");
            assert!(hits.iter().any(|h| h == rec), "index misses {key}");
        }
        store.shutdown().await;
        n
    })
}

fn main() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let round = std::env::var("STORAGE_CRASH_ROUND")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        child(PathBuf::from(dir), round);
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all: Vec<Acked> = Vec::new();
    let mut rng = (std::process::id() as u64) ^ 0x5DEECE66D;
    for round in 1..=ROUNDS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let kill_after = Duration::from_millis(200 + rng % 600);
        let acked = crash_round(dir.path(), round, kill_after);
        assert!(
            !acked.is_empty(),
            "round {round}: child acknowledged nothing"
        );
        assert!(
            dir.path().join(storage::ABORT_FILE).exists(),
            "SIGKILL leaves the abort marker"
        );
        all.extend(acked);
        let t = Instant::now();
        let records = verify(dir.path().to_owned(), all.clone());
        println!("crash round {round}: killed after {kill_after:?}, {} acked so far, {records} records in log, verified in {:?}", all.len(), t.elapsed());
        assert!(records >= all.len());
    }
    println!("crash test passed in {:?}", started.elapsed());
}

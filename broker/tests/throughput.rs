//! A throughput probe (ignored by default; run with
//! `cargo test -p broker --release --test throughput -- --ignored --nocapture`): concurrent producers
//! send small messages for a few seconds under ASYNC_FLUSH and SYNC_FLUSH, then a consumer pulls them
//! all back. Prints TPS and latency percentiles; fails if any send or pull fails.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use protocol::response_code;

const CONNECTIONS: usize = 8;
const IN_FLIGHT_PER_CONNECTION: usize = 32;
const RUN_FOR: Duration = Duration::from_secs(4);
const BODY: usize = 128;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn probe(flush: &str, shards: usize) {
    let broker = Broker::start(&format!(
        "flushDiskType = \"{flush}\"\nmappedFileSizeCommitLog = 67108864\nshardCount = {shards}"
    ));
    let latencies: Rc<RefCell<Vec<Duration>>> = Rc::default();
    let failures: Rc<RefCell<usize>> = Rc::default();
    let elapsed = run_local(async {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..CONNECTIONS {
            let client = connect(broker.addr()).await;
            for w in 0..IN_FLIGHT_PER_CONNECTION {
                let client = client.clone();
                let latencies = latencies.clone();
                let failures = failures.clone();
                tasks.push(glommio::spawn_local(async move {
                    let body = vec![b'a' + (c % 26) as u8; BODY];
                    let queue = ((c * IN_FLIGHT_PER_CONNECTION + w) % 4) as i32;
                    while start.elapsed() < RUN_FOR {
                        let t = Instant::now();
                        match client
                            .invoke(send_request("Bench", queue, &body, ""), TIMEOUT)
                            .await
                        {
                            Ok(r) if r.code == response_code::SUCCESS => {
                                latencies.borrow_mut().push(t.elapsed())
                            }
                            other => {
                                if *failures.borrow() == 0 {
                                    eprintln!("first failed send: {other:?}");
                                }
                                *failures.borrow_mut() += 1;
                            }
                        }
                    }
                }));
            }
        }
        for t in tasks {
            t.await;
        }
        start.elapsed()
    });
    let mut lat = latencies.take();
    lat.sort_unstable();
    let sent = lat.len();
    println!(
        "{flush}, {shards} shard(s): {sent} sends in {:.2}s = {:.0} msg/s ({} connections x {} in flight, {BODY} B bodies); \
         latency p50 {:?} p99 {:?} p999 {:?} max {:?}",
        elapsed.as_secs_f64(),
        sent as f64 / elapsed.as_secs_f64(),
        CONNECTIONS,
        IN_FLIGHT_PER_CONNECTION,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999),
        lat.last().copied().unwrap_or_default()
    );
    assert_eq!(*failures.borrow(), 0, "sends failed");
    let pulled = run_local(async {
        let client = connect(broker.addr()).await;
        let start = Instant::now();
        let mut total = 0;
        for q in 0..4 {
            total += pull_all(&client, "Bench", q).await.len();
        }
        (total, start.elapsed())
    });
    println!(
        "{flush}, {shards} shard(s): pulled {} messages back in {:.2}s = {:.0} msg/s (one connection, sequential pulls)",
        pulled.0,
        pulled.1.as_secs_f64(),
        pulled.0 as f64 / pulled.1.as_secs_f64()
    );
    assert_eq!(pulled.0, sent);
}

#[test]
#[ignore]
fn throughput_async_flush() {
    probe("ASYNC_FLUSH", 2);
}

#[test]
#[ignore]
fn throughput_async_flush_one_shard() {
    probe("ASYNC_FLUSH", 1);
}

#[test]
#[ignore]
fn throughput_sync_flush() {
    probe("SYNC_FLUSH", 2);
}

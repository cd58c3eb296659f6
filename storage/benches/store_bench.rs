//! Storage benchmark (`cargo bench -p storage`): one shard, 1 KiB records, each figure printed beside
//! the raw-disk figure measured in the same run.
//!
//! - raw O_DIRECT sequential write (4 MiB writes, 8 in flight: the CommitLog flusher's pattern)
//! - raw 4 KiB write + fdatasync latency
//! - ASYNC_FLUSH append throughput (goal: >= 1 GB/s and >= half the raw rate)
//! - SYNC_FLUSH, 256 concurrent appenders (goal: >= 200k records/s, p99 < 2 ms)
//! - SYNC_FLUSH, 1 appender (goal: p50 within 1.3x of the raw 4 KiB write + fdatasync)
//!
//! BENCH_DIR picks the directory (default: a temp dir under /var/tmp, on the real disk).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::io::OpenOptions;
use glommio::LocalExecutorBuilder;
use hdrhistogram::Histogram;
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, MessageStore, PutError, StoreConfig};

const RECORD_BODY: usize = 1024 - 140;
/// Time given to a new SYNC_FLUSH store to zero-fill its first 1 GiB segment.
const WARM_UP: Duration = Duration::from_secs(4);

fn record(i: u64) -> MessageRecord {
    MessageRecord {
        topic: "BenchTopic".to_owned(),
        queue_id: (i % 8) as i32,
        body: Bytes::from(vec![(i % 251) as u8; RECORD_BODY]),
        properties: properties::encode([
            ("UNIQ_KEY", format!("7F0000010000{i:020X}").as_str()),
            ("TAGS", "TagA"),
        ]),
        born_host: "10.0.0.1:5000".parse().expect("addr"),
        store_host: "127.0.0.1:10911".parse().expect("addr"),
        born_timestamp: 1,
        ..MessageRecord::default()
    }
}

async fn raw_sequential_write(dir: &Path, total: u64) -> f64 {
    let path = dir.join("raw-seq");
    let file = Rc::new(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .dma_open(&path)
            .await
            .expect("create"),
    );
    file.pre_allocate(total, false).await.expect("fallocate");
    const BLOCK: usize = 4 << 20;
    let start = Instant::now();
    let mut pos = 0u64;
    while pos < total {
        let mut wave = Vec::new();
        for _ in 0..8 {
            if pos >= total {
                break;
            }
            let mut buf = file.alloc_dma_buffer(BLOCK);
            buf.as_bytes_mut().fill(0x5A);
            let f = file.clone();
            let at = pos;
            wave.push(glommio::spawn_local(async move {
                f.write_at(buf, at).await.expect("write")
            }));
            pos += BLOCK as u64;
        }
        for w in wave {
            w.await;
        }
    }
    file.fdatasync().await.expect("sync");
    let secs = start.elapsed().as_secs_f64();
    let _ = file.remove().await;
    total as f64 / secs / 1e9
}

/// 128 KiB write + fdatasync into a file prepared by `mode`: "fallocate", "zeroed" or "extend".
async fn raw_128k_sync(dir: &Path, mode: &str, n: u64) -> f64 {
    let path = dir.join(format!("raw-128k-{mode}"));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .dma_open(&path)
        .await
        .expect("create");
    let size = (n + 1) * (128 << 10);
    match mode {
        "fallocate" => file.pre_allocate(1 << 30, false).await.expect("fallocate"),
        "zeroed" => {
            let mut pos = 0;
            while pos < size {
                let mut buf = file.alloc_dma_buffer(4 << 20);
                buf.as_bytes_mut().fill(0);
                file.write_at(buf, pos).await.expect("zero");
                pos += 4 << 20;
            }
            file.fdatasync().await.expect("sync");
        }
        _ => {}
    }
    let t = Instant::now();
    for i in 0..n {
        let mut buf = file.alloc_dma_buffer(128 << 10);
        buf.as_bytes_mut().fill(1);
        file.write_at(buf, i * (128 << 10)).await.expect("write");
        file.fdatasync().await.expect("sync");
    }
    let per = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    let _ = file.remove().await;
    per
}

async fn raw_4k_sync(dir: &Path, n: u64) -> Histogram<u64> {
    let path = dir.join("raw-4k");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .dma_open(&path)
        .await
        .expect("create");
    file.pre_allocate(n * 4096 + 4096, false)
        .await
        .expect("fallocate");
    let mut h = Histogram::<u64>::new(3).expect("hist");
    for i in 0..n {
        let mut buf = file.alloc_dma_buffer(4096);
        buf.as_bytes_mut().fill(1);
        let t = Instant::now();
        file.write_at(buf, i * 4096).await.expect("write");
        file.fdatasync().await.expect("sync");
        let _ = h.record(t.elapsed().as_nanos() as u64);
    }
    let _ = file.remove().await;
    h
}

fn config(dir: &Path, flush: FlushDiskType) -> StoreConfig {
    let mut cfg = StoreConfig::new(dir, 0);
    cfg.flush_disk_type = flush;
    cfg
}

async fn async_throughput(dir: PathBuf, total_records: u64) -> (f64, u64, storage::StatsSnapshot) {
    let store = MessageStore::open(config(&dir, FlushDiskType::AsyncFlush))
        .await
        .expect("open");
    let start = Instant::now();
    let mut busy = 0u64;
    let mut i = 0u64;
    while i < total_records {
        match store.put(record(i)).await {
            Ok(_) => i += 1,
            Err(PutError::Busy { .. }) => {
                busy += 1;
                glommio::yield_if_needed().await;
                glommio::timer::sleep(Duration::from_micros(50)).await;
            }
            Err(e) => panic!("put: {e}"),
        }
        // A broker's puts come from connection tasks that yield on every socket read; yield as often.
        if i % 64 == 0 {
            futures_lite::future::yield_now().await;
        }
    }
    let append_secs = start.elapsed().as_secs_f64();
    // Sustained: count until everything is on disk.
    while store.flushed_physical_offset() < store.max_physical_offset() {
        glommio::timer::sleep(Duration::from_micros(200)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let bytes = store.stats().put_bytes;
    let stats = store.stats();
    store.shutdown().await;
    println!(
        "  (appends alone: {:.2} GB/s, {:.0} records/s of CPU-side append rate)",
        bytes as f64 / append_secs / 1e9,
        total_records as f64 / append_secs
    );
    (bytes as f64 / secs / 1e9, busy, stats)
}

async fn sync_appenders(
    dir: PathBuf,
    appenders: usize,
    run_for: Duration,
) -> (f64, Histogram<u64>, storage::StatsSnapshot) {
    let store = MessageStore::open(config(&dir, FlushDiskType::SyncFlush))
        .await
        .expect("open");
    // A broker opens its store before traffic arrives: let it zero-fill its first segment.
    glommio::timer::sleep(WARM_UP).await;
    let hist = Rc::new(RefCell::new(Histogram::<u64>::new(3).expect("hist")));
    let done = Rc::new(RefCell::new(0u64));
    let start = Instant::now();
    let tasks: Vec<_> = (0..appenders)
        .map(|a| {
            let store = store.clone();
            let hist = hist.clone();
            let done = done.clone();
            glommio::spawn_local(async move {
                let mut i = a as u64;
                while start.elapsed() < run_for {
                    let t = Instant::now();
                    store.put(record(i)).await.expect("put");
                    let _ = hist.borrow_mut().record(t.elapsed().as_nanos() as u64);
                    *done.borrow_mut() += 1;
                    i += appenders as u64;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await;
    }
    let secs = start.elapsed().as_secs_f64();
    let stats = store.stats();
    store.shutdown().await;
    let n = *done.borrow();
    let h = hist.borrow().clone();
    (n as f64 / secs, h, stats)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn main() {
    // `cargo bench` passes --bench; a filter argument is ignored.
    let base = std::env::var("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/var/tmp"));
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(&base).expect("tempdir");
    let root = dir.path().to_owned();
    let async_records: u64 = std::env::var("BENCH_ASYNC_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000_000);
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            storage::probe::prime_dma_detection(&root).await.expect("probe");
            let raw_gbs = raw_sequential_write(&root, 2 << 30).await;
            let raw4k = raw_4k_sync(&root, 2000).await;
            println!("raw O_DIRECT sequential write (4 MiB x8 in flight, as the flusher): {raw_gbs:.2} GB/s");
            println!(
                "raw 4 KiB write+fdatasync: p50 {:.3} ms  p99 {:.3} ms",
                ms(raw4k.value_at_quantile(0.5)),
                ms(raw4k.value_at_quantile(0.99))
            );

            let only = std::env::var("BENCH_ONLY").unwrap_or_default();
            let want = |name: &str| only.is_empty() || only.split(',').any(|o| o == name);
            if want("prealloc") {
                for mode in ["fallocate", "zeroed", "extend"] {
                    println!("raw 128 KiB write+fdatasync into a {mode} file: {:.3} ms", raw_128k_sync(&root, mode, 300).await);
                }
            }
            if want("async") {
            let (gbs, busy, s) = async_throughput(root.join("async"), async_records).await;
            println!(
                "ASYNC_FLUSH append, 1 KiB records: {gbs:.2} GB/s sustained ({:.0}% of raw {raw_gbs:.2} GB/s; goal >= 1 GB/s and >= 50%); \
                 {} flushes, busy retries {busy}, flusher busy {:.2} s writing at {:.2} GB/s",
                gbs / raw_gbs * 100.0,
                s.fsyncs,
                s.fsync_nanos_total as f64 / 1e9,
                s.flushed_bytes as f64 / s.fsync_nanos_total.max(1) as f64
            );

            }
            if want("sync256") {
            let (rps, h, s) = sync_appenders(root.join("sync256"), 256, Duration::from_secs(5)).await;
            println!(
                "SYNC_FLUSH 256 appenders: {rps:.0} records/s (goal >= 200000), append p50 {:.3} ms p99 {:.3} ms (goal < 2 ms), \
                 mean group commit {:.1} records/sync, mean flush {:.3} ms, raw 4 KiB sync p50 {:.3} ms",
                ms(h.value_at_quantile(0.5)),
                ms(h.value_at_quantile(0.99)),
                s.group_commit_records as f64 / s.fsyncs.max(1) as f64,
                ms(s.fsync_nanos_total / s.fsyncs.max(1)),
                ms(raw4k.value_at_quantile(0.5))
            );

            }
            if want("sync1") {
            let (rps1, h1, _) = sync_appenders(root.join("sync1"), 1, Duration::from_secs(3)).await;
            let ratio = h1.value_at_quantile(0.5) as f64 / raw4k.value_at_quantile(0.5) as f64;
            println!(
                "SYNC_FLUSH 1 appender: p50 {:.3} ms vs raw 4 KiB write+fdatasync p50 {:.3} ms = {ratio:.2}x (goal <= 1.3x); \
                 p99 {:.3} ms; {rps1:.0} records/s",
                ms(h1.value_at_quantile(0.5)),
                ms(raw4k.value_at_quantile(0.5)),
                ms(h1.value_at_quantile(0.99))
            );
            }
        })
        .expect("executor")
        .join()
        .expect("bench");
}

//! Pulls of a backlog read through the CommitLog block cache: records crossing 1 MiB block and
//! segment boundaries come back byte for byte, each block is read from disk about once, and a deleted
//! segment's blocks are not served.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{body, message, run, small_config};
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, GetMessageStatus, MessageStore};

const QUEUES: i32 = 4;

/// Pulls queue `q` of `topic` from `from` to its end in batches of 32, returning (queue offset, body)
/// pairs.
async fn pull_all(store: &MessageStore, topic: &str, q: i32, from: i64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = from;
    loop {
        let r = store
            .get_messages(topic, q, offset, 32, 256 * 1024, None)
            .await
            .expect("get");
        if r.status != GetMessageStatus::Found {
            break;
        }
        for rec in &r.records {
            let (m, _) = MessageRecord::decode(rec, true).expect("valid record");
            out.push((m.queue_offset, m.body.to_vec()));
        }
        assert_eq!(r.next_begin_offset, offset + r.records.len() as i64);
        offset = r.next_begin_offset;
    }
    out
}

#[test]
fn backlog_pulls_through_block_cache_return_every_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        // 3 MiB segments read in 1 MiB blocks; records up to 40 KiB often cross a block's end.
        cfg.mapped_file_size_commit_log = 3 << 20;
        cfg.mapped_file_size_consume_queue = 10_000 * 20;
        cfg.max_message_size = 64 * 1024;
        cfg.read_cache_bytes = 8 * 1024;
        cfg.read_block_cache_bytes = 4 << 20;
        cfg.file_reserved_time_hours = 0;
        let store = MessageStore::open(cfg).await.expect("open");
        let mut expected: Vec<Vec<Vec<u8>>> = vec![Vec::new(); QUEUES as usize];
        let mut first_phys = None;
        let mut written = 0usize;
        let mut i = 0u64;
        while written < 10 << 20 {
            let q = (i % QUEUES as u64) as i32;
            let len = 200 + (i as usize * 7919) % 40_000;
            let b = body(i, len);
            let ok = store
                .put(message("Backlog", q, &b, "", "", &format!("U{i}")))
                .await
                .expect("put");
            first_phys.get_or_insert(ok.physical_offset);
            written += len;
            expected[q as usize].push(b);
            i += 1;
        }
        assert!(store.commitlog_segments().len() >= 4, "several segments");
        let before = store.stats().disk_reads;
        for q in 0..QUEUES {
            let got = pull_all(&store, "Backlog", q, 0).await;
            let want = &expected[q as usize];
            assert_eq!(got.len(), want.len(), "queue {q}: every record");
            for (n, ((off, b), w)) in got.iter().zip(want).enumerate() {
                assert_eq!(*off, n as i64, "queue {q}: offsets in order");
                assert_eq!(b, w, "queue {q} offset {n}: body");
            }
        }
        // Four full passes over ~10 MiB in 1 MiB blocks with 4 MiB cached: about 11 block reads a
        // pass, plus ConsumeQueue reads; one small read per pull (hundreds) would mean no caching.
        let reads = store.stats().disk_reads - before;
        assert!(reads < 120, "{reads} disk reads for four passes");

        // Retention deletes every full segment; records there are gone, cached blocks or not.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64;
        let report = store.run_retention(now, true).await.expect("retention");
        assert!(!report.commitlog_segments.is_empty(), "segments deleted");
        let first_phys = first_phys.expect("records written");
        assert_eq!(store.read_record(first_phys).await.expect("read"), None);
        let min = store.min_offset("Backlog", 0);
        assert!(min > 0, "queue 0 starts later now");
        let got = pull_all(&store, "Backlog", 0, min).await;
        let want = &expected[0];
        assert_eq!(got.len(), want.len() - min as usize);
        for (off, b) in &got {
            assert_eq!(b, &want[*off as usize], "offset {off} after deletion");
        }
        store.shutdown().await;
    });
}

/// A block is cached only when all of it is durable: with ASYNC_FLUSH the flush point can sit inside
/// a block, and records below it are read from disk (a tiny memory window); the bytes past the flush
/// point are not on disk yet, and a block cached with them would later serve zeros for records that
/// were flushed since.
#[test]
fn blocks_holding_the_flush_point_are_not_cached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::AsyncFlush);
        cfg.mapped_file_size_commit_log = 64 << 20;
        cfg.mapped_file_size_consume_queue = 300_000 * 20;
        cfg.max_message_size = 64 * 1024;
        cfg.read_cache_bytes = 8 * 1024;
        // No timer flush: a flush starts once ~3.3 MiB wait and covers all of them.
        cfg.flush_interval_commit_log_ms = 600_000;
        cfg.flush_commit_log_least_pages = 3_300_000 / 4096;
        let store = MessageStore::open(cfg).await.expect("open");
        let mut bodies: Vec<Vec<u8>> = Vec::new();
        append_until_flushed(&store, &mut bodies, 1).await;
        let first = storage::local_of(store.flushed_physical_offset());
        assert_ne!(first % (1 << 20), 0, "the flush point is inside a block");
        // Read everything once: records below the flush point come from disk.
        let got = pull_all(&store, "Partial", 0, 0).await;
        assert!(!got.is_empty());
        // More data, flushed past the end of the block that held the first flush point.
        let block_end = (first / (1 << 20) + 1) * (1 << 20);
        append_until_flushed(&store, &mut bodies, block_end + 4096).await;
        let got = pull_all(&store, "Partial", 0, 0).await;
        assert_eq!(got.len(), bodies.len(), "every record, none skipped");
        for (off, b) in &got {
            assert_eq!(b, &bodies[*off as usize], "body at {off}");
        }
        store.shutdown().await;
    });
}

/// Appends batches of ~7 KB records to queue 0 of "Partial" until the CommitLog is durable up to at
/// least `at_least` (shard-local offset).
async fn append_until_flushed(store: &MessageStore, bodies: &mut Vec<Vec<u8>>, at_least: u64) {
    let started = std::time::Instant::now();
    while storage::local_of(store.flushed_physical_offset()) < at_least {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no flush"
        );
        let batch: Vec<_> = (0..16)
            .map(|_| {
                let b = body(bodies.len() as u64, 7001 + bodies.len() % 17);
                bodies.push(b.clone());
                message("Partial", 0, &b, "", "", "")
            })
            .collect();
        store.put_batch(batch).await.expect("put batch");
        glommio::timer::sleep(std::time::Duration::from_millis(2)).await;
    }
}

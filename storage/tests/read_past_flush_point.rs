//! Pulls whose range crosses a flush point: ConsumeQueue units past the queue's durable point and
//! CommitLog bytes past the log's durable point live only in memory, and a pull must return them, not
//! skip them (a skipped unit is a message a consumer never sees).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{body, message, run, small_config};
use protocol::message::record::MessageRecord;
use storage::{local_of, FlushDiskType, GetMessageStatus, MessageStore};

/// Pulls the whole queue in batches of 32 from offset 0, checking that every batch continues exactly
/// where the last ended and that `next_begin_offset` never passes a record it did not return.
async fn pull_all_checked(store: &MessageStore, topic: &str, expect: &[Vec<u8>]) {
    let mut offset = 0i64;
    let started = Instant::now();
    while offset < expect.len() as i64 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "pulls stuck at {offset}"
        );
        let r = store
            .get_messages(topic, 0, offset, 32, 256 * 1024, None)
            .await
            .expect("get");
        assert_eq!(
            r.status,
            GetMessageStatus::Found,
            "at {offset}: {:?}",
            r.status
        );
        for (i, rec) in r.records.iter().enumerate() {
            let (m, _) = MessageRecord::decode(rec, true).expect("valid record");
            let want = offset + i as i64;
            assert_eq!(m.queue_offset, want, "pull from {offset} returned a gap");
            let body = expect.get(want as usize).expect("expected body");
            assert_eq!(&m.body[..], &body[..], "body of queue offset {want}");
        }
        assert_eq!(
            r.next_begin_offset,
            offset + r.records.len() as i64,
            "pull from {offset} returned {} records but moved to {}: records skipped",
            r.records.len(),
            r.next_begin_offset
        );
        offset = r.next_begin_offset;
    }
    assert_eq!(offset, expect.len() as i64);
}

/// A ConsumeQueue flushed up to a point just past a 4 KiB boundary: the flush wrote that block
/// padded with zeros, and the units appended since are in memory only. A pull starting below the
/// boundary reads its units from disk and must take the ones past the flush point from memory.
#[test]
fn pull_across_consume_queue_flush_point_returns_units_held_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::AsyncFlush);
        cfg.mapped_file_size_commit_log = 1 << 20;
        cfg.mapped_file_size_consume_queue = 1000 * 20;
        // ConsumeQueues are flushed only when the test says so.
        cfg.flush_interval_consume_queue_ms = 600_000;
        let store = MessageStore::open(cfg).await.expect("open");
        let bodies: Vec<Vec<u8>> = (0..240u64).map(|i| body(i, 100)).collect();
        // 210 units end at byte 4200, 104 bytes into the second 4 KiB block.
        for b in &bodies[..210] {
            store
                .put(message("CqEdge", 0, b, "", "", ""))
                .await
                .expect("put");
        }
        store.flush_maintenance().await.expect("flush queues");
        for b in &bodies[210..] {
            store
                .put(message("CqEdge", 0, b, "", "", ""))
                .await
                .expect("put");
        }
        // Units 192..224: 192..205 lie below the block boundary (disk only), 210.. in memory only.
        let r = store
            .get_messages("CqEdge", 0, 192, 32, 256 * 1024, None)
            .await
            .expect("get");
        assert_eq!(
            (r.records.len(), r.next_begin_offset),
            (32, 224),
            "one pull across the flush point"
        );
        pull_all_checked(&store, "CqEdge", &bodies).await;
        // Once flushed, the same pulls come from disk alone.
        store.flush_maintenance().await.expect("flush queues");
        pull_all_checked(&store, "CqEdge", &bodies).await;
        store.shutdown().await;
    });
}

/// A CommitLog flush round stops at 32 MiB (MAX_FLUSH_ROUND), inside a record that straddles a
/// memory chunk boundary; with a tiny read cache the chunk before the boundary is dropped from memory,
/// so the record's head is on disk only and its tail in memory only. A pull must still return it.
#[test]
fn pull_of_record_split_between_disk_and_unflushed_memory_returns_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::AsyncFlush);
        cfg.mapped_file_size_commit_log = 64 << 20;
        cfg.mapped_file_size_consume_queue = 300_000 * 20;
        cfg.max_message_size = 1 << 20;
        // No timer flush; the first flush starts once 33 MiB wait and covers 32 MiB (one round).
        cfg.flush_interval_commit_log_ms = 600_000;
        cfg.flush_commit_log_least_pages = (33 << 20) / 4096;
        cfg.flush_interval_consume_queue_ms = 600_000;
        let store = MessageStore::open(cfg).await.expect("open");
        let round: u64 = 32 << 20;
        let mut bodies = Vec::new();
        let mut straddler = None;
        while local_of(store.max_physical_offset()) < (33 << 20) + (64 << 10) {
            let batch: Vec<_> = (0..64)
                .map(|_| {
                    let b = body(bodies.len() as u64, 7000 + bodies.len() % 13);
                    bodies.push(b.clone());
                    message("ClEdge", 0, &b, "", "", "")
                })
                .collect();
            for ok in store.put_batch(batch).await.expect("put batch") {
                let (start, end) = (
                    local_of(ok.physical_offset),
                    local_of(ok.physical_offset) + ok.size as u64,
                );
                if start < round && end > round {
                    straddler = Some(ok.queue_offset);
                }
            }
        }
        let straddler = straddler.expect("a record straddles the 32 MiB flush round end");
        let started = Instant::now();
        while local_of(store.flushed_physical_offset()) < round {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "first flush round did not finish"
            );
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            local_of(store.flushed_physical_offset()),
            round,
            "the flush stopped at its round limit, inside record {straddler}"
        );
        let from = straddler - 3;
        let r = store
            .get_messages("ClEdge", 0, from, 8, 256 * 1024, None)
            .await
            .expect("get");
        assert_eq!(
            (r.status, r.records.len(), r.next_begin_offset),
            (GetMessageStatus::Found, 8, from + 8),
            "pull over the record split by the flush point"
        );
        pull_all_checked(&store, "ClEdge", &bodies).await;
        store.shutdown().await;
    });
}

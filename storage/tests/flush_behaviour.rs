//! Group commit and back-pressure behaviour: SYNC_FLUSH batching, FLUSH_DISK_TIMEOUT, the busy bound,
//! ASYNC_FLUSH timer flushing, arrival notifications and batch puts.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::{body, message, run, small_config};
use storage::{FlushDiskType, MessageStore, PutError};

#[test]
fn sync_flush_groups_concurrent_appends_and_idle_append_does_not_wait_for_a_timer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.mapped_file_size_commit_log = 1 << 20;
        // A long interval: an idle SYNC_FLUSH append must not wait for it.
        cfg.flush_interval_commit_log_ms = 5_000;
        let store = MessageStore::open(cfg).await.expect("open");
        let t = Instant::now();
        store
            .put(message("G", 0, b"one", "", "", ""))
            .await
            .expect("put");
        assert!(
            t.elapsed() < Duration::from_millis(1_000),
            "idle append took {:?}",
            t.elapsed()
        );
        let s = store.stats();
        assert_eq!(
            (s.fsyncs, s.group_commit_records),
            (1, 1),
            "one append = one write + one sync"
        );
        let flushed_before = store.flushed_physical_offset();
        assert_eq!(flushed_before, store.max_physical_offset());

        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let store = store.clone();
                glommio::spawn_local(async move {
                    for j in 0..10u64 {
                        store
                            .put(message("G", i % 4, &body(j, 200), "", "", ""))
                            .await
                            .expect("put");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await;
        }
        let s = store.stats();
        assert_eq!(s.group_commit_records, 641);
        assert!(
            s.fsyncs < 641 / 2,
            "group commit should batch: {} syncs for 641 records",
            s.fsyncs
        );
        assert!(s.group_commit_max > 1);
        assert_eq!(store.flushed_physical_offset(), store.max_physical_offset());
        store.shutdown().await;
    });
}

#[test]
fn a_sync_that_misses_the_deadline_is_a_flush_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.sync_flush_timeout_ms = 0;
        let store = MessageStore::open(cfg).await.expect("open");
        let err = store
            .put(message("F", 0, b"late", "", "", ""))
            .await
            .expect_err("timeout");
        let PutError::FlushTimeout { timeout_ms, stored } = err else {
            panic!("not a flush timeout: {err:?}");
        };
        assert_eq!(timeout_ms, 0);
        // Where the record went: queue offset 0 of queue F/0.
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].queue_offset, 0);
        assert_eq!(store.stats().flush_timeouts, 1);
        // The record was appended all the same.
        assert_eq!(store.max_offset("F", 0), 1);
        store.shutdown().await;
    });
}

#[test]
fn unflushed_bytes_are_bounded_with_a_busy_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::AsyncFlush);
        cfg.max_unflushed_bytes = 32 * 1024;
        cfg.flush_commit_log_least_pages = 1_000;
        cfg.flush_interval_commit_log_ms = 200;
        let store = MessageStore::open(cfg).await.expect("open");
        let mut accepted = 0;
        let err = loop {
            match store
                .put(message("B", 0, &body(accepted, 1000), "", "", ""))
                .await
            {
                Ok(_) => accepted += 1,
                Err(e) => break e,
            }
            assert!(accepted < 100, "never busy");
        };
        assert!(matches!(err, PutError::Busy { .. }), "{err:?}");
        assert!(accepted >= 25, "accepted {accepted}");
        assert_eq!(store.stats().busy_rejects, 1);
        // The timer flush drains the backlog, then appends are accepted again.
        glommio::timer::sleep(Duration::from_millis(500)).await;
        assert_eq!(store.flushed_physical_offset(), store.max_physical_offset());
        store
            .put(message("B", 0, b"again", "", "", ""))
            .await
            .expect("accepted after flush");
        store.shutdown().await;
    });
}

#[test]
fn batch_puts_get_consecutive_offsets_and_arrivals_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("open");
        let seen: Rc<RefCell<Vec<(String, i32, i64)>>> = Rc::default();
        let sink = seen.clone();
        store.set_arrival_listener(Box::new(move |t, q, max| {
            sink.borrow_mut().push((t.to_owned(), q, max))
        }));
        store
            .put(message("A", 1, b"first", "", "", ""))
            .await
            .expect("put");
        let batch = (0..5u64)
            .map(|i| message("A", 1, &body(i, 50), "", "", ""))
            .collect();
        let oks = store.put_batch(batch).await.expect("batch");
        assert_eq!(
            oks.iter().map(|o| o.queue_offset).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5]
        );
        assert!(oks
            .windows(2)
            .all(|w| w[1].physical_offset == w[0].physical_offset + i64::from(w[0].size)));
        assert_eq!(seen.borrow().last(), Some(&("A".to_owned(), 1, 6)));
        assert_eq!(seen.borrow().len(), 6);
        assert_eq!(store.queues(), vec![("A".to_owned(), 1)]);
        let escaping = message("../evil", 0, b"x", "", "", "");
        assert!(matches!(
            store.put(escaping).await,
            Err(PutError::Illegal(_))
        ));
        let too_big = message("A", 1, &vec![0u8; 20_000], "", "", "");
        assert!(matches!(
            store.put(too_big).await,
            Err(PutError::MessageTooLarge { .. })
        ));
        store.shutdown().await;
    });
}

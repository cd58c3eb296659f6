//! Settings changed while the store runs (`MessageStore::set_tunables`, the broker's
//! UPDATE_BROKER_CONFIG): the ASYNC_FLUSH flusher follows a new interval, and puts a new size limit
//! (held to what a segment fits), without a restart.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{message, run, small_config};
use storage::{FlushDiskType, MessageStore, PutError};

#[test]
fn async_flush_follows_a_new_interval_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::AsyncFlush);
        cfg.flush_interval_commit_log_ms = 600_000;
        cfg.flush_commit_log_least_pages = 1_000;
        let store = MessageStore::open(cfg).await.expect("open");
        store
            .put(message("T", 0, b"one", "", "", ""))
            .await
            .expect("put");
        glommio::timer::sleep(Duration::from_millis(300)).await;
        assert!(
            store.flushed_physical_offset() < store.max_physical_offset(),
            "a 10-minute interval must not have flushed yet"
        );
        let mut live = store.tunables();
        assert_eq!(live.flush_interval_commit_log_ms, 600_000);
        live.flush_interval_commit_log_ms = 50;
        store.set_tunables(live);
        let started = Instant::now();
        while store.flushed_physical_offset() < store.max_physical_offset() {
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "the new 50 ms interval did not flush"
            );
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(store.tunables().flush_interval_commit_log_ms, 50);
        store.shutdown().await;
    });
}

#[test]
fn the_put_limit_follows_max_message_size_up_to_a_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let cfg = small_config(&path, FlushDiskType::AsyncFlush);
        let segment = cfg.mapped_file_size_commit_log as usize;
        let store = MessageStore::open(cfg).await.expect("open");
        let put = |size: usize| store.put(message("T", 0, &vec![b'x'; size], "", "", ""));
        // Started with 16 KiB.
        assert!(put(1_000).await.is_ok());
        assert!(matches!(
            put(20_000).await,
            Err(PutError::MessageTooLarge { .. })
        ));
        // Lowered: refused from the next put on.
        let mut live = store.tunables();
        live.max_message_size = 500;
        store.set_tunables(live.clone());
        assert!(matches!(
            put(1_000).await,
            Err(PutError::MessageTooLarge { max: 500, .. })
        ));
        // Raised past the start value: taken, but never beyond what one segment fits.
        live.max_message_size = usize::MAX;
        store.set_tunables(live);
        assert!(put(20_000).await.is_ok());
        match put(segment).await {
            Err(PutError::MessageTooLarge { max, .. }) => assert_eq!(max, segment - 8),
            other => panic!("a segment-sized record: {other:?}"),
        }
        store.shutdown().await;
    });
}

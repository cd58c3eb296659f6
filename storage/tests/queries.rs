//! Offset by time, earliest store time, topic deletion, the DMA trap workaround, replication of the
//! CommitLog from one store into another (the HA path), and pulls with a filter on whole records.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{record_store_timestamp, FlushDiskType, GetMessageStatus, MessageStore, ReadFilter};

#[test]
fn offset_by_time_and_earliest_store_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush))
            .await
            .expect("open");
        assert_eq!(
            store.earliest_store_time("T", 0).await.expect("earliest"),
            None
        );
        let mut times = Vec::new();
        for i in 0..40u64 {
            let ok = store
                .put(message("T", 0, &body(i, 2000), "", "", ""))
                .await
                .expect("put");
            times.push(ok.store_timestamp);
            if i % 10 == 9 {
                glommio::timer::sleep(Duration::from_millis(5)).await;
            }
        }
        store.flush_maintenance().await.expect("flush");
        assert_eq!(
            store.earliest_store_time("T", 0).await.expect("earliest"),
            Some(times[0])
        );
        for probe in [times[0] - 1, times[10], times[25], times[39]] {
            let want = times.iter().position(|t| *t >= probe).expect("some") as i64;
            assert_eq!(
                store.offset_by_time("T", 0, probe).await.expect("by time"),
                want,
                "probe {probe}"
            );
        }
        assert_eq!(
            store
                .offset_by_time("T", 0, times[39] + 1)
                .await
                .expect("by time"),
            40
        );
        let rec = store
            .get_messages("T", 0, 7, 1, 1 << 20, None)
            .await
            .expect("get")
            .records
            .remove(0);
        assert_eq!(record_store_timestamp(&rec), Some(times[7]));
        store.shutdown().await;
    });
}

#[test]
fn delete_topic_removes_its_queues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("open");
        store
            .put(message("Gone", 0, b"a", "", "", ""))
            .await
            .expect("put");
        store
            .put(message("Kept", 1, b"b", "", "", ""))
            .await
            .expect("put");
        store.flush_maintenance().await.expect("flush");
        assert!(path.join("consumequeue/Gone/0").exists());
        store.delete_topic("Gone").await;
        assert_eq!(store.queues(), vec![("Kept".to_owned(), 1)]);
        assert!(!path.join("consumequeue/Gone").exists());
        let got = store
            .get_messages("Gone", 0, 0, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::NoMatchedLogicQueue);
        store.shutdown().await;
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("reopen");
        assert_eq!(store.queues(), vec![("Kept".to_owned(), 1)]);
        store.shutdown().await;
    });
}

#[test]
fn delete_topic_waits_for_a_flush_creating_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush))
            .await
            .expect("open");
        for round in 0..20 {
            let topic = format!("Racing{round}");
            store
                .put(message(&topic, 0, b"a", "", "", ""))
                .await
                .expect("put");
            // The flush creates the queue's first file; the deletion comes while that open is in flight.
            let flusher = store.clone();
            let flush = glommio::spawn_local(async move { flusher.flush_maintenance().await });
            futures_lite::future::yield_now().await;
            store.delete_topic(&topic).await;
            flush
                .await
                .expect("the flush is not cut short by the deletion");
            assert!(
                !path.join("consumequeue").join(&topic).exists(),
                "round {round}: the flush recreated the deleted topic's queue"
            );
        }
        store.shutdown().await;
        let store = MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush))
            .await
            .expect("reopen");
        assert!(store.queues().is_empty());
        store.shutdown().await;
    });
}

#[test]
fn fresh_executor_reads_old_data_through_dma() {
    // glommio#605/#670: the first file an executor opens decides polled I/O; the store primes it.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    let p = path.clone();
    let phys = run(move || async move {
        let mut cfg = small_config(&p, FlushDiskType::SyncFlush);
        cfg.read_cache_bytes = 0;
        let store = MessageStore::open(cfg).await.expect("open");
        let mut offs = Vec::new();
        for i in 0..100u64 {
            offs.push(
                store
                    .put(message("D", 0, &body(i, 1500), "", "", ""))
                    .await
                    .expect("put")
                    .physical_offset,
            );
        }
        store.shutdown().await;
        offs
    });
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.read_cache_bytes = 0;
        let store = MessageStore::open(cfg).await.expect("open");
        for (i, p) in phys.iter().enumerate() {
            let rec = store
                .read_record(*p)
                .await
                .expect("DMA read works")
                .expect("present");
            assert_eq!(
                decode_view(&rec, true).expect("valid").body,
                &body(i as u64, 1500)[..]
            );
        }
        store.shutdown().await;
    });
}

#[test]
fn replicated_log_matches_the_master() {
    let master_dir = tempfile::tempdir().expect("tempdir");
    let slave_dir = tempfile::tempdir().expect("tempdir");
    let (m, s) = (master_dir.path().to_owned(), slave_dir.path().to_owned());
    run(move || async move {
        let master = MessageStore::open(small_config(&m, FlushDiskType::SyncFlush))
            .await
            .expect("master");
        let slave = MessageStore::open(small_config(&s, FlushDiskType::SyncFlush))
            .await
            .expect("slave");
        let mut oks = Vec::new();
        for i in 0..150u64 {
            oks.push(
                master
                    .put(message(
                        "H",
                        (i % 2) as i32,
                        &body(i, 800),
                        "",
                        &format!("k{i}"),
                        "",
                    ))
                    .await
                    .expect("put"),
            );
        }
        // Ship in uneven pieces, as a network would; partial records are re-sent.
        let mut pos = slave.max_physical_offset();
        while pos < master.max_physical_offset() {
            let chunk = master.read_commitlog(pos, 3000).await.expect("read");
            assert!(!chunk.is_empty());
            pos = slave.append_replicated(pos, &chunk).await.expect("append");
        }
        assert_eq!(slave.max_physical_offset(), master.max_physical_offset());
        for (i, ok) in oks.iter().enumerate() {
            let q = (i % 2) as i32;
            assert_eq!(slave.max_offset("H", q), master.max_offset("H", q));
            let a = master
                .get_messages("H", q, ok.queue_offset, 1, 1 << 20, None)
                .await
                .expect("get");
            let b = slave
                .get_messages("H", q, ok.queue_offset, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(a.records, b.records);
        }
        assert_eq!(
            slave
                .query_by_key("H", "k77", 4, 0, i64::MAX)
                .await
                .expect("query")
                .len(),
            1
        );
        // A gap is refused.
        assert!(slave.append_replicated(pos + 100, b"x").await.is_err());
        master.shutdown().await;
        slave.shutdown().await;
    });
}

#[test]
fn record_filter_skips_records_and_moves_past_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush))
            .await
            .expect("open");
        for i in 0..10u64 {
            let tags = if i % 2 == 0 { "even" } else { "odd" };
            store
                .put(message("F", 0, &body(i, 100), tags, "", &format!("U{i}")))
                .await
                .expect("put");
        }
        let uniq = |rec: &[u8]| {
            let props = decode_view(rec, false)
                .expect("record")
                .properties
                .to_owned();
            protocol::message::properties::get(&props, "UNIQ_KEY").map(str::to_owned)
        };
        // Records U3 and U7 only, among the odd tags (the tag filter is asked first).
        let odd = protocol::message::properties::tags_code("odd");
        let by_tags = |code: i64| code == odd;
        let by_record = |rec: &[u8]| matches!(uniq(rec).as_deref(), Some("U3" | "U7"));
        let filter = ReadFilter {
            tags_code: Some(&by_tags),
            record: Some(&by_record),
        };
        let got = store
            .get_messages_matching("F", 0, 0, 32, 1 << 20, filter)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::Found);
        let keys: Vec<_> = got.records.iter().map(|r| uniq(r)).collect();
        assert_eq!(keys, [Some("U3".to_owned()), Some("U7".to_owned())]);
        assert_eq!(
            got.next_begin_offset, 10,
            "rejected records are consumed past"
        );
        // One record at most: the pull stops after U3, past the rejected ones before it.
        let got = store
            .get_messages_matching("F", 0, 0, 1, 1 << 20, filter)
            .await
            .expect("get");
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.next_begin_offset, 4);
        // Nothing left that passes: NoMatchedMessage, still at the end.
        let got = store
            .get_messages_matching("F", 0, 8, 32, 1 << 20, filter)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::NoMatchedMessage);
        assert_eq!(got.next_begin_offset, 10);
        store.shutdown().await;
    });
}

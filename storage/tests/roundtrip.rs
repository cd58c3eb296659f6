//! Append/read round trips across segment boundaries, through memory and through a fresh executor.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{body, message, run, small_config};
use protocol::message::record::{decode_view, MessageRecord};
use storage::{shard_of, FlushDiskType, GetMessageStatus, MessageStore};

#[test]
fn put_get_across_segments_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    let p = path.clone();
    // 300 records of 300..1300 bytes over 64 KiB segments: several segment switches.
    let expected = run(move || async move {
        let store = MessageStore::open(small_config(&p, FlushDiskType::SyncFlush))
            .await
            .expect("open");
        let mut expected = Vec::new();
        for i in 0..300u64 {
            let q = (i % 3) as i32;
            let b = body(i, 300 + (i as usize * 37) % 1000);
            let ok = store
                .put(message(
                    "TopicA",
                    q,
                    &b,
                    "TagA",
                    &format!("k{i}"),
                    &format!("U{i}"),
                ))
                .await
                .expect("put");
            assert_eq!(shard_of(ok.physical_offset), 3);
            assert_eq!(ok.queue_offset, (i / 3) as i64);
            expected.push((q, ok, b));
        }
        assert!(
            store.commitlog_segments().len() >= 4,
            "expected several segments"
        );
        // Everything reads back, from memory and disk alike.
        for (q, ok, b) in &expected {
            let got = store
                .get_messages("TopicA", *q, ok.queue_offset, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(got.status, GetMessageStatus::Found);
            let view = decode_view(&got.records[0], true).expect("decode");
            assert_eq!(view.body, &b[..]);
            assert_eq!(view.queue_offset, ok.queue_offset);
            assert_eq!(view.physical_offset, ok.physical_offset);
            let rec = store
                .read_record(ok.physical_offset)
                .await
                .expect("read")
                .expect("some");
            assert_eq!(rec, got.records[0]);
        }
        store.shutdown().await;
        expected
    });
    assert!(!path.join(storage::ABORT_FILE).exists());
    // A fresh executor (first file opened is ours) reads everything back through DMA.
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("reopen");
        assert_eq!(store.max_offset("TopicA", 0), 100);
        let mut total = 0;
        for q in 0..3 {
            let mut offset = 0;
            loop {
                let got = store
                    .get_messages("TopicA", q, offset, 32, 1 << 20, None)
                    .await
                    .expect("get");
                if got.status != GetMessageStatus::Found {
                    assert_eq!(got.status, GetMessageStatus::OffsetOverflowOne);
                    break;
                }
                for rec in &got.records {
                    let (_, ok, b) = expected
                        .iter()
                        .find(|(eq, ok, _)| *eq == q && ok.queue_offset == offset)
                        .expect("known");
                    let view = decode_view(rec, true).expect("decode");
                    assert_eq!(view.body, &b[..]);
                    assert_eq!(view.physical_offset, ok.physical_offset);
                    offset += 1;
                    total += 1;
                }
                assert_eq!(got.next_begin_offset, offset);
            }
        }
        assert_eq!(total, 300);
        // Keys are found through the index.
        let hits = store
            .query_by_key("TopicA", "k17", 10, 0, i64::MAX)
            .await
            .expect("query");
        assert_eq!(hits.len(), 1);
        let (m, _) = MessageRecord::decode(&hits[0], true).expect("decode");
        assert_eq!(&m.body[..], &body(17, 300 + 629)[..]);
        assert_eq!(
            store
                .query_by_key("TopicA", "U42", 10, 0, i64::MAX)
                .await
                .expect("query")
                .len(),
            1
        );
        assert!(store
            .query_by_key("TopicA", "nope", 10, 0, i64::MAX)
            .await
            .expect("query")
            .is_empty());
        // New appends continue the queues.
        let ok = store
            .put(message("TopicA", 0, b"after", "", "", ""))
            .await
            .expect("put");
        assert_eq!(ok.queue_offset, 100);
        store.shutdown().await;
    });
}

//! Records appended before the CommitLog has any segment file: the first segment is created in the
//! background and the flusher runs on a timer, so with ASYNC_FLUSH a burst of appends that never
//! yields can pass the end of the first segment while everything is still in memory only. Every
//! record of that burst must stay readable: by physical offset, by a pull and by an HA read.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{local_of, physical, FlushDiskType, GetMessageStatus, MessageStore};

const TOPIC: &str = "Unfiled";

/// Puts records of 1-2 KiB to queue 0 until the log passes the end of its first segment; returns
/// each record's (physical offset, body). ASYNC_FLUSH puts do not yield, so no background task
/// (segment creation, flusher) runs meanwhile.
async fn burst_past_first_segment(store: &MessageStore, segment: u64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut seed = 0u64;
    while local_of(store.max_physical_offset()) < segment + 4096 {
        seed += 1;
        let b = body(seed, 1000 + (seed as usize * 37) % 1100);
        let ok = store
            .put(message(TOPIC, 0, &b, "TagA", "", ""))
            .await
            .expect("put");
        out.push((ok.physical_offset, b));
    }
    out
}

async fn check_all_readable(store: &MessageStore, recs: &[(i64, Vec<u8>)], shard: u16) {
    for (i, (phys, b)) in recs.iter().enumerate() {
        let rec = store
            .read_record(*phys)
            .await
            .expect("read")
            .unwrap_or_else(|| panic!("record {i} at local offset {} not found", local_of(*phys)));
        assert_eq!(decode_view(&rec, true).expect("valid").body, &b[..]);
    }
    let got = store
        .get_messages(TOPIC, 0, 0, 8, 1 << 20, None)
        .await
        .expect("get");
    assert_eq!(got.status, GetMessageStatus::Found);
    assert_eq!(got.next_begin_offset, 8);
    for (rec, (phys, b)) in got.records.iter().zip(recs) {
        let view = decode_view(rec, true).expect("valid");
        assert_eq!(view.physical_offset, *phys);
        assert_eq!(view.body, &b[..]);
    }
    assert_eq!(got.records.len(), 8);
    let (first_phys, first_body) = recs.first().expect("records");
    let raw = store
        .read_commitlog(*first_phys, 64 * 1024)
        .await
        .expect("HA read");
    let view = decode_view(&raw, true).expect("HA read starts with the first record");
    assert_eq!(view.body, &first_body[..]);
    // Reported to admin tools as the CommitLog min offset.
    assert_eq!(
        store.min_physical_offset(),
        physical(shard, 0),
        "the log begins at 0: nothing was deleted"
    );
}

#[test]
fn records_past_the_first_segment_end_before_any_segment_file_stay_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let cfg = small_config(&path, FlushDiskType::AsyncFlush);
        let (shard, segment) = (cfg.shard_id, cfg.mapped_file_size_commit_log);
        let store = MessageStore::open(cfg.clone()).await.expect("open");
        let recs = burst_past_first_segment(&store, segment).await;
        assert!(
            store.commitlog_segments().is_empty(),
            "setup: the burst must end before the first segment file exists"
        );
        check_all_readable(&store, &recs, shard).await;
        // The reads above must have run in that state, not after the files appeared.
        assert!(
            store.commitlog_segments().is_empty(),
            "setup: the reads yielded and let the segment files be created"
        );
        store.shutdown().await;
        // Once flushed and reopened, the same records are read from the segment files.
        let store = MessageStore::open(cfg).await.expect("reopen");
        assert_eq!(store.commitlog_segments().len(), 2);
        check_all_readable(&store, &recs, shard).await;
        store.shutdown().await;
    });
}

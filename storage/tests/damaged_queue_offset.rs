//! Regression (found by the `recovery_scan` fuzz target): a record whose QUEUEOFFSET (outside the CRC)
//! is damaged to a huge value made recovery try to fill a gap of trillions of ConsumeQueue units
//! (out of memory). Now its unit goes where the queue is (no hole) and every record stays reachable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Seek, SeekFrom, Write};

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{local_of, FlushDiskType, GetMessageStatus, MessageStore, COMMITLOG_DIR};

/// Byte position of QUEUEOFFSET inside a stored record.
const QUEUE_OFFSET_POS: u64 = 20;

#[test]
fn a_damaged_queue_offset_does_not_blow_up_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    let oks = run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("open");
        let mut oks = Vec::new();
        for i in 0..10u64 {
            oks.push(
                store
                    .put(message("T", 0, &body(i, 300), "", "", ""))
                    .await
                    .expect("put"),
            );
        }
        // No shutdown: the abort marker stays, so the next open scans the log.
        oks
    });
    let seg = small_config(dir.path(), FlushDiskType::SyncFlush).mapped_file_size_commit_log;
    let damaged = local_of(oks[5].physical_offset);
    let file = dir
        .path()
        .join(COMMITLOG_DIR)
        .join(format!("{:020}", damaged - damaged % seg));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("segment");
    f.seek(SeekFrom::Start(damaged % seg + QUEUE_OFFSET_POS))
        .expect("seek");
    f.write_all(&0x0000_0700_0000_0000i64.to_be_bytes())
        .expect("patch");
    f.sync_all().expect("sync");

    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::SyncFlush))
            .await
            .expect("reopen after damage");
        assert_eq!(
            store.max_offset("T", 0),
            10,
            "later records keep their queue offsets"
        );
        assert_eq!(store.min_offset("T", 0), 0);
        for i in 0..10u64 {
            let got = store
                .get_messages("T", 0, i as i64, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(got.status, GetMessageStatus::Found, "record {i}");
            assert_eq!(
                decode_view(&got.records[0], true).expect("valid").body,
                &body(i, 300)[..]
            );
        }
        store.shutdown().await;
    });
}

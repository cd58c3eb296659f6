//! Zero-filling segments in the background (`warmMapedFileEnable`) while they are being written: the
//! fill runs ahead of the appends and must never write zeros over a record, whether appends are
//! slower than the fill or catch up with it.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{body, message, run, small_config};
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, GetMessageStatus, MessageStore};

/// Appends `count` records of `len` bytes (SYNC_FLUSH: each durable when put returns), `at_once`
/// puts in flight together (many in flight jump the append position ahead of the fill), pausing
/// between rounds when `pause` so the fill gets ahead; then reopens the store and reads every one back.
fn appends_survive_the_fill(count: u64, len: usize, at_once: u64, pause: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let cfg = || {
            let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
            // Segments several fill chunks long, so fills and appends share segments.
            cfg.mapped_file_size_commit_log = 4 << 20;
            cfg.mapped_file_size_consume_queue = 100_000 * 20;
            cfg.max_message_size = 64 * 1024;
            cfg.warm_mapped_file_enable = Some(true);
            cfg
        };
        let store = std::rc::Rc::new(MessageStore::open(cfg()).await.expect("open"));
        let bodies: Vec<Vec<u8>> = (0..count).map(|i| body(i, len)).collect();
        for round in bodies.chunks(at_once as usize) {
            if pause {
                glommio::timer::sleep(std::time::Duration::from_millis(3)).await;
            }
            let puts: Vec<_> = round
                .iter()
                .map(|b| {
                    let (store, b) = (store.clone(), b.clone());
                    glommio::spawn_local(async move {
                        store.put(message("Warm", 0, &b, "", "", "")).await
                    })
                })
                .collect();
            for p in puts {
                p.await.expect("put");
            }
        }
        assert!(store.commitlog_segments().len() >= 3, "several segments");
        store.shutdown().await;
        drop(store);
        // Puts in flight together land in the queue in an order of their own: match by body.
        let mut want: std::collections::HashMap<Vec<u8>, u32> = std::collections::HashMap::new();
        for b in &bodies {
            *want.entry(b.clone()).or_default() += 1;
        }

        let store = MessageStore::open(cfg()).await.expect("reopen");
        let mut offset = 0i64;
        while offset < count as i64 {
            let r = store
                .get_messages("Warm", 0, offset, 32, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(r.status, GetMessageStatus::Found, "at {offset}");
            for rec in &r.records {
                let (m, _) = MessageRecord::decode(rec, true).expect("record intact");
                assert_eq!(m.queue_offset, offset, "in order");
                let left = want.get_mut(&m.body[..]).expect("a body that was sent");
                assert!(*left > 0, "body at {offset} read twice");
                *left -= 1;
                offset += 1;
            }
        }
        store.shutdown().await;
    });
}

#[test]
fn slow_appends_behind_a_running_fill_are_never_zeroed() {
    // ~10 MiB with pauses: the fill (paced) runs ahead inside the segment being written.
    appends_survive_the_fill(2_500, 4_000, 50, true);
}

#[test]
fn fast_appends_that_catch_up_with_the_fill_are_never_zeroed() {
    // ~14 MiB, 128 puts in flight: appends jump ahead of the paced fill, which must skip ahead.
    appends_survive_the_fill(900, 16_000, 128, false);
}

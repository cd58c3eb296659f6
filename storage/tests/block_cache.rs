//! Pulls of a backlog read through the CommitLog block cache: records crossing 1 MiB block and
//! segment boundaries come back byte for byte, each block is read from disk about once, and a deleted
//! segment's blocks are not served.

mod common;

use common::{body, message, run, small_config};
use protocol::message::record::MessageRecord;
use storage::{FlushDiskType, GetMessageStatus, MessageStore};

const QUEUES: i32 = 4;

/// Pulls queue `q` from `from` to its end in batches of 32, returning (queue offset, body) pairs.
async fn pull_all(store: &MessageStore, q: i32, from: i64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = from;
    loop {
        let r = store
            .get_messages("Backlog", q, offset, 32, 256 * 1024, None)
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
            let got = pull_all(&store, q, 0).await;
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
        let got = pull_all(&store, 0, min).await;
        let want = &expected[0];
        assert_eq!(got.len(), want.len() - min as usize);
        for (off, b) in &got {
            assert_eq!(b, &want[*off as usize], "offset {off} after deletion");
        }
        store.shutdown().await;
    });
}

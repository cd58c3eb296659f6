//! Retention: expired segments go at deleteWhen (or when forced / under disk pressure), together with
//! the ConsumeQueue files wholly below the new minimum; nothing newer is touched. A disk above the
//! warning level makes the store refuse appends.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, SystemTime};

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::retention::is_delete_hour;
use storage::retention_audit::DeleteRule;
use storage::{local_of, FlushDiskType, GetMessageStatus, MessageStore, PutError, COMMITLOG_DIR};

fn age_file(path: &std::path::Path, hours: u64) {
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(SystemTime::now() - Duration::from_secs(hours * 3600))
        .expect("set mtime");
}

#[test]
fn expired_segments_and_their_queue_files_are_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        // Above 100: no disk pressure even on a completely full disk.
        cfg.disk_max_used_space_ratio = 101;
        cfg.disk_space_warning_level_ratio = 101;
        cfg.disk_space_clean_forcibly_ratio = 101;
        let store = MessageStore::open(cfg).await.expect("open");
        let mut oks = Vec::new();
        for i in 0..400u64 {
            oks.push(
                store
                    .put(message("R", (i % 2) as i32, &body(i, 900), "", "", ""))
                    .await
                    .expect("put"),
            );
        }
        store.flush_maintenance().await.expect("flush");
        let segments = store.commitlog_segments();
        assert!(segments.len() >= 6, "got {} segments", segments.len());
        let seg_path = |phys: i64| {
            path.join(COMMITLOG_DIR)
                .join(format!("{:020}", local_of(phys)))
        };
        // The three oldest are 100 h old, the fourth is fresh, the fifth old again.
        for s in &segments[..3] {
            age_file(&seg_path(*s), 100);
        }
        age_file(&seg_path(segments[4]), 100);
        let cq_files = |q: i32| {
            std::fs::read_dir(path.join("consumequeue/R").join(q.to_string()))
                .expect("cq dir")
                .count()
        };
        let cq_before = cq_files(0);

        // Outside deleteWhen ("04") and without pressure nothing goes.
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64;
        let off_hour = if is_delete_hour("04", now) {
            now + 2 * 3_600_000
        } else {
            now
        };
        let report = store
            .run_retention(off_hour, false)
            .await
            .expect("retention");
        assert!(
            report.commitlog_segments.is_empty(),
            "nothing deleted outside deleteWhen"
        );

        // A group that consumed nothing and one that consumed everything.
        let ends = [store.max_offset("R", 0), store.max_offset("R", 1)];
        store.set_consumer_positions(Box::new(move |topic, queue_id| {
            assert_eq!(topic, "R");
            vec![
                ("behind".to_owned(), 0),
                ("done".to_owned(), ends[queue_id as usize]),
            ]
        }));
        let report = store.run_retention(now, true).await.expect("retention");
        assert_eq!(
            report.commitlog_segments.len(),
            3,
            "exactly the three oldest: {report:?}"
        );
        assert!(report
            .commitlog_segments
            .iter()
            .all(|d| d.rule == DeleteRule::Expired));
        // Each queue's new start is what `behind` lost on it; `done` lost nothing.
        let mut lost: Vec<(i32, &str, i64)> = report
            .unconsumed
            .iter()
            .map(|l| (l.queue_id, l.group.as_str(), l.messages))
            .collect();
        lost.sort();
        assert_eq!(
            lost,
            vec![
                (0, "behind", store.min_offset("R", 0)),
                (1, "behind", store.min_offset("R", 1))
            ]
        );
        let stats = store.stats();
        assert_eq!(
            (
                stats.retention_expired,
                stats.retention_disk_pressure,
                stats.retention_forced
            ),
            (3, 0, 0)
        );
        assert_eq!(
            stats.retention_unconsumed as i64,
            store.min_offset("R", 0) + store.min_offset("R", 1)
        );
        for s in &segments[..3] {
            assert!(!seg_path(*s).exists());
        }
        for s in &segments[3..] {
            assert!(seg_path(*s).exists(), "segment {s} must stay");
        }
        assert_eq!(store.min_physical_offset(), segments[3]);
        assert!(report.consume_queue_files > 0 && cq_files(0) < cq_before);

        // Records below the new minimum are gone, the rest all readable.
        let first_kept = oks
            .iter()
            .position(|ok| ok.physical_offset >= segments[3])
            .expect("kept");
        for q in 0..2 {
            let min = store.min_offset("R", q);
            let expect_min = oks
                .iter()
                .enumerate()
                .filter(|(i, ok)| (*i as i32 % 2) == q && ok.physical_offset >= segments[3])
                .map(|(_, ok)| ok.queue_offset)
                .min()
                .expect("min");
            assert_eq!(min, expect_min, "queue {q} min offset");
            let got = store
                .get_messages("R", q, 0, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(got.status, GetMessageStatus::OffsetTooSmall);
            assert_eq!(got.next_begin_offset, min);
        }
        for (i, ok) in oks.iter().enumerate().skip(first_kept) {
            let rec = store
                .read_record(ok.physical_offset)
                .await
                .expect("read")
                .expect("kept record");
            assert_eq!(
                decode_view(&rec, true).expect("valid").body,
                &body(i as u64, 900)[..]
            );
        }
        assert!(store
            .read_record(oks[0].physical_offset)
            .await
            .expect("read")
            .is_none());
        store.shutdown().await;
    });
}

#[test]
fn disk_pressure_deletes_oldest_and_warning_level_refuses_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        // Any real disk is "fuller" than 0 %.
        cfg.disk_max_used_space_ratio = 0;
        cfg.disk_space_clean_forcibly_ratio = 0;
        cfg.clean_file_forcibly_enable = false;
        let store = MessageStore::open(cfg).await.expect("open");
        for i in 0..200u64 {
            store
                .put(message("P", 0, &body(i, 900), "", "", ""))
                .await
                .expect("put");
        }
        let before = store.commitlog_segments();
        assert!(before.len() >= 3);
        // Over diskMaxUsedSpaceRatio only expired segments go (none is), and forced cleaning is off.
        let report = store.run_retention(0, false).await.expect("retention");
        assert!(report.commitlog_segments.is_empty(), "{report:?}");
        store.shutdown().await;

        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.disk_space_clean_forcibly_ratio = 0;
        let store = MessageStore::open(cfg).await.expect("reopen");
        // Not expired, not in deleteWhen, but over diskSpaceCleanForciblyRatio: the oldest one goes,
        // one per pass.
        let report = store.run_retention(0, false).await.expect("retention");
        assert_eq!(report.commitlog_segments.len(), 1);
        assert_eq!(report.commitlog_segments[0].rule, DeleteRule::Forced);
        assert_eq!(store.stats().retention_forced, 1);
        // (A segment created ahead in the background may have joined the list meanwhile.)
        let after = store.commitlog_segments();
        assert_eq!(after.first(), Some(&before[1]));
        assert!(before[1..].iter().all(|s| after.contains(s)));
        assert!(store.read_only_reason().is_none());
        store.shutdown().await;

        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.disk_space_warning_level_ratio = 0;
        let store = MessageStore::open(cfg).await.expect("reopen");
        store.run_retention(0, false).await.expect("retention");
        assert!(store.read_only_reason().is_some());
        let err = store
            .put(message("P", 0, b"x", "", "", ""))
            .await
            .expect_err("refused");
        assert!(matches!(err, PutError::ReadOnly(_)), "{err:?}");
        // Reads still work.
        assert!(
            store
                .get_messages("P", 0, store.min_offset("P", 0), 1, 1 << 20, None)
                .await
                .expect("get")
                .status
                == GetMessageStatus::Found
        );
        store.shutdown().await;
    });
}

#[test]
fn epochs_whose_data_is_deleted_are_pruned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.disk_max_used_space_ratio = 101;
        cfg.disk_space_warning_level_ratio = 101;
        cfg.disk_space_clean_forcibly_ratio = 101;
        let store = MessageStore::open(cfg).await.expect("open");
        let put = |i: u64| store.put(message("R", 0, &body(i, 900), "", "", ""));
        // Epoch 2 begins once the second segment file exists (the first is half full), epoch 3 once
        // the third does (in the second segment).
        store.begin_epoch(1).unwrap();
        let mut i = 0;
        while store.commitlog_segments().len() < 2 {
            put(i).await.expect("put");
            i += 1;
        }
        store.begin_epoch(2).unwrap();
        while store.commitlog_segments().len() < 3 {
            put(i).await.expect("put");
            i += 1;
        }
        store.begin_epoch(3).unwrap();
        put(i).await.expect("put");
        let segments = store.commitlog_segments();
        let seg_path = |phys: i64| {
            path.join(COMMITLOG_DIR)
                .join(format!("{:020}", local_of(phys)))
        };
        age_file(&seg_path(segments[0]), 100);
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64;
        let report = store.run_retention(now, true).await.expect("retention");
        assert_eq!(report.commitlog_segments.len(), 1);
        // Epoch 1's data was all in the deleted segment; epoch 2 began in it and goes on.
        let epochs: Vec<u32> = store.epochs().iter().map(|e| e.epoch).collect();
        assert_eq!(epochs, vec![2, 3]);
        store.shutdown().await;
    });
}

/// A store that refuses writes for a full disk looks at the disk at every maintenance tick, so writes
/// resume within a tick of space coming back, not at the next retention pass (every 10 s).
#[test]
fn a_store_read_only_for_a_full_disk_takes_writes_again_soon_after_space_is_freed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = small_config(&path, FlushDiskType::SyncFlush);
        cfg.disk_space_warning_level_ratio = 0;
        let store = MessageStore::open(cfg).await.expect("open");
        store.run_retention(0, false).await.expect("retention");
        assert!(store.read_only_reason().is_some());
        // Space freed, as the store sees it: the limit is now above any use.
        let mut tunables = store.tunables();
        tunables.disk_space_warning_level_ratio = 101;
        store.set_tunables(tunables);
        let freed = std::time::Instant::now();
        while let Some(reason) = store.read_only_reason() {
            assert!(
                freed.elapsed() < Duration::from_secs(6),
                "still read-only {:?} after space was freed: {reason}",
                freed.elapsed()
            );
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        store
            .put(message("P", 0, b"x", "", "", ""))
            .await
            .expect("put once writable again");
        store.shutdown().await;
    });
}

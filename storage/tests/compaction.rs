//! Compaction topics in the store: a compacted queue read from offset 0 yields exactly the newest
//! record of each key, byte for byte, in offset order; reads cross from the compacted log to the
//! ConsumeQueue; passes resume after the key-map budget and after a pass that failed at any step;
//! retention keeps what is not compacted yet and what a reserve.time still covers.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use common::{message, run, small_config};
use protocol::message::properties::{self, KEYS};
use protocol::message::record::decode_view;
use storage::{
    local_of, FlushDiskType, GetMessageStatus, MessageStore, PutOk, StoreConfig, TopicPolicies,
    COMMITLOG_DIR,
};

const KEYS_N: usize = 1000;
const VERSIONS: usize = 10;

fn value(version: usize, key: usize) -> Vec<u8> {
    format!("v{version:02}-key{key:04}-{}", "x".repeat(120)).into_bytes()
}

fn compacted(topic: &str) -> TopicPolicies {
    TopicPolicies {
        compacted: BTreeSet::from([topic.to_owned()]),
        ..TopicPolicies::default()
    }
}

fn config(path: &std::path::Path) -> StoreConfig {
    let mut cfg = small_config(path, FlushDiskType::SyncFlush);
    // No disk pressure on any disk; compaction only when a test asks.
    cfg.disk_max_used_space_ratio = 101;
    cfg.disk_space_warning_level_ratio = 101;
    cfg.disk_space_clean_forcibly_ratio = 101;
    cfg.compaction_interval_ms = 3_600_000;
    cfg
}

/// Writes `versions` of keys `keys` to `topic` queue 0 in batches; returns (version, key, ok) per
/// record in order.
async fn write_versions(
    store: &MessageStore,
    topic: &str,
    versions: std::ops::Range<usize>,
    keys: std::ops::Range<usize>,
) -> Vec<(usize, usize, PutOk)> {
    let mut out = Vec::new();
    for v in versions {
        let ks: Vec<usize> = keys.clone().collect();
        for chunk in ks.chunks(100) {
            let msgs = chunk
                .iter()
                .map(|k| message(topic, 0, &value(v, *k), "t", &format!("key{k:04}"), ""))
                .collect();
            let oks = store.put_batch(msgs).await.expect("put");
            out.extend(chunk.iter().zip(oks).map(|(k, ok)| (v, *k, ok)));
        }
    }
    out
}

/// Every record a consumer gets pulling from `from` to the queue's end, 32 at a time, and the
/// offsets each pull answered as next.
async fn read_all(store: &MessageStore, topic: &str, from: i64) -> (Vec<Bytes>, Vec<i64>) {
    let mut offset = from;
    let mut records = Vec::new();
    let mut nexts = Vec::new();
    for _ in 0..10_000 {
        let got = store
            .get_messages(topic, 0, offset, 32, 1 << 20, None)
            .await
            .expect("get");
        if got.status == GetMessageStatus::OffsetOverflowOne {
            return (records, nexts);
        }
        assert!(
            matches!(
                got.status,
                GetMessageStatus::Found | GetMessageStatus::OffsetFoundNull
            ),
            "{got:?} at {offset}"
        );
        assert!(got.next_begin_offset > offset, "no progress at {offset}");
        nexts.push(got.next_begin_offset);
        records.extend(got.records);
        offset = got.next_begin_offset;
    }
    panic!("read did not end");
}

fn key_of(rec: &[u8]) -> String {
    let v = decode_view(rec, true).expect("valid record");
    properties::get(v.properties, KEYS)
        .expect("keys")
        .to_owned()
}

/// The records read must be exactly the newest of each key in `written`, in offset order, byte for
/// byte as first stored (`originals`, by queue offset).
fn check_newest(
    records: &[Bytes],
    written: &[(usize, usize, PutOk)],
    originals: &BTreeMap<i64, Bytes>,
) {
    let mut newest: BTreeMap<usize, &PutOk> = BTreeMap::new();
    for (_, k, ok) in written {
        newest.insert(*k, ok);
    }
    let mut want: Vec<i64> = newest.values().map(|ok| ok.queue_offset).collect();
    want.sort_unstable();
    let got: Vec<i64> = records
        .iter()
        .map(|r| decode_view(r, true).expect("valid").queue_offset)
        .collect();
    assert_eq!(got.len(), want.len(), "one record per key");
    assert_eq!(got, want, "the newest of each key, in offset order");
    for r in records {
        let v = decode_view(r, true).expect("valid");
        assert_eq!(
            originals.get(&v.queue_offset).expect("original"),
            r,
            "bytes as stored"
        );
        let ok = newest
            .values()
            .find(|ok| ok.queue_offset == v.queue_offset)
            .expect("newest");
        assert_eq!(v.physical_offset, ok.physical_offset);
    }
}

/// Reads of a queue compacted up to `up_to`: below it one record per key, none of them older than
/// that key's newest below `up_to`; from it on every record; every key's newest among them.
fn check_partial(records: &[Bytes], written: &[(usize, usize, PutOk)], up_to: i64) {
    let mut newest_below: BTreeMap<usize, i64> = BTreeMap::new();
    for (_, k, ok) in written.iter().filter(|(_, _, ok)| ok.queue_offset < up_to) {
        newest_below.insert(*k, ok.queue_offset);
    }
    let mut want: Vec<i64> = newest_below.values().copied().collect();
    want.extend(
        written
            .iter()
            .map(|(_, _, ok)| ok.queue_offset)
            .filter(|o| *o >= up_to),
    );
    want.sort_unstable();
    let got: Vec<i64> = records
        .iter()
        .map(|r| decode_view(r, true).expect("valid").queue_offset)
        .collect();
    assert_eq!(got, want, "compacted up to {up_to}");
}

async fn originals(
    store: &MessageStore,
    written: &[(usize, usize, PutOk)],
) -> BTreeMap<i64, Bytes> {
    let mut out = BTreeMap::new();
    for (_, _, ok) in written {
        let rec = store
            .read_record(ok.physical_offset)
            .await
            .expect("read")
            .expect("stored");
        out.insert(ok.queue_offset, rec);
    }
    out
}

#[test]
fn newest_record_per_key_from_offset_zero_and_across_the_boundary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(compacted("C"));
        let mut written = write_versions(&store, "C", 0..VERSIONS, 0..KEYS_N).await;
        let mut orig = originals(&store, &written).await;
        let report = store.compact_now().await.expect("compact");
        assert_eq!(report.queues, 1);
        assert_eq!(report.records_kept, KEYS_N as u64);
        assert_eq!(report.records_scanned, (KEYS_N * VERSIONS) as u64);
        let up_to = store.compacted_up_to("C", 0).expect("compacted");
        assert_eq!(up_to, (KEYS_N * VERSIONS) as i64);
        // The ConsumeQueue still starts at 0 (retention removed nothing).
        assert_eq!(store.min_offset("C", 0), 0);

        let (records, nexts) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        assert_eq!(nexts.last(), Some(&up_to));
        // An offset with no record of its own answers the next kept one.
        let got = store
            .get_messages("C", 0, 5, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::Found);
        assert_eq!(
            decode_view(&got.records[0], true).unwrap().queue_offset,
            ((VERSIONS - 1) * KEYS_N) as i64
        );
        assert_eq!(got.next_begin_offset, ((VERSIONS - 1) * KEYS_N) as i64 + 1);

        // New versions of some keys: reads go from the compacted log on into the ConsumeQueue.
        let more = write_versions(&store, "C", VERSIONS..VERSIONS + 1, 0..100).await;
        orig.extend(originals(&store, &more).await);
        let (records, _) = read_all(&store, "C", 0).await;
        let offsets: Vec<i64> = records
            .iter()
            .map(|r| decode_view(r, true).unwrap().queue_offset)
            .collect();
        assert_eq!(records.len(), KEYS_N + 100);
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "in offset order");
        assert_eq!(
            offsets[KEYS_N], up_to,
            "the ConsumeQueue goes on at the boundary"
        );
        // A tag filter applies to compacted records too.
        let none = store
            .get_messages("C", 0, 0, 32, 1 << 20, Some(&|_| false))
            .await
            .expect("get");
        assert_eq!(none.status, GetMessageStatus::NoMatchedMessage);
        assert!(none.next_begin_offset > 0);

        // The next pass folds them in; a restart keeps it all.
        written.extend(more);
        store.compact_now().await.expect("compact");
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        let keys: BTreeSet<String> = records.iter().map(|r| key_of(r)).collect();
        assert_eq!(keys.len(), KEYS_N);
        store.shutdown().await;

        let store = MessageStore::open(config(&path)).await.expect("reopen");
        store.set_topic_policies(compacted("C"));
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        store.shutdown().await;
    });
}

#[test]
fn the_key_map_budget_splits_a_pass_and_later_passes_finish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = config(&path);
        // About 100 keys per pass.
        cfg.max_offset_map_size = 100 * (7 + 64);
        let store = MessageStore::open(cfg).await.expect("open");
        store.set_topic_policies(compacted("C"));
        let written = write_versions(&store, "C", 0..3, 0..500).await;
        let orig = originals(&store, &written).await;
        let first = store.compact_now().await.expect("compact");
        assert!(first.limited, "{first:?}");
        let up_to = store.compacted_up_to("C", 0).expect("progress");
        assert!(up_to > 0 && up_to < 1500, "{up_to}");
        // Reads are right at every step.
        let mut passes = 1;
        loop {
            let (records, _) = read_all(&store, "C", 0).await;
            check_partial(&records, &written, store.compacted_up_to("C", 0).unwrap());
            if store.compacted_up_to("C", 0) == Some(1500) {
                break;
            }
            store.compact_now().await.expect("compact");
            passes += 1;
            assert!(passes < 100, "no progress");
        }
        assert!(passes >= 5, "{passes} passes");
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        store.shutdown().await;
    });
}

#[test]
fn tombstones_and_keyless_records_are_not_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(compacted("C"));
        for (body, keys) in [
            (&b"a1"[..], "a"),
            (b"b1", "b"),
            (b"n", ""),
            (b"", "a"),
            (b"ab", "a b"),
        ] {
            store
                .put(message("C", 0, body, "", keys, ""))
                .await
                .expect("put");
        }
        store.compact_now().await.expect("compact");
        let (records, _) = read_all(&store, "C", 0).await;
        let keys: Vec<String> = records.iter().map(|r| key_of(r)).collect();
        // "a" ends with an empty body; "a b" is one key of its own (the whole KEYS, as Apache).
        assert_eq!(keys, vec!["b".to_owned(), "a b".to_owned()]);
        store.shutdown().await;
    });
}

fn age_file(path: &std::path::Path, hours: u64) {
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(SystemTime::now() - Duration::from_secs(hours * 3600))
        .expect("set mtime");
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// Puts versions of keys to `C` interleaved with plain messages of `P` and `L`, then ages every
/// CommitLog segment to 100 h.
async fn mixed_and_aged(
    store: &MessageStore,
    path: &std::path::Path,
) -> Vec<(usize, usize, PutOk)> {
    let mut written = Vec::new();
    for v in 0..4 {
        written.extend(write_versions(store, "C", v..v + 1, 0..200).await);
        for i in 0..50 {
            for t in ["P", "L"] {
                store
                    .put(message(t, 0, &value(v, i), "", "", ""))
                    .await
                    .expect("put");
            }
        }
    }
    store.flush_maintenance().await.expect("flush");
    for s in store.commitlog_segments() {
        age_file(
            &path
                .join(COMMITLOG_DIR)
                .join(format!("{:020}", local_of(s))),
            100,
        );
    }
    written
}

#[test]
fn retention_keeps_uncompacted_and_reserved_records_and_drops_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(TopicPolicies {
            compacted: BTreeSet::from(["C".to_owned()]),
            reserve_hours: BTreeMap::from([("L".to_owned(), 200)]),
        });
        let written = mixed_and_aged(&store, &path).await;
        let orig = originals(&store, &written).await;
        let segments = store.commitlog_segments();
        assert!(segments.len() >= 6, "{}", segments.len());

        // Nothing compacted yet, L within its 200 h: every segment stays.
        let report = store
            .run_retention(now_ms(), true)
            .await
            .expect("retention");
        assert!(report.commitlog_segments.is_empty(), "{report:?}");

        // Compacted: only L (stored now, reserve.time 200 h) holds them back.
        store.compact_now().await.expect("compact");
        let report = store
            .run_retention(now_ms(), true)
            .await
            .expect("retention");
        assert!(report.commitlog_segments.is_empty(), "{report:?}");

        // Without L's reserve.time, every full expired segment goes; C reads from its compacted log.
        store.set_topic_policies(compacted("C"));
        let report = store
            .run_retention(now_ms(), true)
            .await
            .expect("retention");
        assert!(report.commitlog_segments.len() >= 3, "{report:?}");
        assert!(store.min_offset("P", 0) > 0, "P lost its old messages");
        // With the ConsumeQueue's head gone, the min offset is the compacted log's first record.
        let first_kept = orig.keys().copied().filter(|o| *o >= 600).min().unwrap();
        assert_eq!(store.min_offset("C", 0), first_kept);
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        let got = store
            .get_messages("P", 0, 0, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::OffsetTooSmall);
        store.shutdown().await;

        // After a restart the compacted records are still there.
        let store = MessageStore::open(config(&path)).await.expect("reopen");
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        store.shutdown().await;
    });
}

#[test]
fn without_enable_compaction_a_compacted_topic_ages_like_any_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let mut cfg = config(&path);
        cfg.enable_compaction = false;
        let store = MessageStore::open(cfg).await.expect("open");
        store.set_topic_policies(compacted("C"));
        mixed_and_aged(&store, &path).await;
        let report = store.compact_now().await.expect("compact");
        assert_eq!(report.queues, 0, "no compaction when disabled");
        let report = store
            .run_retention(now_ms(), true)
            .await
            .expect("retention");
        assert!(report.commitlog_segments.len() >= 3, "{report:?}");
        assert!(store.min_offset("C", 0) > 0);
        store.shutdown().await;
    });
}

#[test]
fn forced_deletion_on_a_full_disk_still_takes_held_segments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(compacted("C"));
        mixed_and_aged(&store, &path).await;
        store.shutdown().await;
        let mut cfg = config(&path);
        cfg.disk_space_clean_forcibly_ratio = 0;
        let store = MessageStore::open(cfg).await.expect("reopen");
        store.set_topic_policies(compacted("C"));
        let before = store.commitlog_segments();
        let report = store
            .run_retention(now_ms(), false)
            .await
            .expect("retention");
        assert_eq!(
            report.commitlog_segments.len(),
            1,
            "one per pass, held or not"
        );
        assert_eq!(store.commitlog_segments().first(), before.get(1));
        store.shutdown().await;
    });
}

#[test]
fn a_short_reserve_time_stops_serving_older_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(TopicPolicies {
            reserve_hours: BTreeMap::from([("S".to_owned(), 1)]),
            ..TopicPolicies::default()
        });
        for i in 0..20 {
            for t in ["S", "P"] {
                store
                    .put(message(t, 0, &value(0, i), "", "", ""))
                    .await
                    .expect("put");
            }
        }
        // Now: within the hour, nothing changes.
        store
            .run_retention(now_ms(), false)
            .await
            .expect("retention");
        assert_eq!(store.min_offset("S", 0), 0);
        // Two hours on: S's messages are past their reserve.time, P's are within fileReservedTime.
        store
            .run_retention(now_ms() + 2 * 3_600_000, false)
            .await
            .expect("retention");
        assert_eq!(store.min_offset("S", 0), 20);
        assert_eq!(store.min_offset("P", 0), 0);
        let got = store
            .get_messages("S", 0, 0, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::OffsetTooSmall);
        store.shutdown().await;
    });
}

/// A pass failing at each of its steps (torn temp file, failed sync, no rename, rename without the
/// directory sync) leaves a store whose reads are right, before and after a restart, and the next
/// pass succeeds.
#[cfg(feature = "failpoints")]
#[test]
fn a_pass_interrupted_at_any_step_loses_no_newest_record() {
    for step in ["write", "sync", "rename", "dirsync"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_owned();
        run(move || async move {
            let mut cfg = config(&path);
            // A shard id of its own: fail points are process-wide.
            cfg.shard_id = 9;
            let store = MessageStore::open(cfg.clone()).await.expect("open");
            store.set_topic_policies(compacted("C"));
            let mut written = write_versions(&store, "C", 0..3, 0..300).await;
            store.compact_now().await.expect("first pass");
            written.extend(write_versions(&store, "C", 3..5, 0..150).await);
            let orig = originals(&store, &written).await;
            let point = format!("compaction_{step}@9");
            fail::cfg(&point, "return").expect("fail point");
            let res = store.compact_now().await;
            fail::remove(&point);
            assert!(res.is_err(), "{step}: the pass must fail");
            let (records, _) = read_all(&store, "C", 0).await;
            check_partial(&records, &written, store.compacted_up_to("C", 0).unwrap());
            store.shutdown().await;

            let store = MessageStore::open(cfg).await.expect("reopen");
            store.set_topic_policies(compacted("C"));
            assert!(!path.join("compaction/C/0/compacted.tmp").exists());
            let up_to = store.compacted_up_to("C", 0).unwrap();
            // Only a pass that renamed its file may have moved the progress.
            assert_eq!(up_to, if step == "dirsync" { 1200 } else { 900 }, "{step}");
            let (records, _) = read_all(&store, "C", 0).await;
            check_partial(&records, &written, up_to);
            store.compact_now().await.expect("next pass");
            assert_eq!(store.compacted_up_to("C", 0), Some(1200));
            let (records, _) = read_all(&store, "C", 0).await;
            check_newest(&records, &written, &orig);
            store.shutdown().await;
        });
    }
}

#[test]
fn a_cut_tail_rewinds_the_compacted_log_and_older_versions_come_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path)).await.expect("open");
        store.set_topic_policies(compacted("C"));
        // Versions 0..2 of 100 keys stay; version 2 is the tail a returning old master cuts.
        let written = write_versions(&store, "C", 0..2, 0..100).await;
        let cut_off = write_versions(&store, "C", 2..3, 0..100).await;
        let orig = originals(&store, &written).await;
        store.compact_now().await.expect("compact");
        assert_eq!(store.compacted_up_to("C", 0), Some(300));
        let (records, _) = read_all(&store, "C", 0).await;
        assert_eq!(records.len(), 100, "one record per key before the cut");

        store
            .truncate_tail(cut_off[0].2.physical_offset)
            .await
            .expect("truncate");
        // Version 1 is every key's newest again, served from the ConsumeQueue.
        assert!(store.compacted_up_to("C", 0).expect("still a log") <= 200);
        let (records, _) = read_all(&store, "C", 0).await;
        let newest: BTreeMap<String, u64> = records
            .iter()
            .map(|r| (key_of(r), decode_view(r, true).unwrap().queue_offset as u64))
            .collect();
        assert_eq!(newest.len(), 100);
        assert!(
            newest.values().all(|o| (100..200).contains(o)),
            "a key's newest record is not version 1: {newest:?}"
        );
        // The next pass compacts them again; a restart keeps the rewound state.
        store.compact_now().await.expect("compact");
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        store.shutdown().await;
        let store = MessageStore::open(config(&path)).await.expect("reopen");
        store.set_topic_policies(compacted("C"));
        let (records, _) = read_all(&store, "C", 0).await;
        check_newest(&records, &written, &orig);
        store.shutdown().await;
    });
}

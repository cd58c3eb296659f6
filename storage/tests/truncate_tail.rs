//! `MessageStore::truncate_tail` on real O_DIRECT files: a cut mid-log and across segment boundaries,
//! reads after it, appends that reuse the cut offsets, a clean restart, and a restart after a SIGKILL
//! of a child process right after the cut (the tail must not come back).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{FlushDiskType, GetMessageStatus, MessageStore, PutOk, StoreConfig};

const TOPIC: &str = "Cut";
const CHILD_ENV: &str = "STORAGE_TRUNCATE_CHILD";

fn config(dir: &Path) -> StoreConfig {
    small_config(dir, FlushDiskType::SyncFlush)
}

/// Message `seed`: queue `seed % 2`, key `k{seed}`, a body derived from the seed.
fn msg(seed: u64) -> protocol::message::record::MessageRecord {
    message(
        TOPIC,
        (seed % 2) as i32,
        &body(seed, 900 + (seed as usize * 37) % 700),
        "T",
        &format!("k{seed}"),
        "",
    )
}

async fn put_range(store: &MessageStore, seeds: std::ops::Range<u64>) -> Vec<(u64, PutOk)> {
    let mut out = Vec::new();
    for s in seeds {
        out.push((s, store.put(msg(s)).await.expect("put")));
    }
    out
}

/// Every record of both queues, in queue order: (queue id, queue offset, seed from the key).
async fn contents(store: &MessageStore) -> Vec<(i32, i64, u64)> {
    let mut out = Vec::new();
    for q in 0..2 {
        let mut off = store.min_offset(TOPIC, q);
        loop {
            let r = store
                .get_messages(TOPIC, q, off, 32, 1 << 20, None)
                .await
                .expect("get");
            if r.status != GetMessageStatus::Found {
                break;
            }
            for rec in &r.records {
                let v = decode_view(rec, true).expect("record");
                let key = protocol::message::properties::keys(v.properties)
                    .next()
                    .expect("key")
                    .to_owned();
                let seed: u64 = key.trim_start_matches('k').parse().expect("seed");
                assert_eq!(v.body, body(seed, v.body.len()).as_slice(), "body of {key}");
                out.push((q, v.queue_offset, seed));
            }
            off = r.next_begin_offset;
        }
    }
    out
}

/// What `contents` must return for these puts.
fn expected(puts: &[(u64, PutOk)]) -> Vec<(i32, i64, u64)> {
    let mut out: Vec<(i32, i64, u64)> = puts
        .iter()
        .map(|(s, ok)| ((s % 2) as i32, ok.queue_offset, *s))
        .collect();
    out.sort();
    out
}

async fn check_store(store: &MessageStore, kept: &[(u64, PutOk)], dropped: &[(u64, PutOk)]) {
    assert_eq!(contents(store).await, expected(kept));
    for (s, ok) in dropped {
        let hits = store
            .query_by_key(TOPIC, &format!("k{s}"), 8, 0, i64::MAX)
            .await
            .expect("query");
        assert!(hits.is_empty(), "dropped key k{s} still found");
        // Its offset holds a kept record now, or nothing.
        if let Some(rec) = store.read_record(ok.physical_offset).await.expect("read") {
            let v = decode_view(&rec, true).expect("record");
            let key = protocol::message::properties::keys(v.properties)
                .next()
                .unwrap_or("");
            assert!(
                kept.iter().any(|(k, _)| format!("k{k}") == key),
                "offset {} holds dropped {key}",
                ok.physical_offset
            );
        }
    }
    for (s, _) in kept {
        let hits = store
            .query_by_key(TOPIC, &format!("k{s}"), 8, 0, i64::MAX)
            .await
            .expect("query");
        assert_eq!(hits.len(), 1, "kept key k{s}");
    }
}

fn cut_and_reuse(first: u64, cut_at: usize, segments_before: usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&root)).await.unwrap();
        let mut puts = put_range(&store, 0..first).await;
        assert!(
            store.commitlog_segments().len() >= segments_before,
            "test spans the segments it means to"
        );
        let dropped = puts.split_off(cut_at);
        let cut = dropped[0].1.physical_offset;
        let before = store.max_physical_offset();
        store.truncate_tail(cut).await.expect("truncate");
        assert_eq!(store.max_physical_offset(), cut);
        assert_eq!(store.flushed_physical_offset(), cut);
        assert!(store.max_physical_offset() < before);
        let last_seg = *store.commitlog_segments().last().unwrap();
        assert!(
            last_seg <= cut,
            "segments past the cut removed: {:?}",
            store.commitlog_segments()
        );
        for q in 0..2 {
            let kept = puts.iter().filter(|(s, _)| s % 2 == q as u64).count() as i64;
            assert_eq!(store.max_offset(TOPIC, q), kept, "queue {q} max offset");
        }
        // Every dropped message is counted (and logged per queue).
        assert_eq!(store.stats().tail_cut_messages, dropped.len() as u64);
        check_store(&store, &puts, &dropped).await;

        // New data lands on the cut offsets.
        let again = put_range(&store, 1000..1000 + first - cut_at as u64).await;
        assert_eq!(again[0].1.physical_offset, cut);
        puts.extend(again);
        check_store(&store, &puts, &dropped).await;
        store.shutdown().await;

        let store = MessageStore::open(config(&root)).await.unwrap();
        check_store(&store, &puts, &dropped).await;
        store.shutdown().await;
    });
}

#[test]
fn truncate_mid_segment_then_append_and_restart() {
    // ~50 KiB of records, one 64 KiB segment; cut in the middle.
    cut_and_reuse(40, 23, 1);
}

#[test]
fn truncate_across_segment_boundaries() {
    // ~3 segments; the cut is in the first, so two later segments go.
    cut_and_reuse(150, 30, 3);
}

#[test]
fn truncate_at_a_segment_start() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        let mut puts = put_range(&store, 0..120).await;
        let segs = store.commitlog_segments();
        assert!(segs.len() >= 2);
        let at = puts
            .iter()
            .position(|(_, ok)| ok.physical_offset == segs[1])
            .expect("a record starts the second segment");
        let dropped = puts.split_off(at);
        store.truncate_tail(segs[1]).await.expect("truncate");
        assert_eq!(store.max_physical_offset(), segs[1]);
        check_store(&store, &puts, &dropped).await;
        puts.extend(put_range(&store, 500..510).await);
        store.shutdown().await;
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        check_store(&store, &puts, &dropped).await;
        store.shutdown().await;
    });
}

#[test]
fn refuses_a_cut_inside_a_record_or_outside_the_log() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        let puts = put_range(&store, 0..10).await;
        let end = store.max_physical_offset();
        let inside = puts[4].1.physical_offset + 7;
        let err = store
            .truncate_tail(inside)
            .await
            .expect_err("cut inside a record");
        assert!(err.to_string().contains("no record starts there"), "{err}");
        assert!(store.truncate_tail(end + 100).await.is_err());
        assert!(store.truncate_tail(storage::physical(1, 0)).await.is_err());
        assert_eq!(store.max_physical_offset(), end);
        // Still serving.
        let more = put_range(&store, 10..12).await;
        assert_eq!(more[0].1.physical_offset, end);
        let mut all = puts;
        all.extend(more);
        check_store(&store, &all, &[]).await;
        store.shutdown().await;
    });
}

#[test]
fn epochs_past_the_cut_are_dropped() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        assert!(store.epochs().is_empty());
        assert!(store.begin_epoch(1).unwrap());
        let puts = put_range(&store, 0..10).await;
        assert!(store.begin_epoch(2).unwrap());
        let later = put_range(&store, 10..20).await;
        let e2 = store.last_epoch().unwrap();
        assert_eq!((e2.epoch, e2.start_offset), (2, later[0].1.physical_offset));
        store
            .truncate_tail(later[0].1.physical_offset)
            .await
            .unwrap();
        let epochs: Vec<u32> = store.epochs().iter().map(|e| e.epoch).collect();
        assert_eq!(epochs, vec![1]);
        store.shutdown().await;
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        assert_eq!(store.epochs().len(), 1);
        check_store(&store, &puts, &later).await;
        store.shutdown().await;
    });
}

/// The child: writes 0..n, cuts at record `cut_at`, optionally appends `again` records, prints the
/// offsets, then waits to be killed.
#[test]
fn child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let again: u64 = std::env::var("STORAGE_TRUNCATE_AGAIN")
        .unwrap()
        .parse()
        .unwrap();
    run(move || async move {
        let store = MessageStore::open(config(Path::new(&dir))).await.unwrap();
        let puts = put_range(&store, 0..150).await;
        let cut = puts[30].1.physical_offset;
        store.truncate_tail(cut).await.unwrap();
        for (s, ok) in put_range(&store, 1000..1000 + again).await {
            println!(
                "AGAIN {s} {} {} {}",
                ok.physical_offset, ok.queue_offset, ok.size
            );
        }
        println!("CUT {cut}");
        glommio::timer::sleep(Duration::from_secs(60)).await;
    });
}

fn kill_after_cut(again: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env("STORAGE_TRUNCATE_AGAIN", again.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut cut = None;
    let mut appended = Vec::new();
    for line in out.lines().map_while(Result::ok) {
        // libtest may print its "test child_entry ... " before the first line.
        if let Some((_, c)) = line.split_once("CUT ") {
            cut = Some(c.parse::<i64>().unwrap());
            break;
        }
        if let Some((_, a)) = line.split_once("AGAIN ") {
            let v: Vec<i64> = a.split(' ').map(|x| x.parse().unwrap()).collect();
            appended.push(v);
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let cut = cut.expect("child reported its cut");
    assert!(
        dir.path().join(storage::ABORT_FILE).exists(),
        "unclean stop"
    );
    let root: PathBuf = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&root)).await.unwrap();
        let end = appended.last().map_or(cut, |a| a[1] + a[3]);
        assert_eq!(store.max_physical_offset(), end, "recovered log end");
        let got = contents(&store).await;
        let seeds: Vec<u64> = got.iter().map(|(_, _, s)| *s).collect();
        let mut want: Vec<u64> = (0..30).collect();
        want.extend(appended.iter().map(|a| a[0] as u64));
        let mut sorted = seeds.clone();
        sorted.sort();
        want.sort();
        assert_eq!(sorted, want, "records after recovery");
        for a in &appended {
            assert!(got.contains(&(((a[0] as u64) % 2) as i32, a[2], a[0] as u64)));
        }
        for s in 30..150u64 {
            let hits = store
                .query_by_key(TOPIC, &format!("k{s}"), 8, 0, i64::MAX)
                .await
                .unwrap();
            assert!(hits.is_empty(), "cut key k{s} came back");
        }
        store.shutdown().await;
    });
}

#[test]
fn sigkill_right_after_the_cut_does_not_resurrect_the_tail() {
    kill_after_cut(0);
}

#[test]
fn sigkill_after_the_cut_and_new_appends_keeps_only_the_new_data() {
    kill_after_cut(12);
}

#[test]
fn pulls_and_puts_during_a_cut_neither_panic_nor_land_in_the_cut() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path())).await.unwrap();
        let mut puts = put_range(&store, 0..150).await;
        let dropped = puts.split_off(40);
        let cut = dropped[0].1.physical_offset;
        let stop = std::rc::Rc::new(std::cell::Cell::new(false));
        // Readers pull both queues from the start over and over while the cut runs.
        let mut readers = Vec::new();
        for q in 0..2 {
            let (store, stop) = (store.clone(), stop.clone());
            readers.push(glommio::spawn_local(async move {
                let mut pulls = 0u64;
                while !stop.get() {
                    let mut off = 0;
                    loop {
                        let r = store
                            .get_messages(TOPIC, q, off, 8, 1 << 20, None)
                            .await
                            .expect("pull during the cut");
                        pulls += 1;
                        if r.records.is_empty() {
                            break;
                        }
                        off = r.next_begin_offset;
                    }
                    glommio::yield_if_needed().await;
                }
                pulls
            }));
        }
        glommio::timer::sleep(Duration::from_millis(5)).await;
        let cutting = {
            let store = store.clone();
            glommio::spawn_local(async move { store.truncate_tail(cut).await })
        };
        // Let the cut start (it runs until its first wait), then try to put: refused.
        glommio::timer::sleep(Duration::from_micros(1)).await;
        let during = store.put(msg(777)).await;
        cutting.await.expect("truncate");
        stop.set(true);
        for r in readers {
            assert!(r.await > 0);
        }
        let err = during.expect_err("a put during the cut was taken");
        assert!(err.to_string().contains("truncated"), "{err}");
        assert_eq!(store.max_physical_offset(), cut);
        check_store(&store, &puts, &dropped).await;
        store.shutdown().await;
    });
}

/// A cut whose caller goes away half-way (an HA session ended by a role change while the cut waited
/// for the flush) still completes: afterwards the CommitLog ends at the cut and the ConsumeQueues hold
/// exactly the kept records. The caller is dropped after the cut's first poll, then after growing
/// delays, so it goes away at different steps of the cut.
#[test]
fn a_cut_whose_caller_goes_away_still_completes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&root)).await.unwrap();
        let mut kept: Vec<(u64, PutOk)> = Vec::new();
        let mut next = 0u64;
        for delay_us in [0u64, 50, 200, 1_000, 5_000] {
            kept.extend(put_range(&store, next..next + 30).await);
            let dropped = put_range(&store, next + 30..next + 40).await;
            next += 40;
            let cut = dropped[0].1.physical_offset;
            {
                let mut cutting = std::pin::pin!(store.truncate_tail(cut));
                if delay_us == 0 {
                    let first = futures_lite::future::poll_once(&mut cutting).await;
                    assert!(first.is_none(), "the cut finished in one poll");
                } else {
                    let gone = async {
                        glommio::timer::sleep(Duration::from_micros(delay_us)).await;
                        Ok(())
                    };
                    let _ = futures_lite::future::or(cutting, gone).await;
                }
            }
            let start = std::time::Instant::now();
            while store.max_physical_offset() != cut && start.elapsed() < Duration::from_secs(5) {
                glommio::timer::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(
                store.max_physical_offset(),
                cut,
                "caller dropped after {delay_us} us: the cut did not complete"
            );
            // Once the cut's task is done a new one is accepted (one runs at a time); at the log's
            // end it only drops epochs.
            while let Err(e) = store.truncate_tail(cut).await {
                assert!(e.to_string().contains("already runs"), "{e}");
                assert!(start.elapsed() < Duration::from_secs(10), "{e}");
                glommio::timer::sleep(Duration::from_millis(5)).await;
            }
            check_store(&store, &kept, &dropped).await;
        }
        store.shutdown().await;
    });
}

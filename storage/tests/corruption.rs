//! Recovery from damaged CommitLog data after an unclean stop: a torn/garbage tail is cut, a flipped
//! byte in the middle of a segment stops recovery at that record; nothing panics and the store keeps
//! working from the cut.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{local_of, FlushDiskType, GetMessageStatus, MessageStore, PutOk, COMMITLOG_DIR};

/// Appends `n` records to one queue and stops without shutdown (abort marker stays).
fn fill_and_abandon(dir: PathBuf, n: u64) -> Vec<PutOk> {
    run(move || async move {
        let store = MessageStore::open(small_config(&dir, FlushDiskType::SyncFlush))
            .await
            .expect("open");
        let mut oks = Vec::new();
        for i in 0..n {
            oks.push(
                store
                    .put(message("T", 0, &body(i, 900), "", &format!("k{i}"), ""))
                    .await
                    .expect("put"),
            );
        }
        oks
    })
}

fn segment_path(dir: &Path, local: u64, seg: u64) -> PathBuf {
    dir.join(COMMITLOG_DIR)
        .join(format!("{:020}", local - local % seg))
}

fn patch_file(path: &Path, pos: u64, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open segment");
    f.seek(SeekFrom::Start(pos)).expect("seek");
    f.write_all(bytes).expect("write");
    f.sync_all().expect("sync");
}

fn read_file(path: &Path, pos: u64, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(path).expect("open");
    f.seek(SeekFrom::Start(pos)).expect("seek");
    let mut out = vec![0u8; len];
    f.read_exact(&mut out).expect("read");
    out
}

/// Reopens and checks the queue holds exactly `keep` of `oks`, byte-valid; then appends one more and
/// checks it lands right after them.
fn check_recovered(dir: PathBuf, oks: Vec<PutOk>, keep: usize) {
    let dir2 = dir.clone();
    run(move || async move {
        let store = MessageStore::open(small_config(&dir, FlushDiskType::SyncFlush))
            .await
            .expect("reopen");
        assert_eq!(store.max_offset("T", 0), keep as i64);
        assert_eq!(store.min_offset("T", 0), 0, "min offset after recovery");
        for (i, ok) in oks.iter().take(keep).enumerate() {
            let got = store
                .get_messages("T", 0, i as i64, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(got.status, GetMessageStatus::Found);
            let view = decode_view(&got.records[0], true).expect("valid");
            assert_eq!(view.body, &body(i as u64, 900)[..]);
            assert_eq!(view.physical_offset, ok.physical_offset);
        }
        let end = oks
            .get(keep)
            .map_or_else(|| store.max_physical_offset(), |ok| ok.physical_offset);
        assert_eq!(store.max_physical_offset(), end, "log ends at the cut");
        // Keys of cut records are not returned.
        if keep < oks.len() {
            assert!(store
                .query_by_key("T", &format!("k{keep}"), 4, 0, i64::MAX)
                .await
                .expect("query")
                .is_empty());
        }
        let ok = store
            .put(message("T", 0, b"after the cut", "", "", ""))
            .await
            .expect("put after cut");
        assert_eq!(ok.queue_offset, keep as i64);
        store.shutdown().await;
    });
    // And once more after a clean stop, the appended record is there.
    run(move || async move {
        let store = MessageStore::open(small_config(&dir2, FlushDiskType::SyncFlush))
            .await
            .expect("reopen 2");
        assert_eq!(store.max_offset("T", 0), keep as i64 + 1);
        let got = store
            .get_messages("T", 0, keep as i64, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(
            decode_view(&got.records[0], true).expect("valid").body,
            b"after the cut"
        );
        store.shutdown().await;
    });
}

#[test]
fn garbage_tail_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oks = fill_and_abandon(dir.path().to_owned(), 30);
    let seg = small_config(dir.path(), FlushDiskType::SyncFlush).mapped_file_size_commit_log;
    let last = oks.last().expect("some");
    let end = local_of(last.physical_offset) + last.size as u64;
    let path = segment_path(dir.path(), end, seg);
    // Random garbage right after the last record.
    patch_file(&path, end % seg, &body(999, 3000));
    check_recovered(dir.path().to_owned(), oks, 30);
}

#[test]
fn torn_last_record_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oks = fill_and_abandon(dir.path().to_owned(), 30);
    let seg = small_config(dir.path(), FlushDiskType::SyncFlush).mapped_file_size_commit_log;
    // Tear the last record: keep its first 100 bytes, zero the rest.
    let last = oks.last().expect("some");
    let start = local_of(last.physical_offset);
    let path = segment_path(dir.path(), start, seg);
    patch_file(
        &path,
        start % seg + 100,
        &vec![0u8; last.size as usize - 100],
    );
    check_recovered(dir.path().to_owned(), oks, 29);
}

#[test]
fn flipped_byte_in_the_middle_stops_recovery_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oks = fill_and_abandon(dir.path().to_owned(), 120);
    let seg = small_config(dir.path(), FlushDiskType::SyncFlush).mapped_file_size_commit_log;
    // A record in the middle of the last segment, with records after it in the same segment.
    let last_seg = local_of(oks.last().expect("some").physical_offset) / seg;
    let in_last: Vec<usize> = (0..oks.len())
        .filter(|i| local_of(oks[*i].physical_offset) / seg == last_seg)
        .collect();
    assert!(in_last.len() >= 6, "need records after the damaged one");
    let victim = in_last[in_last.len() / 2];
    let start = local_of(oks[victim].physical_offset);
    let path = segment_path(dir.path(), start, seg);
    // Flip one body byte (the body starts 88 bytes in for IPv4 hosts: 84 header + 4 length).
    let pos = start % seg + 88 + 10;
    let mut b = read_file(&path, pos, 1);
    b[0] ^= 0x40;
    patch_file(&path, pos, &b);
    check_recovered(dir.path().to_owned(), oks, victim);
}

#[test]
fn absurd_size_field_is_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oks = fill_and_abandon(dir.path().to_owned(), 10);
    let seg = small_config(dir.path(), FlushDiskType::SyncFlush).mapped_file_size_commit_log;
    let victim = 6;
    let start = local_of(oks[victim].physical_offset);
    patch_file(
        &segment_path(dir.path(), start, seg),
        start % seg,
        &i32::MAX.to_be_bytes(),
    );
    check_recovered(dir.path().to_owned(), oks, victim);
}

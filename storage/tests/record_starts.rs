//! `MessageStore::record_starts_at` and `record_start_at_or_before` (where a slave can cut when the
//! master's divergence point falls inside one of its records) over several 64 KiB segments with their
//! blank ends: every record start is found from any byte of the record, nothing else is a start.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{body, message, run, small_config};
use storage::{physical, FlushDiskType, MessageStore};

#[test]
fn every_byte_of_a_record_leads_back_to_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(small_config(&path, FlushDiskType::AsyncFlush))
            .await
            .unwrap();
        let shard = store.shard_id();
        let mut starts = Vec::new();
        for seed in 0..160u64 {
            let m = message(
                "Starts",
                (seed % 2) as i32,
                &body(seed, 700 + (seed as usize * 53) % 900),
                "T",
                &format!("k{seed}"),
                "",
            );
            let ok = store.put(m).await.unwrap();
            starts.push((ok.physical_offset, ok.size as i64));
        }
        let end = store.max_physical_offset();
        assert!(
            storage::local_of(end) > 2 * 64 * 1024,
            "the records cross segment ends"
        );
        // A new epoch starting at a record start speeds the walk; one at a non-start is skipped.
        let (mid, _) = starts[80];
        store
            .set_epochs(vec![
                storage::EpochEntry {
                    epoch: 1,
                    start_offset: 0,
                },
                storage::EpochEntry {
                    epoch: 2,
                    start_offset: mid,
                },
            ])
            .unwrap();
        for (i, &(start, size)) in starts.iter().enumerate() {
            assert!(store.record_starts_at(start).await.unwrap(), "record {i}");
            for at in [start + 1, start + size / 2, start + size - 1] {
                assert!(
                    !store.record_starts_at(at).await.unwrap(),
                    "inside record {i}"
                );
                assert_eq!(
                    store.record_start_at_or_before(at).await.unwrap(),
                    start,
                    "record {i} from {at}"
                );
            }
            assert_eq!(store.record_start_at_or_before(start).await.unwrap(), start);
        }
        // The log end counts as a start; past it and other shards' offsets do not.
        assert!(store.record_starts_at(end).await.unwrap());
        assert_eq!(store.record_start_at_or_before(end).await.unwrap(), end);
        assert!(!store.record_starts_at(end + 1).await.unwrap());
        assert!(store.record_start_at_or_before(end + 1).await.is_err());
        assert!(!store
            .record_starts_at(physical(shard + 1, 0))
            .await
            .unwrap());
        // Inside a segment's blank end: the blank's start.
        let (last_in_first, size) = starts
            .iter()
            .copied()
            .take_while(|(s, z)| storage::local_of(*s + *z) <= 64 * 1024)
            .last()
            .unwrap();
        let blank = last_in_first + size;
        if storage::local_of(blank) < 64 * 1024 {
            assert!(store.record_starts_at(blank).await.unwrap());
            assert_eq!(
                store
                    .record_start_at_or_before(physical(shard, 64 * 1024 - 1))
                    .await
                    .unwrap(),
                blank
            );
        }
        store.shutdown().await;
    });
}

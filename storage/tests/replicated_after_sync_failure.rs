//! A slave store whose CommitLog fdatasync failed must refuse replicated bytes: its flusher writes
//! nothing more until a restart, which drops whatever is only in memory, so bytes it took (and its HA
//! receiver acknowledged to the master) would be lost. The test replicates a master's log into a
//! slave store, makes the slave's sync fail through the storage crate's fail points, and checks that
//! `append_replicated_unsynced` and `append_replicated` answer ReadOnly without moving the log's end,
//! and that after a restart the store holds everything it took and replicates again from there.
//!
//! Run: `cargo test -p storage --features failpoints --test replicated_after_sync_failure`.
#![cfg(feature = "failpoints")]
// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{body, message, run, small_config};
use storage::{FlushDiskType, MessageStore, StoreConfig, StoreError};

/// A shard of its own: the fail point (global to the process) names it.
const SHARD: u16 = 7;
const POINT: &str = "commitlog_fdatasync@7";
const TOPIC: &str = "ReplAfterSyncFailure";

fn config(dir: &Path, flush: FlushDiskType) -> StoreConfig {
    let mut cfg = small_config(dir, flush);
    cfg.shard_id = SHARD;
    cfg
}

fn msg(i: u64) -> protocol::message::record::MessageRecord {
    message(
        TOPIC,
        (i % 2) as i32,
        &body(i, 300 + (i as usize * 41) % 500),
        "",
        &format!("k{i}"),
        "",
    )
}

/// Turns the fail point off however the test ends.
struct PointOff;

impl Drop for PointOff {
    fn drop(&mut self) {
        storage::fault::clear(POINT);
    }
}

/// The master's whole CommitLog from its first byte.
async fn log_bytes(store: &MessageStore) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = store.min_physical_offset();
    while at < store.max_physical_offset() {
        let b = store.read_commitlog(at, 1 << 20).await.unwrap();
        assert!(!b.is_empty(), "log unreadable at {at}");
        at += b.len() as i64;
        out.extend_from_slice(&b);
    }
    out
}

/// Bytes of `log` (which starts at physical offset `base`) from `from` up to `to` at most.
fn slice(log: &[u8], base: i64, from: i64, to: usize) -> &[u8] {
    let start = usize::try_from(from - base).unwrap();
    log.get(start..to.min(log.len())).unwrap()
}

#[test]
fn a_store_whose_sync_failed_refuses_replicated_bytes() {
    let _off = PointOff;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    run(move || async move {
        // The master's log, durable, read whole; the master is closed before the fail point is set
        // (it shares the shard id, so its syncs would hit the point too).
        let master = MessageStore::open(config(&root.join("master"), FlushDiskType::SyncFlush))
            .await
            .unwrap();
        for i in 0..90 {
            master.put(msg(i)).await.unwrap();
        }
        let base = master.min_physical_offset();
        let master_end = master.max_physical_offset();
        let log = log_bytes(&master).await;
        assert_eq!(log.len() as i64, master_end - base);
        master.shutdown().await;

        let slave_dir = root.join("slave");
        let slave = MessageStore::open(config(&slave_dir, FlushDiskType::AsyncFlush))
            .await
            .unwrap();
        assert_eq!(slave.max_physical_offset(), base);
        // A first part, synced.
        let durable = slave
            .append_replicated_unsynced(base, slice(&log, base, base, 10_000))
            .unwrap();
        slave.wait_durable(durable).await.unwrap();
        assert_eq!(slave.flushed_physical_offset(), durable);

        // A second part, taken in memory; its sync fails.
        storage::fault::set(POINT, "return").unwrap();
        let taken = slave
            .append_replicated_unsynced(durable, slice(&log, base, durable, 20_000))
            .unwrap();
        assert!(taken > durable && taken < master_end);
        slave.request_flush();
        slave.wait_durable(taken).await.expect_err("the sync fails");
        let why = slave
            .unrecovered_failure()
            .expect("a failed sync is recorded");
        assert!(why.contains("fdatasync"), "{why}");
        assert_eq!(slave.flushed_physical_offset(), durable);

        // More replicated bytes: refused, the log's end stays.
        let rest = slice(&log, base, taken, log.len());
        match slave.append_replicated_unsynced(taken, rest) {
            Err(StoreError::ReadOnly(r)) => assert!(r.contains("fdatasync"), "{r}"),
            Ok(end) => panic!(
                "appended up to {end} after a failed sync (durable end {durable}): \
                 acknowledged bytes a restart drops"
            ),
            Err(e) => panic!("refused for another reason: {e}"),
        }
        assert_eq!(slave.max_physical_offset(), taken);
        match slave.append_replicated(taken, rest).await {
            Err(StoreError::ReadOnly(_)) => {}
            other => panic!("append_replicated after a failed sync: {other:?}"),
        }
        assert_eq!(slave.max_physical_offset(), taken);

        // The restart: what the store took is there (its writes reached the file before the sync
        // failed), and replication goes on from there.
        storage::fault::clear(POINT);
        slave.shutdown().await;
        drop(slave);
        let slave = MessageStore::open(config(&slave_dir, FlushDiskType::AsyncFlush))
            .await
            .unwrap();
        assert!(slave.unrecovered_failure().is_none());
        assert_eq!(slave.max_physical_offset(), taken, "recovered end");
        let end = slave.append_replicated_unsynced(taken, rest).unwrap();
        assert_eq!(end, master_end);
        slave.wait_durable(end).await.unwrap();
        assert_eq!(log_bytes(&slave).await, log);
        slave.shutdown().await;
    });
}

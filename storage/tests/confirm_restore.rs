//! The confirm offset survives a restart: a store opened with `confirm_gate_at_open` shows no
//! record past the confirm offset its last checkpoint kept (controller mode: a restarted replica
//! before its role is known), and one opened without it shows everything.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{message, run, small_config};
use storage::{FlushDiskType, MessageStore, PutOk, StoreConfig};

const TOPIC: &str = "ConfirmRestore";

fn config(dir: &Path, gated: bool) -> StoreConfig {
    let mut cfg = small_config(dir, FlushDiskType::SyncFlush);
    cfg.confirm_gate_at_open = gated;
    cfg
}

async fn put(store: &MessageStore, n: usize) -> Vec<PutOk> {
    let mut out = Vec::new();
    for i in 0..n {
        let body = format!("m{i}");
        out.push(
            store
                .put(message(TOPIC, 0, body.as_bytes(), "", "", ""))
                .await
                .unwrap(),
        );
    }
    out
}

fn end(p: &PutOk) -> i64 {
    p.physical_offset + i64::from(p.size)
}

async fn bodies_from(store: &MessageStore, offset: i64) -> usize {
    store
        .get_messages(TOPIC, 0, offset, 32, 1 << 20, None)
        .await
        .unwrap()
        .records
        .len()
}

/// Five records, the first three confirmed, then a stop: the next gated open shows three.
async fn three_of_five_confirmed(dir: &Path) -> Vec<PutOk> {
    let store = MessageStore::open(config(dir, true)).await.unwrap();
    // A fresh store has no confirm offset kept: its gate starts at the log's start.
    assert!(store.confirm_offset().is_some());
    let puts = put(&store, 5).await;
    store.set_confirm_offset(end(&puts[2]));
    assert_eq!(store.readable_max_offset(TOPIC, 0), 3);
    store.flush_maintenance().await.unwrap();
    store.shutdown().await;
    puts
}

#[test]
fn a_gated_open_restores_the_confirm_offset() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let puts = three_of_five_confirmed(dir.path()).await;
        let store = MessageStore::open(config(dir.path(), true)).await.unwrap();
        assert_eq!(store.confirm_offset(), Some(end(&puts[2])));
        assert_eq!(store.max_offset(TOPIC, 0), 5);
        assert_eq!(
            store.readable_max_offset(TOPIC, 0),
            3,
            "the unconfirmed records count"
        );
        assert_eq!(bodies_from(&store, 0).await, 3);
        assert_eq!(
            bodies_from(&store, 3).await,
            0,
            "an unconfirmed record read"
        );
        // Its role moves the gate (a slave's handshake, a master's acks): all of it shows.
        store.set_confirm_offset(store.max_physical_offset());
        assert_eq!(store.readable_max_offset(TOPIC, 0), 5);
        assert_eq!(bodies_from(&store, 3).await, 2);
        store.shutdown().await;
    });
}

#[test]
fn an_open_without_the_gate_shows_everything() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        three_of_five_confirmed(dir.path()).await;
        let store = MessageStore::open(config(dir.path(), false)).await.unwrap();
        assert_eq!(store.confirm_offset(), None);
        assert_eq!(store.readable_max_offset(TOPIC, 0), 5);
        assert_eq!(bodies_from(&store, 0).await, 5);
        store.shutdown().await;
    });
}

/// The restored tail cut back (a slave following the new master): the entries below the cut show
/// once the confirm offset reaches it, not only when a new record arrives in that queue.
#[test]
fn a_cut_after_a_gated_open_shows_what_stays_once_confirmed() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let puts = three_of_five_confirmed(dir.path()).await;
        let store = MessageStore::open(config(dir.path(), true)).await.unwrap();
        store.truncate_tail(end(&puts[3])).await.unwrap();
        assert_eq!(store.max_offset(TOPIC, 0), 4);
        assert_eq!(store.readable_max_offset(TOPIC, 0), 3);
        store.set_confirm_offset(end(&puts[3]));
        assert_eq!(store.readable_max_offset(TOPIC, 0), 4);
        assert_eq!(bodies_from(&store, 3).await, 1);
        store.shutdown().await;
    });
}

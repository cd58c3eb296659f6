//! A `truncate_tail` that fails half-way (an injected EIO while cutting a ConsumeQueue, after the
//! CommitLog was cut) leaves the store refusing every append; after a restart recovery holds the cut
//! log with consistent queues. Needs the `failpoints` feature
//! (`cargo test -p storage --features failpoints --test truncate_failure`); the store runs in a child
//! process (this binary re-executed) so that the fail point and the unfinished store die with it.
#![cfg(feature = "failpoints")]
// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{FlushDiskType, GetMessageStatus, MessageStore, StoreConfig};

const CHILD_ENV: &str = "STORAGE_TRUNCATE_FAILURE_CHILD";
const TOPIC: &str = "CutFail";

fn config(dir: &Path) -> StoreConfig {
    small_config(dir, FlushDiskType::SyncFlush)
}

fn msg(i: u64) -> protocol::message::record::MessageRecord {
    message(
        TOPIC,
        (i % 3) as i32,
        &body(i, 700 + (i as usize * 53) % 900),
        "",
        &format!("k{i}"),
        "",
    )
}

/// Bodies' seeds per queue, in queue order.
async fn seeds(store: &MessageStore) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for q in 0..3 {
        let mut got = Vec::new();
        let mut off = 0;
        loop {
            let r = store
                .get_messages(TOPIC, q, off, 32, 1 << 20, None)
                .await
                .unwrap();
            if r.status != GetMessageStatus::Found {
                break;
            }
            for rec in &r.records {
                let v = decode_view(rec, true).unwrap();
                let key = protocol::message::properties::keys(v.properties)
                    .next()
                    .unwrap();
                got.push(key.trim_start_matches('k').parse::<u64>().unwrap());
            }
            off = r.next_begin_offset;
        }
        out.push(got);
    }
    out
}

/// The child: 120 records, then a cut at record 50 with the fail point armed; prints what it saw.
#[test]
fn child_entry() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    assert_eq!(storage::fault::setup_from_env().unwrap(), 1);
    run(move || async move {
        let store = MessageStore::open(config(Path::new(&dir))).await.unwrap();
        let mut oks = Vec::new();
        for i in 0..120 {
            oks.push(store.put(msg(i)).await.unwrap());
        }
        let cut = oks[50].physical_offset;
        let err = store
            .truncate_tail(cut)
            .await
            .expect_err("the fail point fires");
        println!("TRUNCATE_ERR {err}");
        let put = store
            .put(msg(1000))
            .await
            .expect_err("appends refused after a half-way cut");
        println!("PUT_ERR {put}");
        let replicated = store
            .append_replicated_unsynced(store.max_physical_offset(), &[])
            .expect_err("replicated appends refused too");
        println!("REPL_ERR {replicated}");
        println!("CUT {cut}");
        // Exit without a shutdown: the abort marker stays, as after a crash.
        std::process::exit(0);
    });
}

#[test]
fn a_cut_failing_half_way_refuses_appends_and_recovers_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env("FAILPOINTS", "truncate_queue@3=return")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |tag: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest.to_owned()))
            .unwrap_or_else(|| panic!("no {tag} in {stdout}"))
    };
    assert!(line("TRUNCATE_ERR ").contains("consumequeue"), "{stdout}");
    assert!(line("PUT_ERR ").contains("failed half-way"), "{stdout}");
    assert!(line("REPL_ERR ").contains("failed half-way"), "{stdout}");
    let cut: i64 = line("CUT ").trim().parse().unwrap();
    let root = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&root)).await.unwrap();
        assert_eq!(
            store.max_physical_offset(),
            cut,
            "recovery holds the cut log"
        );
        let want: Vec<Vec<u64>> = (0..3)
            .map(|q| (0..50).filter(|i| i % 3 == q).collect())
            .collect();
        assert_eq!(seeds(&store).await, want, "queues agree with the cut log");
        // Writable again; the next record takes the cut offset.
        let ok = store.put(msg(2000)).await.unwrap();
        assert_eq!(ok.physical_offset, cut);
        store.shutdown().await;
    });
}

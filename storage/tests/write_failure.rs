//! A failed CommitLog write (here: the file-size limit, EFBIG, standing in for a full disk) turns the
//! store read-only with a clear error, and nothing acknowledged before is lost. Runs the store in a
//! child process (this binary re-executed) because the limit applies to the whole process.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{body, message, run, small_config};
use protocol::message::record::decode_view;
use storage::{FlushDiskType, GetMessageStatus, MessageStore, PutError, StoreConfig};

const CHILD_ENV: &str = "STORAGE_WRITE_FAILURE_CHILD";
/// Writes past this position of any file fail with EFBIG; the 1 MiB segment is created before.
const FILE_SIZE_LIMIT: u64 = 200 * 1024;

fn config(dir: &Path) -> StoreConfig {
    let mut cfg = small_config(dir, FlushDiskType::SyncFlush);
    cfg.mapped_file_size_commit_log = 1 << 20;
    cfg
}

fn limit_file_size() {
    // SAFETY: plain libc calls changing this process's signal disposition and limits.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: FILE_SIZE_LIMIT,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
}

fn child(dir: PathBuf) {
    run(move || async move {
        let store = MessageStore::open(config(&dir)).await.expect("open");
        store
            .put(message("W", 0, &body(0, 1000), "", "", ""))
            .await
            .expect("first put creates the segment");
        limit_file_size();
        let mut acked = 1u64;
        let err = loop {
            match store
                .put(message("W", 0, &body(acked, 1000), "", "", ""))
                .await
            {
                Ok(_) => acked += 1,
                Err(e) => break e,
            }
            assert!(acked < 10_000, "the limit never hit");
        };
        // The failing append reports the write error; later ones are refused as read-only.
        assert!(matches!(err, PutError::Io(_)), "first failure: {err:?}");
        let reason = store.read_only_reason().expect("read-only");
        assert!(reason.contains("CommitLog write failed"), "{reason}");
        assert!(matches!(
            store.put(message("W", 0, b"x", "", "", "")).await,
            Err(PutError::ReadOnly(_))
        ));
        // Reads of acknowledged data still work.
        let got = store
            .get_messages("W", 0, 0, 1, 1 << 20, None)
            .await
            .expect("get");
        assert_eq!(got.status, GetMessageStatus::Found);
        println!("ACKED {acked}");
    });
}

fn main() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(PathBuf::from(dir));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(std::env::current_exe().expect("exe"))
        .env(CHILD_ENV, dir.path())
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let acked: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ACKED "))
        .and_then(|n| n.trim().parse().ok())
        .expect("child reported its acks");
    assert!(acked > 50, "acked only {acked}");
    let path = dir.path().to_owned();
    run(move || async move {
        let store = MessageStore::open(config(&path))
            .await
            .expect("reopen without the limit");
        assert!(store.max_offset("W", 0) >= acked as i64);
        for i in 0..acked {
            let got = store
                .get_messages("W", 0, i as i64, 1, 1 << 20, None)
                .await
                .expect("get");
            assert_eq!(got.status, GetMessageStatus::Found, "acked record {i} lost");
            assert_eq!(
                decode_view(&got.records[0], true).expect("valid").body,
                &body(i, 1000)[..]
            );
        }
        store
            .put(message("W", 0, b"writable again", "", "", ""))
            .await
            .expect("put");
        store.shutdown().await;
    });
    println!("write failure test passed: {acked} acknowledged appends survived");
}

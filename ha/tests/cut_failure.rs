//! A returning old master (now a controller-mode slave) whose tail cut fails on its disk: it must not
//! replicate (no frames, the master does not count it, its own history kept) while the cut cannot be
//! made, and must end byte-identical to the master once the fault clears: at the next handshake when
//! the cut failed before changing anything, after a restart when it failed half-way (the store then
//! refuses writes until its recovery). Fail points of the storage crate (`--features failpoints`).

// Test code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cut_support;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use cut_support::*;
use storage::MessageStore;

/// A was master in epoch 1 with slave B, then wrote alone; B became master in epoch 2 and wrote
/// other records at the same offsets. Returns (A, B, the common end, A's end).
async fn diverged_pair(root: &Path) -> (MessageStore, MessageStore, i64, i64) {
    let a = MessageStore::open(config(&root.join("a"))).await.unwrap();
    let b = MessageStore::open(config(&root.join("b"))).await.unwrap();
    assert!(a.begin_epoch(1).unwrap());
    put_n(&a, "A", 0..150).await;
    let (a_addr, a_ms) = start_master(&a);
    let (status, stop) = start_slave(&b, a_addr, 2);
    wait_until("B to catch up with A", Duration::from_secs(30), || {
        b.max_physical_offset() == a.max_physical_offset()
    })
    .await;
    stop_slave(&stop, &status, &a_ms).await;
    let common = b.max_physical_offset();
    put_n(&a, "A", 150..200).await;
    let a_end = a.max_physical_offset();
    assert!(b.begin_epoch(2).unwrap());
    put_n(&b, "B", 0..100).await;
    (a, b, common, a_end)
}

/// Fail points are global to the process: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Turns this file's fail points off however a test ends (a failed one must not leave its point set
/// for the next).
struct PointsOff;

impl Drop for PointsOff {
    fn drop(&mut self) {
        storage::fault::clear("truncate_begin@0");
        storage::fault::clear("truncate_queue@0");
    }
}

#[test]
fn a_cut_failing_before_any_change_keeps_the_slave_out_until_the_fault_clears() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _off = PointsOff;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        // The cut fails before it changes anything: retried at each handshake.
        let (a, b, common, a_end) = diverged_pair(&root.join("before")).await;
        let (b_addr, b_ms) = start_master(&b);
        let before = log_bytes(&a).await;
        storage::fault::set("truncate_begin@0", "return").unwrap();
        let (status, _stop) = start_slave(&a, b_addr, 1);
        assert_stays_out("cut failing", Duration::from_secs(2), &status, &b_ms).await;
        assert!(log_bytes(&a).await == before, "A's log changed");
        assert_eq!(a.epochs(), epochs(&[(1, 0)]), "A kept its own history");
        storage::fault::clear("truncate_begin@0");
        wait_until("A to replicate B", Duration::from_secs(30), || {
            status.connected.get() && a.max_physical_offset() == b.max_physical_offset()
        })
        .await;
        assert_eq!(status.truncated_bytes.get() as i64, a_end - common);
        assert_same_log(&a, &b).await;
        assert_eq!(a.epochs(), b.epochs());
        assert_eq!(bodies(&a).await, bodies(&b).await);
    });
}

#[test]
fn a_cut_failing_half_way_keeps_the_slave_out_until_a_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _off = PointsOff;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        // The cut fails half-way (a ConsumeQueue's cut, after the CommitLog's): the store refuses
        // writes until a restart, and the slave does not handshake until then.
        let root2 = root.join("half");
        let (a, b, common, _) = diverged_pair(&root2).await;
        let (b_addr, b_ms) = start_master(&b);
        storage::fault::set("truncate_queue@0", "return").unwrap();
        let (status, stop) = start_slave(&a, b_addr, 1);
        wait_until("the cut to fail half-way", Duration::from_secs(30), || {
            a.unrecovered_failure().is_some()
        })
        .await;
        assert_stays_out("store broken", Duration::from_secs(2), &status, &b_ms).await;
        assert_eq!(a.epochs(), epochs(&[(1, 0)]), "A did not adopt B's history");
        storage::fault::clear("truncate_queue@0");
        stop.set(true);
        a.shutdown().await;
        drop(a);
        // The restart: recovery rebuilds from the lowered checkpoint.
        let a = MessageStore::open(config(&root2.join("a"))).await.unwrap();
        assert!(a.unrecovered_failure().is_none());
        assert_eq!(a.max_physical_offset(), common, "recovered at the cut");
        let (status, _stop) = start_slave(&a, b_addr, 1);
        wait_until(
            "A to replicate B after its restart",
            Duration::from_secs(30),
            || status.connected.get() && a.max_physical_offset() == b.max_physical_offset(),
        )
        .await;
        assert_same_log(&a, &b).await;
        assert_eq!(a.epochs(), b.epochs());
        assert_eq!(bodies(&a).await, bodies(&b).await);
    });
}

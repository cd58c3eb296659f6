//! A controller-mode slave whose CommitLog fdatasync fails must stop acknowledging: its store writes
//! nothing more until a restart, which drops whatever it holds only in memory, so every offset the
//! master counted for it must still be in its log after that restart (else a slave elected master
//! with the longer in-memory log comes back shorter and the replicas cut acknowledged records
//! away). A master and a slave over loopback; the slave's sync fails through the storage crate's
//! fail points; the master keeps writing. Run: `cargo test -p ha --features failpoints --test
//! slave_sync_failure`.
#![cfg(feature = "failpoints")]
// Test code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cut_support;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use cut_support::*;
use storage::MessageStore;

/// Master and slave share the shard id: the point is armed only while the master has nothing to
/// sync.
const POINT: &str = "commitlog_fdatasync@0";
const SLAVE_ID: i64 = 2;

/// Turns the fail point off however the test ends.
struct PointOff;

impl Drop for PointOff {
    fn drop(&mut self) {
        storage::fault::clear(POINT);
    }
}

/// Waits until everything `store` wrote is synced.
async fn wait_synced(what: &str, store: &MessageStore) {
    wait_until(what, Duration::from_secs(30), || {
        store.flushed_physical_offset() == store.max_physical_offset()
    })
    .await;
}

#[test]
fn a_slave_whose_sync_failed_acknowledges_nothing_a_restart_loses() {
    let _off = PointOff;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let a = MessageStore::open(config(&root.join("a"))).await.unwrap();
        // The slave syncs only when asked (`request_flush`), so the test knows what each sync covers.
        let mut b_cfg = config(&root.join("b"));
        b_cfg.flush_interval_commit_log_ms = 3_600_000;
        b_cfg.flush_commit_log_least_pages = 1 << 30;
        let b = MessageStore::open(b_cfg.clone()).await.unwrap();
        assert!(a.begin_epoch(1).unwrap());
        put_n(&a, "A", 0..100).await;
        let (a_addr, a_ms) = start_master(&a);
        // The highest offset the master ever counted for the slave.
        let best_ack = Rc::new(Cell::new(-1i64));
        let (wm, best) = (a_ms.watermark.clone(), best_ack.clone());
        a_ms.watermark.set_ack_hook(Box::new(move || {
            best.set(best.get().max(wm.acked_of(SLAVE_ID).unwrap_or(-1)));
        }));
        let (status, stop) = start_slave(&b, a_addr, SLAVE_ID);
        wait_until("B to catch up with A", Duration::from_secs(30), || {
            b.max_physical_offset() == a.max_physical_offset()
        })
        .await;
        b.request_flush();
        wait_synced("B's sync", &b).await;
        let b_durable = b.flushed_physical_offset();

        // More records that B takes in memory; then its sync fails, while A has nothing to sync.
        put_n(&a, "A", 100..150).await;
        wait_synced("A's sync", &a).await;
        wait_until("B to take A's new records", Duration::from_secs(30), || {
            b.max_physical_offset() == a.max_physical_offset()
        })
        .await;
        assert_eq!(
            b.flushed_physical_offset(),
            b_durable,
            "B synced on its own"
        );
        storage::fault::set(POINT, "return").unwrap();
        b.request_flush();
        wait_until("B's sync to fail", Duration::from_secs(30), || {
            b.unrecovered_failure().is_some()
        })
        .await;
        storage::fault::clear(POINT);
        let b_taken = b.max_physical_offset();

        // A writes on: B must take and acknowledge none of it.
        put_n(&a, "A", 150..250).await;
        wait_synced("A's sync", &a).await;
        let a_end = a.max_physical_offset();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            // B took it all, or refused a frame and the master no longer counts it.
            let refused = status.rejected.get() > 0 && a_ms.watermark.lag().slaves == 0;
            if b.max_physical_offset() == a_end || refused {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        // Acks in flight land.
        glommio::timer::sleep(Duration::from_millis(200)).await;
        let acked = best_ack.get();
        let b_memory_end = b.max_physical_offset();
        assert!(acked >= b_durable, "the master never counted B");
        stop.set(true);
        b.shutdown().await;
        drop(b);

        // B's restart: everything the master counted for it is in its log.
        let b = MessageStore::open(b_cfg).await.unwrap();
        assert!(b.unrecovered_failure().is_none());
        let b_end = b.max_physical_offset();
        assert!(
            acked <= b_end,
            "the master counted B up to {acked}, B holds {b_end} after its restart (in memory \
             before it: {b_memory_end}, taken before the failed sync: {b_taken}, durable: \
             {b_durable}, rejected frames: {})",
            status.rejected.get()
        );
        assert_eq!(b_end, b_taken, "B lost what it took before the failed sync");
        // What B holds is A's log.
        let (x, y) = (log_bytes(&a).await, log_bytes(&b).await);
        assert!(x.starts_with(&y), "B's log is not a prefix of A's");
    });
}

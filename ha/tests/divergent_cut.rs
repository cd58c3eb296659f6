//! A controller-mode slave whose divergence point (from the epoch comparison) falls inside one of its
//! own records: it wrote bytes the master never had, so its log cannot be cut exactly there. It must
//! never replicate from its own end: it cuts back to the start of that record once the master
//! confirms it holds a record starting there (then fetches again and ends byte-identical), and stays
//! out of replication when the master does not.

// Test code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cut_support;

use std::time::Duration;

use cut_support::*;
use storage::MessageStore;

/// Master M in epoch 1 with slave S caught up (broker id 2); S stopped. Returns S's end then.
async fn caught_up_pair(m: &MessageStore, s: &MessageStore) -> i64 {
    assert!(m.begin_epoch(1).unwrap());
    put_n(m, "M", 0..60).await;
    let (addr, ms) = start_master(m);
    let (status, stop) = start_slave(s, addr, 2);
    wait_until("S to catch up", Duration::from_secs(30), || {
        s.max_physical_offset() == m.max_physical_offset()
    })
    .await;
    assert_eq!(s.epochs(), epochs(&[(1, 0)]));
    stop_slave(&stop, &status, &ms).await;
    s.max_physical_offset()
}

#[test]
fn a_record_across_the_divergence_point_is_cut_whole_and_fetched_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let m = MessageStore::open(config(&root.join("m"))).await.unwrap();
        let s = MessageStore::open(config(&root.join("s"))).await.unwrap();
        let x = caught_up_pair(&m, &s).await;
        // A stray local write on the slave (as a deposed master's services once did): one large
        // record the master never had, in S's epoch 1.
        let stray = s.put(record_of("S", 0, 4000)).await.unwrap();
        assert_eq!(stray.physical_offset, x);
        let s_end = s.max_physical_offset();
        // M goes on in epoch 1 with small records, then a new epoch 2 starts inside S's record.
        put_n(&m, "M", 60..63).await;
        let e2 = m.max_physical_offset();
        assert!(
            x < e2 && e2 < s_end,
            "epoch 2 starts inside S's stray record"
        );
        assert!(m.begin_epoch(2).unwrap());
        put_n(&m, "M", 63..120).await;
        assert!(
            !s.record_starts_at(e2).await.unwrap(),
            "no record of S starts at the divergence point"
        );
        let (addr, ms) = start_master(&m);
        let (status, _stop) = start_slave(&s, addr, 2);
        wait_until(
            "S to cut its stray record and replicate M",
            Duration::from_secs(30),
            || status.connected.get() && s.max_physical_offset() == m.max_physical_offset(),
        )
        .await;
        assert_same_log(&s, &m).await;
        assert_eq!(s.epochs(), m.epochs());
        assert_eq!(status.truncations.get(), 1);
        assert_eq!(status.truncated_bytes.get() as i64, s_end - x);
        let sb = bodies(&s).await;
        assert_eq!(sb, bodies(&m).await, "identical queues");
        assert!(!sb.iter().any(|b| b.starts_with(b"S message")));
        // The master counts it only now that its log is the master's.
        wait_until("M to see S caught up", Duration::from_secs(10), || {
            ms.watermark.caught_up(2, m.max_physical_offset())
        })
        .await;
        put_n(&m, "M", 120..140).await;
        wait_until("S to get new data", Duration::from_secs(30), || {
            s.max_physical_offset() == m.max_physical_offset()
        })
        .await;
        assert_same_log(&s, &m).await;
    });
}

#[test]
fn without_a_master_record_at_the_cut_back_point_the_slave_stays_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let m = MessageStore::open(config(&root.join("m"))).await.unwrap();
        let s = MessageStore::open(config(&root.join("s"))).await.unwrap();
        let x = caught_up_pair(&m, &s).await;
        // Two stray records: a small one at x, a large one after it that crosses the point.
        let first = s.put(record_of("S", 0, 20)).await.unwrap();
        assert_eq!(first.physical_offset, x);
        let second = s.put(record_of("S", 1, 4000)).await.unwrap();
        put_n(&m, "M", 60..63).await;
        let e2 = m.max_physical_offset();
        assert!(second.physical_offset < e2 && e2 < s.max_physical_offset());
        assert!(
            !m.record_starts_at(second.physical_offset).await.unwrap(),
            "M has no record where S's second stray record starts"
        );
        assert!(m.begin_epoch(2).unwrap());
        put_n(&m, "M", 63..100).await;
        let before = log_bytes(&s).await;
        let (addr, ms) = start_master(&m);
        let (status, stop) = start_slave(&s, addr, 2);
        assert_stays_out(
            "no master record at the cut-back point",
            Duration::from_secs(2),
            &status,
            &ms,
        )
        .await;
        assert!(log_bytes(&s).await == before, "S's log changed");
        assert_eq!(s.epochs(), epochs(&[(1, 0)]), "S kept its own history");
        assert_eq!(status.truncations.get(), 0);
        stop.set(true);
    });
}

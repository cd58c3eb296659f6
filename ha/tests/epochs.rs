//! Controller-mode replication (handshake version 2) between two real stores over loopback sockets,
//! with the real master sender and slave receiver: a returning old master's diverged tail is cut and
//! the logs end identical; a slave behind in an older epoch catches up and adopts the master's epochs;
//! a slave with no epoch in common is refused and keeps its log; version 1 slaves work as before.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cut_support;

use std::net::SocketAddr;
use std::time::Duration;

use cut_support::*;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use ha::wire::{self, Answer, Handshake};
use storage::{EpochEntry, MessageStore};

#[test]
fn returning_old_master_cuts_its_diverged_tail_and_ends_identical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let a = MessageStore::open(config(&root.join("a"))).await.unwrap();
        let b = MessageStore::open(config(&root.join("b"))).await.unwrap();
        // Epoch 1: A is master, B its slave (controller mode, broker ids 1 and 2).
        assert!(a.begin_epoch(1).unwrap());
        put_n(&a, "A", 0..200).await;
        let (a_addr, a_ms, a_stop) = start_stoppable_master(&a);
        let (b_status, b_stop) = start_slave(&b, a_addr, 2);
        wait_until("B to catch up with A", Duration::from_secs(30), || {
            b.max_physical_offset() == a.max_physical_offset()
        })
        .await;
        assert_eq!(
            a_ms.watermark.slaves()[0].broker_id,
            2,
            "the master knows its slave's id"
        );
        assert_eq!(b.epochs(), epochs(&[(1, 0)]), "B adopted A's history");
        stop_slave(&b_stop, &b_status, &a_ms).await;
        a_stop.set(true);

        // A goes on alone in epoch 1 (never acknowledged, never replicated): the diverged tail.
        let common = b.max_physical_offset();
        put_n(&a, "A", 200..260).await;
        let a_end = a.max_physical_offset();
        assert!(a_end > common);

        // Failover: B is master in epoch 2 and writes other records at the same offsets.
        assert!(b.begin_epoch(2).unwrap());
        put_n(&b, "B", 0..150).await;
        let (b_addr, b_ms, _b_master_stop) = start_stoppable_master(&b);

        // A returns as B's slave.
        let (a_status, _a_slave_stop) = start_slave(&a, b_addr, 1);
        wait_until("A to replicate B", Duration::from_secs(30), || {
            a_status.connected.get() && a.max_physical_offset() == b.max_physical_offset()
        })
        .await;
        assert_eq!(a.epochs(), epochs(&[(1, 0), (2, common)]));
        assert_eq!(a_status.truncations.get(), 1);
        assert_eq!(a_status.truncated_bytes.get() as i64, a_end - common);
        assert_eq!(a.epochs(), b.epochs());
        assert_same_log(&a, &b).await;
        let (ab, bb) = (bodies(&a).await, bodies(&b).await);
        assert_eq!(ab.len(), 200 + 150);
        assert_eq!(ab, bb, "identical queues");
        // A's records 200.. are gone; B's 150 took their offsets.
        let from = |w: &[u8]| ab.iter().filter(|body| body.starts_with(w)).count();
        assert_eq!((from(b"A message"), from(b"B message")), (200, 150));
        assert_eq!(b_ms.watermark.slaves()[0].broker_id, 1);
        // New data keeps flowing to the returned slave.
        put_n(&b, "B", 150..170).await;
        wait_until("A to get new data", Duration::from_secs(30), || {
            a.max_physical_offset() == b.max_physical_offset()
        })
        .await;
        assert_same_log(&a, &b).await;
    });
}

#[test]
fn slave_behind_in_an_older_epoch_catches_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let m = MessageStore::open(config(&root.join("m"))).await.unwrap();
        let s = MessageStore::open(config(&root.join("s"))).await.unwrap();
        m.begin_epoch(1).unwrap();
        put_n(&m, "M", 0..100).await;
        let (addr, ms, _mstop) = start_stoppable_master(&m);
        let (status, stop) = start_slave(&s, addr, 7);
        wait_until("first catch-up", Duration::from_secs(30), || {
            s.max_physical_offset() == m.max_physical_offset()
        })
        .await;
        stop_slave(&stop, &status, &ms).await;
        let behind = s.max_physical_offset();
        // The master moves on in epoch 1, then a new epoch 3 (the slave missed both).
        put_n(&m, "M", 100..150).await;
        let e3 = m.max_physical_offset();
        m.begin_epoch(3).unwrap();
        put_n(&m, "M", 150..250).await;
        assert_eq!(s.epochs(), epochs(&[(1, 0)]));
        let (status, _stop) = start_slave(&s, addr, 7);
        wait_until("second catch-up", Duration::from_secs(30), || {
            status.connected.get() && s.max_physical_offset() == m.max_physical_offset()
        })
        .await;
        assert!(behind < e3);
        assert_eq!(s.epochs(), epochs(&[(1, 0), (3, e3)]));
        assert_same_log(&s, &m).await;
        assert_eq!(bodies(&s).await.len(), 250);
    });
}

/// Sends a version 2 handshake and report by hand and returns the master's answer.
async fn raw_v2(addr: SocketAddr, list: Vec<EpochEntry>, end: i64) -> (bool, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut hello = Handshake {
        version: wire::VERSION_2,
        broker_id: 9,
        epochs: list,
        ..Handshake::classic(1, SHARD, NAME)
    }
    .encode();
    hello.extend_from_slice(&wire::encode_report(end));
    s.write_all(&hello).await.unwrap();
    let mut fixed = [0u8; wire::ANSWER_FIXED];
    s.read_exact(&mut fixed).await.unwrap();
    let (ok, len) = Answer::decode_fixed(&fixed).unwrap();
    let mut text = vec![0u8; len];
    s.read_exact(&mut text).await.unwrap();
    (ok, String::from_utf8(text).unwrap())
}

#[test]
fn slave_with_no_common_epoch_is_refused_and_keeps_its_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let m = MessageStore::open(config(&root.join("m"))).await.unwrap();
        let s = MessageStore::open(config(&root.join("s"))).await.unwrap();
        m.begin_epoch(5).unwrap();
        put_n(&m, "M", 0..100).await;
        s.begin_epoch(2).unwrap();
        put_n(&s, "S", 0..30).await;
        let (addr, ms, _mstop) = start_stoppable_master(&m);
        let (ok, reason) = raw_v2(addr, s.epochs(), s.max_physical_offset()).await;
        assert!(!ok);
        assert!(reason.contains("shares no epoch"), "{reason}");
        // The real slave: refused again and again, its log untouched.
        let before = log_bytes(&s).await;
        let (status, _stop) = start_slave(&s, addr, 9);
        glommio::timer::sleep(Duration::from_millis(1500)).await;
        assert!(!status.connected.get());
        assert_eq!(status.frames.get(), 0);
        assert_eq!(ms.watermark.lag().slaves, 0);
        assert!(
            log_bytes(&s).await == before,
            "the refused slave's log changed"
        );
        assert_eq!(s.epochs(), epochs(&[(2, 0)]));
        // An empty slave with epochs but no data may start.
        let (ok, _) = raw_v2(addr, epochs(&[(2, 0)]), storage::physical(SHARD, 0)).await;
        assert!(ok);

        // A handshake with a damaged epoch list (out of order) is dropped without an answer; the
        // master goes on serving.
        let mut raw = TcpStream::connect(addr).await.unwrap();
        let mut hello = Handshake::classic(1, SHARD, NAME).encode();
        hello[5] = 2; // version 2
        hello.extend_from_slice(&9i64.to_be_bytes());
        hello.extend_from_slice(&2u32.to_be_bytes());
        for (e, start) in [(4u32, 100i64), (3, 200)] {
            hello.extend_from_slice(&e.to_be_bytes());
            hello.extend_from_slice(&start.to_be_bytes());
        }
        hello.extend_from_slice(&wire::encode_report(0));
        raw.write_all(&hello).await.unwrap();
        let mut buf = [0u8; 16];
        let n = futures_lite::future::or(async { raw.read(&mut buf).await.unwrap_or(0) }, async {
            glommio::timer::sleep(Duration::from_secs(15)).await;
            usize::MAX
        })
        .await;
        assert_eq!(n, 0, "closed without an answer");
        let (ok, reason) = raw_v2(addr, s.epochs(), s.max_physical_offset()).await;
        assert!(
            !ok && reason.contains("shares no epoch"),
            "still serving: {reason}"
        );
    });
}

#[test]
fn version_1_slaves_replicate_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let m = MessageStore::open(config(&root.join("m"))).await.unwrap();
        let s = MessageStore::open(config(&root.join("s"))).await.unwrap();
        let ahead = MessageStore::open(config(&root.join("x"))).await.unwrap();
        put_n(&m, "M", 0..120).await;
        put_n(&ahead, "X", 0..200).await;
        let (addr, ms, _mstop) = start_stoppable_master(&m);
        let (status, _stop) = start_slave(&s, addr, wire::NO_BROKER_ID);
        wait_until("classic catch-up", Duration::from_secs(30), || {
            status.connected.get() && s.max_physical_offset() == m.max_physical_offset()
        })
        .await;
        assert_same_log(&s, &m).await;
        assert!(s.epochs().is_empty(), "a classic slave keeps no epochs");
        assert_eq!(ms.watermark.slaves()[0].broker_id, wire::NO_BROKER_ID);
        // A classic slave ahead of the master is refused, never cut.
        let before = log_bytes(&ahead).await;
        let (xstatus, _xstop) = start_slave(&ahead, addr, wire::NO_BROKER_ID);
        glommio::timer::sleep(Duration::from_millis(1000)).await;
        assert!(!xstatus.connected.get());
        assert!(
            log_bytes(&ahead).await == before,
            "the refused slave's log changed"
        );
    });
}

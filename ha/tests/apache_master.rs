//! The slave side of Apache RocketMQ's classic HA protocol against a scripted Apache master over real
//! loopback sockets and real stores: frames cut anywhere (inside records, at a segment's blank end
//! record), heartbeats, a connection lost in the middle of a record, a frame at the wrong offset, and an
//! empty slave offered a later segment. The slave reports what Apache's slave reports (its max offset,
//! 8 bytes), keeps only whole checked records, resumes from its true end and ends up byte-identical.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{config, record, run, SEGMENT};
use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use ha::apache::Header;
use storage::MessageStore;

/// A master store of several segments and its whole log as raw bytes from offset 0 (blank ends too).
async fn master_log(dir: &std::path::Path) -> (MessageStore, Vec<u8>) {
    let store = MessageStore::open(config(dir, 0))
        .await
        .expect("master store");
    for i in 0..500 {
        store.put(record("ApacheHaT", i)).await.expect("put");
    }
    let end = store.max_physical_offset();
    let mut all = Vec::new();
    while (all.len() as i64) < end {
        let chunk = store
            .read_commitlog(all.len() as i64, SEGMENT)
            .await
            .expect("read");
        assert!(!chunk.is_empty());
        all.extend_from_slice(&chunk);
    }
    assert!(all.len() > 3 * SEGMENT, "the log should span segments");
    (store, all)
}

fn start_slave(store: &MessageStore, addr: SocketAddr) -> (Rc<ha::SlaveStatus>, Rc<Cell<bool>>) {
    let status = Rc::new(ha::SlaveStatus::default());
    let stop = Rc::new(Cell::new(false));
    let s = stop.clone();
    glommio::spawn_local(ha::run_slave(
        store.clone(),
        Rc::new(ha::SlaveConfig {
            broker_name: "broker-a".into(),
            shard_count: 1,
            max_frame: 64 * 1024,
            broker_id: ha::wire::NO_BROKER_ID,
            protocol: ha::MasterProtocol::Apache,
        }),
        Rc::new(move || Some(addr)),
        status.clone(),
        Rc::new(move || s.get()),
    ))
    .detach();
    (status, stop)
}

/// Accepts the slave and reads its first report, as Apache's master does.
async fn accept(listener: &TcpListener) -> (TcpStream, i64) {
    let mut s = listener.accept().await.expect("accept");
    let mut report = [0u8; 8];
    s.read_exact(&mut report).await.expect("report");
    (s, i64::from_be_bytes(report))
}

async fn send(s: &mut TcpStream, offset: usize, data: &[u8]) {
    let header = Header {
        offset: offset as i64,
        size: data.len(),
    };
    s.write_all(&header.encode()).await.expect("header");
    s.write_all(data).await.expect("data");
}

/// Sends `all[from..to]` as Apache does: frames of at most `batch` bytes, never across a segment end.
async fn stream(s: &mut TcpStream, all: &[u8], from: usize, to: usize, batch: usize) {
    let mut at = from;
    while at < to {
        let seg_end = (at / SEGMENT + 1) * SEGMENT;
        let end = to.min(seg_end).min(at + batch);
        send(s, at, &all[at..end]).await;
        at = end;
    }
}

/// Reads reports until one says `want`; panics after 10 s.
async fn wait_report(s: &mut TcpStream, want: i64) {
    let read = async {
        let mut b = [0u8; 8];
        loop {
            s.read_exact(&mut b).await.expect("report");
            if i64::from_be_bytes(b) == want {
                return true;
            }
        }
    };
    let timer = async {
        glommio::timer::sleep(Duration::from_secs(10)).await;
        false
    };
    assert!(
        futures_lite::future::or(read, timer).await,
        "no report of {want}"
    );
}

async fn expect_closed(s: &mut TcpStream) {
    let mut buf = [0u8; 64];
    let closed = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => continue,
            }
        }
    };
    let timer = async {
        glommio::timer::sleep(Duration::from_secs(10)).await;
        false
    };
    assert!(
        futures_lite::future::or(closed, timer).await,
        "the slave kept the connection open"
    );
}

#[test]
fn frames_cut_anywhere_give_a_byte_identical_copy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let (master, all) = master_log(&root.join("m")).await;
        let slave = MessageStore::open(config(&root.join("s"), 0))
            .await
            .expect("slave store");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let (status, stop) = start_slave(&slave, listener.local_addr().expect("addr"));

        // 1: an empty slave reports 0; odd-sized frames cut records; a heartbeat; then the link
        // drops with a record half sent.
        let (mut s, from) = accept(&listener).await;
        assert_eq!(from, 0);
        stream(&mut s, &all, 0, 10_000, 777).await;
        send(&mut s, 10_000, &[]).await;
        stream(&mut s, &all, 10_000, 20_000, 1_000).await;
        let whole = ha::wire::whole_records(&all[..20_000]).expect("records");
        assert!(whole < 20_000, "the cut should fall inside a record");
        wait_report(&mut s, whole as i64).await;
        drop(s);

        // 2: it comes back at its last whole record; a frame elsewhere closes the link unwritten.
        let (mut s, from) = accept(&listener).await;
        assert_eq!(from, whole as i64);
        send(&mut s, whole + 8, &all[whole + 8..whole + 500]).await;
        expect_closed(&mut s).await;
        assert_eq!(slave.max_physical_offset(), whole as i64);

        // 3: the rest, in Apache's default 32 KiB batches across the segments' blank ends.
        let (mut s, from) = accept(&listener).await;
        assert_eq!(from, whole as i64);
        stream(&mut s, &all, whole, all.len(), 32 * 1024).await;
        wait_report(&mut s, all.len() as i64).await;
        let mut copy = Vec::new();
        while copy.len() < all.len() {
            let chunk = slave
                .read_commitlog(copy.len() as i64, SEGMENT)
                .await
                .expect("read slave");
            assert!(!chunk.is_empty());
            copy.extend_from_slice(&chunk);
        }
        assert!(copy == all, "the slave's log differs from the master's");
        for q in 0..2 {
            assert_eq!(
                slave.max_offset("ApacheHaT", q),
                master.max_offset("ApacheHaT", q)
            );
        }
        assert_eq!(status.rejected.get(), 1);
        stop.set(true);
        drop(s);
        master.shutdown().await;
        slave.shutdown().await;
    });
}

#[test]
fn an_empty_slave_offered_a_later_segment_refuses_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let (master, all) = master_log(&root.join("m")).await;
        let slave = MessageStore::open(config(&root.join("s"), 0))
            .await
            .expect("slave store");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let (status, stop) = start_slave(&slave, listener.local_addr().expect("addr"));
        // Apache's master answers an empty slave from the start of its newest segment.
        let (mut s, from) = accept(&listener).await;
        assert_eq!(from, 0);
        let newest = (all.len() / SEGMENT) * SEGMENT;
        send(&mut s, newest, &all[newest..all.len().min(newest + 1000)]).await;
        expect_closed(&mut s).await;
        assert_eq!(slave.max_physical_offset(), 0);
        assert_eq!(status.rejected.get(), 1);
        stop.set(true);
        master.shutdown().await;
        slave.shutdown().await;
    });
}

//! The slave receiver against a scripted master over real loopback sockets and real stores: a frame
//! with a bad crc, one that starts at the wrong offset, and one that ends inside a record each close
//! the connection without writing anything unchecked; the slave reconnects from its true end and
//! finally holds a byte-identical copy of the master's log. Also: a real master sender to a real slave.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{config, record, run};
use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use ha::wire::{self, Answer, FrameHeader, Handshake};
use storage::MessageStore;

async fn filled_master(dir: &std::path::Path, n: usize) -> MessageStore {
    let store = MessageStore::open(config(dir, 1))
        .await
        .expect("master store");
    for i in 0..n {
        store.put(record("HaT", i)).await.expect("put");
    }
    store
}

/// Accepts one slave: reads handshake and report, answers Accepted; returns the stream and offset.
async fn accept_slave(listener: &TcpListener) -> (TcpStream, i64) {
    let mut s = listener.accept().await.expect("accept");
    let mut fixed = [0u8; wire::HANDSHAKE_FIXED];
    s.read_exact(&mut fixed).await.expect("handshake");
    let (count, id, len) = Handshake::decode_fixed(&fixed).expect("valid handshake");
    assert_eq!((count, id), (2, 1));
    let mut name = vec![0u8; len];
    s.read_exact(&mut name).await.expect("name");
    assert_eq!(name, b"broker-x");
    let mut report = [0u8; 8];
    s.read_exact(&mut report).await.expect("report");
    s.write_all(&Answer::Accepted("127.0.0.1:1".into()).encode())
        .await
        .expect("answer");
    (s, wire::decode_report(&report).expect("offset"))
}

/// Reads until the slave closes (reports are skipped); panics if it stays open.
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
        "slave kept the bad connection open"
    );
}

async fn send_frame(s: &mut TcpStream, header: FrameHeader, data: &[u8]) {
    s.write_all(&header.encode()).await.expect("header");
    s.write_all(data).await.expect("data");
}

fn start_slave(store: &MessageStore, addr: SocketAddr) -> (Rc<ha::SlaveStatus>, Rc<Cell<bool>>) {
    let status = Rc::new(ha::SlaveStatus::default());
    let stop = Rc::new(Cell::new(false));
    let s = stop.clone();
    glommio::spawn_local(ha::run_slave(
        store.clone(),
        Rc::new(ha::SlaveConfig {
            broker_name: "broker-x".into(),
            shard_count: 2,
            max_frame: 64 * 1024,
            broker_id: ha::wire::NO_BROKER_ID,
            protocol: ha::MasterProtocol::Native,
        }),
        Rc::new(move || Some(addr)),
        status.clone(),
        Rc::new(move || s.get()),
    ))
    .detach();
    (status, stop)
}

#[test]
fn bad_frames_close_the_connection_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let master = filled_master(&root.join("m"), 40).await;
        let slave = MessageStore::open(config(&root.join("s"), 1))
            .await
            .expect("slave store");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (status, stop) = start_slave(&slave, addr);
        let begin = slave.max_physical_offset();
        let all = master
            .read_commitlog(begin, 64 * 1024)
            .await
            .expect("read master");
        assert_eq!(begin + all.len() as i64, master.max_physical_offset());
        let first = wire::whole_records(all.get(..2000).expect("data")).expect("records");
        assert!(first > 0);

        // 1: a good frame, then one whose crc does not match its data.
        let (mut s, from) = accept_slave(&listener).await;
        assert_eq!(from, begin);
        send_frame(
            &mut s,
            FrameHeader::for_data(begin, &all[..first]),
            &all[..first],
        )
        .await;
        let second_end = first + wire::whole_records(&all[first..first + 2000]).expect("records");
        let mut bad = FrameHeader::for_data(begin + first as i64, &all[first..second_end]);
        bad.crc ^= 0x0100;
        send_frame(&mut s, bad, &all[first..second_end]).await;
        expect_closed(&mut s).await;
        assert_eq!(slave.max_physical_offset(), begin + first as i64);

        // 2: the slave comes back from its true end; a frame starting elsewhere is refused.
        let (mut s, from) = accept_slave(&listener).await;
        assert_eq!(from, begin + first as i64);
        let skip = first + 10;
        send_frame(
            &mut s,
            FrameHeader::for_data(begin + skip as i64, &all[skip..second_end]),
            &all[skip..second_end],
        )
        .await;
        expect_closed(&mut s).await;
        assert_eq!(slave.max_physical_offset(), begin + first as i64);

        // 3: a frame that ends inside a record: only its whole records are kept, then a reconnect.
        let (mut s, from) = accept_slave(&listener).await;
        assert_eq!(from, begin + first as i64);
        let cut = second_end + 100;
        send_frame(
            &mut s,
            FrameHeader::for_data(from, &all[first..cut]),
            &all[first..cut],
        )
        .await;
        expect_closed(&mut s).await;
        assert_eq!(slave.max_physical_offset(), begin + second_end as i64);

        // 4: the rest, correctly: the slave's log equals the master's, byte for byte.
        let (mut s, from) = accept_slave(&listener).await;
        assert_eq!(from, begin + second_end as i64);
        let rest = &all[second_end..];
        send_frame(&mut s, FrameHeader::for_data(from, rest), rest).await;
        let mut ack = [0u8; 8];
        loop {
            s.read_exact(&mut ack).await.expect("report");
            if wire::decode_report(&ack).expect("offset") == master.max_physical_offset() {
                break;
            }
        }
        let copy = slave
            .read_commitlog(begin, 64 * 1024)
            .await
            .expect("read slave");
        assert!(copy == all, "slave log differs from the master's");
        assert_eq!(status.rejected.get(), 3);
        assert_eq!(slave.max_offset("HaT", 0), master.max_offset("HaT", 0));
        stop.set(true);
        drop(s);
        master.shutdown().await;
        slave.shutdown().await;
    });
}

#[test]
fn real_master_streams_to_real_slave_and_acks_release_waiters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let master = filled_master(&root.join("m"), 600).await;
        let slave = MessageStore::open(config(&root.join("s"), 1))
            .await
            .expect("slave store");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let ms = ha::MasterShard {
            store: master.clone(),
            watermark: ha::Watermark::new(),
            signal: ha::DataSignal::new(),
            transfer_batch_size: 4096,
            broker_addr: "127.0.0.1:1".into(),
        };
        let m2 = ms.clone();
        glommio::spawn_local(async move {
            let mut s = listener.accept().await.expect("accept");
            let h = ha::read_handshake(&mut s).await.expect("handshake");
            ha::check_handshake(&h, 2, "broker-x").expect("accepted");
            let _ = ha::serve_slave(s, m2, &h).await;
        })
        .detach();
        let (_status, stop) = start_slave(&slave, addr);
        // Wait for the slave to connect, then a new put is acknowledged through the watermark
        // once the backlog (several segments) and the put arrived.
        while ms.watermark.lag().slaves == 0 {
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        let ok = master.put(record("HaT", 1000)).await.expect("put");
        ms.signal.raise();
        let end = ok.physical_offset + i64::from(ok.size);
        ms.watermark
            .wait(
                end,
                master.max_physical_offset(),
                1 << 30,
                Duration::from_secs(20),
            )
            .await
            .expect("acked by the slave");
        assert_eq!(slave.max_physical_offset(), master.max_physical_offset());
        // Compare what is on disk on both sides.
        for _ in 0..200 {
            if slave.flushed_physical_offset() >= slave.max_physical_offset()
                && master.flushed_physical_offset() >= master.max_physical_offset()
            {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        let mut pos = master.min_physical_offset();
        while pos < master.max_physical_offset() {
            let a = master.read_commitlog(pos, 1 << 20).await.expect("master");
            let b = slave.read_commitlog(pos, 1 << 20).await.expect("slave");
            let diff = a.iter().zip(b.iter()).position(|(x, y)| x != y);
            assert!(
                !a.is_empty() && a == b,
                "logs differ at {pos}: master {} bytes, slave {} bytes, first difference at {diff:?}",
                a.len(),
                b.len()
            );
            pos += a.len() as i64;
        }
        stop.set(true);
        master.shutdown().await;
        slave.shutdown().await;
    });
}

#[test]
fn slave_drops_a_silent_master_and_reconnects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_owned();
    run(move || async move {
        let slave = MessageStore::open(config(&root.join("s"), 1))
            .await
            .expect("slave store");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (_status, stop) = start_slave(&slave, addr);
        // Accepted, then neither data nor heartbeats: the slave gives up within its 20 s limit.
        let (mut s, _) = accept_slave(&listener).await;
        let start = std::time::Instant::now();
        expect_closed_within(&mut s, Duration::from_secs(40)).await;
        assert!(
            start.elapsed() >= Duration::from_secs(15),
            "closed too early: {:?}",
            start.elapsed()
        );
        // ... and comes back.
        let (_s, from) = accept_slave(&listener).await;
        assert_eq!(from, slave.max_physical_offset());
        stop.set(true);
        slave.shutdown().await;
    });
}

async fn expect_closed_within(s: &mut TcpStream, limit: Duration) {
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
        glommio::timer::sleep(limit).await;
        false
    };
    assert!(
        futures_lite::future::or(closed, timer).await,
        "slave kept a silent master"
    );
}

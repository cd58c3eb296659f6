//! The master side of Apache RocketMQ's classic HA protocol, against a scripted Apache slave over real
//! loopback sockets: the HA port tells an Apache slave (8-byte offset) from ours (magic); an empty slave
//! gets the whole log from offset 0 in frames that never cross a segment's end and hold the log's exact
//! bytes; its reports count as acknowledgements; an idle master sends heartbeats at the slave's end; a
//! slave reporting more than the master holds is closed.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{config, record, run, SEGMENT};
use std::net::SocketAddr;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use ha::apache::{Header, HEADER};
use ha::Hello;
use storage::MessageStore;

/// A one-shard master serving whatever connects to its HA listener, as the broker does.
async fn master(store: &MessageStore) -> (SocketAddr, ha::Watermark) {
    let ms = ha::MasterShard {
        store: store.clone(),
        watermark: ha::Watermark::new(),
        signal: ha::DataSignal::new(),
        transfer_batch_size: 4096,
        broker_addr: "127.0.0.1:1".into(),
    };
    let wm = ms.watermark.clone();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    glommio::spawn_local(async move {
        while let Ok(mut stream) = listener.accept().await {
            let ms = ms.clone();
            glommio::spawn_local(async move {
                match ha::read_hello(&mut stream).await.unwrap() {
                    Hello::Apache { reported } => {
                        let _ = ha::serve_apache_slave(stream, ms, reported).await;
                    }
                    Hello::Ours(h) => panic!("an Apache slave taken for ours: {h:?}"),
                }
            })
            .detach();
        }
    })
    .detach();
    (addr, wm)
}

async fn read_frame(s: &mut TcpStream) -> (Header, Vec<u8>) {
    let mut head = [0u8; HEADER];
    s.read_exact(&mut head).await.unwrap();
    let h = Header::decode(&head, 1 << 20).unwrap();
    let mut body = vec![0u8; h.size];
    s.read_exact(&mut body).await.unwrap();
    (h, body)
}

#[test]
fn empty_apache_slave_gets_the_whole_log_and_acks() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path(), 0)).await.unwrap();
        for i in 0..500 {
            store.put(record("ApacheBackT", i)).await.unwrap();
        }
        let end = store.max_physical_offset();
        assert!(end > 3 * SEGMENT as i64, "the log should span segments");
        let mut log = Vec::new();
        while (log.len() as i64) < end {
            let chunk = store
                .read_commitlog(log.len() as i64, SEGMENT)
                .await
                .unwrap();
            assert!(!chunk.is_empty());
            log.extend_from_slice(&chunk);
        }
        let (addr, wm) = master(&store).await;

        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&0i64.to_be_bytes()).await.unwrap();
        let mut got = Vec::new();
        while (got.len() as i64) < end {
            let (h, body) = read_frame(&mut s).await;
            assert_eq!(h.offset, got.len() as i64, "frames follow each other");
            if h.size > 0 {
                let first = h.offset as usize / SEGMENT;
                let last = (h.offset as usize + h.size - 1) / SEGMENT;
                assert_eq!(
                    first, last,
                    "frame at {} of {} bytes crosses a segment end",
                    h.offset, h.size
                );
            }
            got.extend_from_slice(&body);
            // Report what was "appended", as Apache's slave does after each frame.
            s.write_all(&(got.len() as i64).to_be_bytes())
                .await
                .unwrap();
        }
        assert_eq!(got.len(), log.len());
        assert!(got == log, "the slave's copy differs from the master's log");

        // Its last report is the master's acknowledged offset.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while wm.acked() < end {
            assert!(
                std::time::Instant::now() < deadline,
                "ack {} never reached {end}",
                wm.acked()
            );
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(wm.slaves().len(), 1);

        // Idle: a heartbeat (size 0) at the slave's end; then new data from there.
        let (h, body) = read_frame(&mut s).await;
        assert_eq!((h.offset, h.size, body.len()), (end, 0, 0));
        store.put(record("ApacheBackT", 9999)).await.unwrap();
        let (h, body) = read_frame(&mut s).await;
        assert_eq!(h.offset, end);
        assert_eq!(body.len() as i64, store.max_physical_offset() - end);
        drop(s);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !wm.slaves().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the closed slave was never dropped"
            );
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn apache_slave_ahead_of_the_master_is_closed() {
    run(|| async {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path(), 0)).await.unwrap();
        for i in 0..10 {
            store.put(record("ApacheBackT", i)).await.unwrap();
        }
        let (addr, wm) = master(&store).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let ahead = store.max_physical_offset() + 1000;
        s.write_all(&ahead.to_be_bytes()).await.unwrap();
        let mut buf = [0u8; HEADER];
        let n = futures_lite::future::or(async { s.read(&mut buf).await.unwrap_or(0) }, async {
            glommio::timer::sleep(Duration::from_secs(5)).await;
            usize::MAX
        })
        .await;
        assert_eq!(
            n, 0,
            "the master should close the connection at once, sending nothing"
        );
        assert!(wm.slaves().is_empty());
    });
}

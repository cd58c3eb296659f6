//! What the replication tests of this crate share (epochs.rs, divergent_cut.rs, cut_failure.rs):
//! stores, a master and slaves on loopback sockets (the real sender and receiver), log comparisons.

// Each test binary uses the part it needs; a broken expectation panics.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::message::record::MessageRecord;
use storage::{EpochEntry, FlushDiskType, MessageStore, StoreConfig};

pub const NAME: &str = "broker-cut";
pub const SHARD: u16 = 0;

pub fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::default()
        .spawn(f)
        .expect("executor")
        .join()
        .expect("executor thread");
}

pub fn config(dir: &std::path::Path) -> StoreConfig {
    let mut cfg = StoreConfig::new(dir, SHARD);
    cfg.mapped_file_size_commit_log = 64 * 1024;
    cfg.mapped_file_size_consume_queue = 50 * 20;
    cfg.max_message_size = 16 * 1024;
    cfg.flush_disk_type = FlushDiskType::AsyncFlush;
    cfg.flush_interval_commit_log_ms = 20;
    cfg.max_hash_slot_num = 64;
    cfg.max_index_num = 200;
    cfg.read_cache_bytes = 8 * 1024;
    cfg
}

/// Record `i` written by `writer` with a body of `len` bytes.
pub fn record_of(writer: &str, i: usize, len: usize) -> MessageRecord {
    let mut body = format!("{writer} message {i} ").into_bytes();
    body.resize(len, b'x');
    MessageRecord {
        topic: "CutT".into(),
        queue_id: (i % 2) as i32,
        body: body.into(),
        born_timestamp: 1_700_000_000_000,
        ..MessageRecord::default()
    }
}

pub async fn put_n(store: &MessageStore, writer: &str, range: std::ops::Range<usize>) {
    for i in range {
        store
            .put(record_of(writer, i, 300 + (i % 50) * 7))
            .await
            .expect("put");
    }
}

pub fn epochs(v: &[(u32, i64)]) -> Vec<EpochEntry> {
    v.iter()
        .map(|&(epoch, start_offset)| EpochEntry {
            epoch,
            start_offset,
        })
        .collect()
}

/// A master serving `store` on a fresh loopback port.
pub fn start_master(store: &MessageStore) -> (SocketAddr, ha::MasterShard) {
    let (addr, ms, _stop) = start_stoppable_master(store);
    (addr, ms)
}

/// A master serving `store` on a fresh loopback port until the returned flag is set.
pub fn start_stoppable_master(
    store: &MessageStore,
) -> (SocketAddr, ha::MasterShard, Rc<Cell<bool>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let ms = ha::MasterShard {
        store: store.clone(),
        watermark: ha::Watermark::new(),
        signal: ha::DataSignal::new(),
        transfer_batch_size: 8192,
        broker_addr: "127.0.0.1:1".into(),
    };
    let stop = Rc::new(Cell::new(false));
    let (m2, s2) = (ms.clone(), stop.clone());
    glommio::spawn_local(async move {
        while !s2.get() {
            let Ok(mut s) = listener.accept().await else {
                return;
            };
            let ms = m2.clone();
            glommio::spawn_local(async move {
                let Ok(h) = ha::read_handshake(&mut s).await else {
                    return;
                };
                if let Err(reason) = ha::check_handshake(&h, 1, NAME) {
                    ha::refuse(s, &reason).await;
                    return;
                }
                let _ = ha::serve_slave(s, ms, &h).await;
            })
            .detach();
        }
    })
    .detach();
    (addr, ms, stop)
}

/// A controller-mode slave (broker id `broker_id`) replicating `store` from `addr`.
pub fn start_slave(
    store: &MessageStore,
    addr: SocketAddr,
    broker_id: i64,
) -> (Rc<ha::SlaveStatus>, Rc<Cell<bool>>) {
    let status = Rc::new(ha::SlaveStatus::default());
    let stop = Rc::new(Cell::new(false));
    let s = stop.clone();
    glommio::spawn_local(ha::run_slave(
        store.clone(),
        Rc::new(ha::SlaveConfig {
            broker_name: NAME.into(),
            shard_count: 1,
            max_frame: 64 * 1024,
            broker_id,
            protocol: ha::MasterProtocol::Native,
        }),
        Rc::new(move || Some(addr)),
        status.clone(),
        Rc::new(move || s.get()),
    ))
    .detach();
    (status, stop)
}

pub async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
}

/// Stops a slave and waits for its connection to end on the master.
pub async fn stop_slave(stop: &Cell<bool>, status: &ha::SlaveStatus, master: &ha::MasterShard) {
    stop.set(true);
    wait_until("the slave to stop", Duration::from_secs(30), || {
        !status.connected.get() && master.watermark.lag().slaves == 0
    })
    .await;
}

/// Watches a slave for `how_long`: fails if it ever replicated (connected, a frame, a refused
/// frame) or the master ever counted it.
pub async fn assert_stays_out(
    what: &str,
    how_long: Duration,
    status: &ha::SlaveStatus,
    master: &ha::MasterShard,
) {
    let start = Instant::now();
    while start.elapsed() < how_long {
        assert!(!status.connected.get(), "{what}: the slave replicates");
        assert_eq!(status.frames.get(), 0, "{what}: the slave appended frames");
        assert_eq!(
            status.rejected.get(),
            0,
            "{what}: the slave was sent frames"
        );
        assert_eq!(
            master.watermark.lag().slaves,
            0,
            "{what}: the master counts the slave"
        );
        glommio::timer::sleep(Duration::from_millis(2)).await;
    }
}

/// The whole CommitLog of a store.
pub async fn log_bytes(store: &MessageStore) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = store.min_physical_offset();
    let end = store.max_physical_offset();
    while at < end {
        let b = store.read_commitlog(at, 1 << 20).await.expect("read log");
        assert!(!b.is_empty(), "log unreadable at {at}");
        at += b.len() as i64;
        out.extend_from_slice(&b);
    }
    out
}

/// Fails naming the first differing byte (the logs are too large to print).
pub async fn assert_same_log(a: &MessageStore, b: &MessageStore) {
    let (x, y) = (log_bytes(a).await, log_bytes(b).await);
    if x != y {
        let at = x.iter().zip(&y).position(|(p, q)| p != q);
        panic!(
            "logs differ: {} and {} bytes, first difference at {at:?}",
            x.len(),
            y.len()
        );
    }
}

/// Every message body of both queues, in queue order.
pub async fn bodies(store: &MessageStore) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for q in 0..2 {
        let mut off = 0;
        loop {
            let r = store
                .get_messages("CutT", q, off, 32, 1 << 20, None)
                .await
                .expect("get");
            if r.records.is_empty() {
                break;
            }
            for rec in &r.records {
                let v = protocol::message::record::decode_view(rec, true).expect("record");
                out.push(v.body.to_vec());
            }
            off = r.next_begin_offset;
        }
    }
    out
}

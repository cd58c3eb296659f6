//! Heap allocations per SEND_MESSAGE_V2 request, from the socket to the CommitLog append and back:
//! the broker runs in this process (one shard, its own temp store, a free loopback port) under a
//! counting global allocator, and a blocking client that allocates nothing per message sends the same
//! pre-encoded frame (JSON header, then ROCKETMQ header) and reads each answer into a fixed buffer.
//! The broker's background work (flusher, timers, stats) is measured in an idle window of the same
//! length and reported beside it. Run: `cargo bench -p broker --bench send_allocations`.

// Bench code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use protocol::frame::encode_frame;
use protocol::request_code::SEND_MESSAGE_V2;
use protocol::{RemotingCommand, SerializeType};

/// The system allocator, counting calls.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const WARMUP: usize = 1_000;
/// Sends measured per header type; `SENDS` overrides it.
fn measured() -> usize {
    std::env::var("SENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000)
}

/// SEND_MESSAGE_V2 as the Java client 4.9.8 sends it (the codec bench's request).
fn send_v2(serialize_type: SerializeType) -> Vec<u8> {
    let cmd = RemotingCommand::request(SEND_MESSAGE_V2)
        .with_opaque(123_456)
        .with_serialize_type(serialize_type)
        .with_ext("a", "please_rename_unique_group_name")
        .with_ext("b", "AllocTopic")
        .with_ext("c", "TBW102")
        .with_ext("d", "4")
        .with_ext("e", "0")
        .with_ext("f", "0")
        .with_ext("g", "1700000000000")
        .with_ext("h", "0")
        .with_ext("i", "KEYS\u{1}OrderID188\u{2}UNIQ_KEY\u{1}7F0000011F9C18B4AAC2156E4A3C0000\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}")
        .with_ext("j", "0")
        .with_ext("k", "false")
        .with_ext("m", "false")
        .with_ext("n", "broker-a")
        .with_body(vec![b'x'; 128]);
    let mut out = BytesMut::new();
    encode_frame(&cmd, &mut out).unwrap();
    out.to_vec()
}

/// Sends `frame` and reads the answer; returns the answer's header bytes count (non-zero).
fn round_trip(stream: &mut TcpStream, frame: &[u8], answer: &mut [u8]) -> usize {
    stream.write_all(frame).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let len = u32::from_be_bytes(len) as usize;
    let rest = answer.get_mut(..len).expect("answer fits");
    stream.read_exact(rest).unwrap();
    len
}

fn free_port() -> u16 {
    // The broker also listens on port - 2 (RocketMQ's fast port): pick ports where both are free.
    loop {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port > 2048 && TcpListener::bind((Ipv4Addr::LOCALHOST, port - 2)).is_ok() {
            return port;
        }
    }
}

fn main() {
    let store = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = store.path().join("broker.toml");
    std::fs::write(
        &config,
        format!(
            "brokerName = \"broker-a\"\nbrokerClusterName = \"AllocCluster\"\nbrokerIP1 = \"127.0.0.1\"\n\
             listenPort = {port}\nstorePathRootDir = \"{}\"\nshardCount = 1\nnamesrvAddr = \"\"\n\
             mappedFileSizeCommitLog = 67108864\n",
            store.path().join("store").display()
        ),
    )
    .unwrap();
    let (cfg, _) = broker::config::load(&config).unwrap();
    std::thread::spawn(move || broker::run(cfg));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let started = Instant::now();
    let mut stream = loop {
        match TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(_) if started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("broker did not start: {e}"),
        }
    };
    stream.set_nodelay(true).unwrap();
    let mut answer = vec![0u8; 1 << 16];
    let sends = measured();
    println!(
        "allocations per SEND_MESSAGE_V2 (broker in-process, 1 shard, 128 B body, {sends} sends)"
    );
    for (name, serialize_type) in [
        ("JSON", SerializeType::Json),
        ("ROCKETMQ", SerializeType::RocketMq),
    ] {
        let frame = send_v2(serialize_type);
        for _ in 0..WARMUP {
            round_trip(&mut stream, &frame, &mut answer);
        }
        // The answer must be a SUCCESS: its code is the first field of either header (after the
        // serialize-type/header-length word).
        let len = round_trip(&mut stream, &frame, &mut answer);
        let head = String::from_utf8_lossy(answer.get(..len.min(300)).unwrap_or(&[])).into_owned();
        assert!(
            head.contains("\"code\":0,") || answer.get(4..6) == Some(&[0, 0]),
            "send failed: {head}"
        );
        let (a0, r0) = (
            ALLOCS.load(Ordering::Relaxed),
            REALLOCS.load(Ordering::Relaxed),
        );
        let t0 = Instant::now();
        for _ in 0..sends {
            round_trip(&mut stream, &frame, &mut answer);
        }
        let took = t0.elapsed();
        let (a1, r1) = (
            ALLOCS.load(Ordering::Relaxed),
            REALLOCS.load(Ordering::Relaxed),
        );
        std::thread::sleep(took);
        let (a2, r2) = (
            ALLOCS.load(Ordering::Relaxed),
            REALLOCS.load(Ordering::Relaxed),
        );
        let per = |n: u64| n as f64 / sends as f64;
        println!(
            "{name:>9}: {:.2} allocs + {:.2} reallocs per send ({:.1} µs per round trip); \
             idle window of the same length: {:.2} + {:.2} per send-equivalent",
            per(a1 - a0),
            per(r1 - r0),
            took.as_secs_f64() * 1e6 / sends as f64,
            per(a2 - a1),
            per(r2 - r1),
        );
    }
    // The broker thread never returns on its own; the process exit ends it and the temp store goes.
    drop(stream);
    drop(store);
    std::process::exit(0);
}

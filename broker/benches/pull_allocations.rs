//! Heap allocations and bytes allocated per PULL_MESSAGE of 32 messages of 1 KiB, from the socket
//! to the store's read and back: the broker runs in this process (one shard, its own temp store, a
//! free loopback port) under a counting global allocator. A blocking client stores the backlog first
//! (SEND_MESSAGE_V2 to queue 0, 1 KiB bodies), then pulls it 32 at a time with frames encoded before
//! the measured window (so the client allocates nothing in it) and reads each answer into a fixed
//! buffer, checking that it is a FOUND of 32 messages. The broker's background work is measured in an
//! idle window of the same length and reported beside it. Run:
//! `cargo bench -p broker --bench pull_allocations --profile dev`.
//! With `ALLOC_TRACE=n` it also records a backtrace for every allocation made during `n` more pulls
//! and prints them grouped by call site, most frequent first, then the counts per pull of the
//! connection's tasks (the pull path: request, handler, response writing), the executor's park/wake
//! and the other tasks. `PULLS` sets the number of measured pulls (default 1,000).

// Bench code: a broken expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use bytes::BytesMut;
use protocol::frame::encode_frame;
use protocol::request_code::{PULL_MESSAGE, SEND_MESSAGE_V2};
use protocol::{RemotingCommand, SerializeType};

/// The system allocator, counting calls and bytes.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes asked for by allocations, plus the new size of every reallocation.
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Set while `ALLOC_TRACE` pulls run: every allocation records its backtrace.
static TRACING: AtomicBool = AtomicBool::new(false);
static TRACES: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

thread_local! {
    /// Set while this thread records a backtrace (which allocates itself).
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

/// Records where an allocation of `size` bytes comes from, when tracing and not inside a trace.
fn trace(kind: &str, size: usize) {
    if !TRACING.load(Ordering::Relaxed) || IN_TRACE.with(Cell::get) {
        return;
    }
    IN_TRACE.with(|t| t.set(true));
    let bt = std::backtrace::Backtrace::force_capture().to_string();
    let category = if bt.contains("serve_connection")
        || bt.contains("BrokerHandler")
        || bt.contains("write_loop")
    {
        "pull path (connection tasks)"
    } else if ["glommio::reactor", "glommio::parking", "glommio::sys"]
        .iter()
        .any(|c| bt.contains(c))
        && !bt.contains("Task::run")
    {
        "executor (park, wake, timers)"
    } else {
        "other tasks (flusher, timers, stats)"
    };
    let frames: Vec<&str> = bt
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("at ") && !l.contains("pull_allocations::"))
        .filter_map(|l| l.split_once(": ").map(|(_, name)| name))
        .filter(|name| {
            ![
                "alloc::alloc",
                "raw_vec",
                "alloc_impl",
                "box_new",
                "Global",
                "finish_grow",
                "__rust",
            ]
            .iter()
            .any(|c| name.contains(c))
        })
        .take(16)
        .collect();
    let entry = format!("{category}: {kind}\n    {}", frames.join("\n    "));
    TRACES.lock().unwrap().push((entry, size as u64));
    IN_TRACE.with(|t| t.set(false));
}

// SAFETY: every call is passed on unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        trace("alloc", layout.size());
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        trace("alloc_zeroed", layout.size());
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        trace("realloc", new_size);
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

const TOPIC: &str = "PullAllocTopic";
const GROUP: &str = "PullAllocGroup";
/// Messages per pull and body size.
const BATCH: usize = 32;
const BODY: usize = 1024;
const WARMUP: usize = 200;

fn measured() -> usize {
    std::env::var("PULLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

fn counters() -> (u64, u64, u64) {
    (
        ALLOCS.load(Ordering::Relaxed),
        REALLOCS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    )
}

/// SEND_MESSAGE_V2 of one 1 KiB message to queue 0, as the Java client sends it.
fn send_frame() -> Vec<u8> {
    let cmd = RemotingCommand::request(SEND_MESSAGE_V2)
        .with_opaque(1)
        .with_serialize_type(SerializeType::RocketMq)
        .with_ext("a", "PullAllocProducer")
        .with_ext("b", TOPIC)
        .with_ext("c", "TBW102")
        .with_ext("d", "1")
        .with_ext("e", "0")
        .with_ext("f", "0")
        .with_ext("g", "1700000000000")
        .with_ext("h", "0")
        .with_ext(
            "i",
            "UNIQ_KEY\u{1}7F0000011F9C18B4AAC2156E4A3C0000\u{2}WAIT\u{1}true\u{2}",
        )
        .with_ext("j", "0")
        .with_ext("k", "false")
        .with_ext("m", "false")
        .with_ext("n", "broker-a")
        .with_body(vec![b'x'; BODY]);
    let mut out = BytesMut::new();
    encode_frame(&cmd, &mut out).unwrap();
    out.to_vec()
}

/// PULL_MESSAGE of `BATCH` messages from queue 0 at `offset`, no suspend, no offset commit.
fn pull_frame(offset: usize) -> Vec<u8> {
    let cmd = RemotingCommand::request(PULL_MESSAGE)
        .with_opaque(2)
        .with_serialize_type(SerializeType::RocketMq)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", "0")
        .with_ext("queueOffset", &offset.to_string())
        .with_ext("maxMsgNums", &BATCH.to_string())
        .with_ext("sysFlag", "0")
        .with_ext("commitOffset", "0")
        .with_ext("suspendTimeoutMillis", "0")
        .with_ext("subVersion", "0")
        .with_ext("expressionType", "TAG");
    let mut out = BytesMut::new();
    encode_frame(&cmd, &mut out).unwrap();
    out.to_vec()
}

/// Sends `frame` and reads the answer into `answer`; returns the answer's frame length.
fn round_trip(stream: &mut TcpStream, frame: &[u8], answer: &mut [u8]) -> usize {
    stream.write_all(frame).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let len = u32::from_be_bytes(len) as usize;
    let rest = answer.get_mut(..len).expect("answer fits");
    stream.read_exact(rest).unwrap();
    len
}

/// Checks that an answer (frame without its length prefix, ROCKETMQ header) is a SUCCESS whose
/// body holds `BATCH` records.
fn check_found(answer: &[u8], len: usize) {
    let word = u32::from_be_bytes(answer.get(..4).unwrap().try_into().unwrap());
    let header_len = (word & 0x00FF_FFFF) as usize;
    assert_eq!(answer.get(4..6), Some(&[0u8, 0][..]), "pull not FOUND");
    let mut body = answer.get(4 + header_len..len).unwrap();
    let mut records = 0;
    while !body.is_empty() {
        let size = i32::from_be_bytes(body.get(..4).unwrap().try_into().unwrap()) as usize;
        assert!(size > BODY && size <= body.len(), "bad record size {size}");
        body = body.get(size..).unwrap();
        records += 1;
    }
    assert_eq!(records, BATCH, "records in the answer");
}

fn main() {
    let (store, mut stream) = common::start_broker(268435456);
    let mut answer = vec![0u8; 1 << 20];
    let pulls = measured();
    let trace_pulls = std::env::var("ALLOC_TRACE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let total_pulls = WARMUP + pulls + trace_pulls;
    let send = send_frame();
    for _ in 0..total_pulls * BATCH {
        let len = round_trip(&mut stream, &send, &mut answer);
        assert_eq!(answer.get(4..6), Some(&[0u8, 0][..]), "send failed ({len})");
    }
    let frames: Vec<Vec<u8>> = (0..total_pulls).map(|i| pull_frame(i * BATCH)).collect();
    let mut frames = frames.iter();
    println!(
        "allocations per PULL_MESSAGE of {BATCH} x {BODY} B (broker in-process, 1 shard, {pulls} pulls)"
    );
    for frame in frames.by_ref().take(WARMUP) {
        let len = round_trip(&mut stream, frame, &mut answer);
        check_found(&answer, len);
    }
    let (a0, r0, b0) = counters();
    let t0 = Instant::now();
    let mut answered = 0u64;
    for frame in frames.by_ref().take(pulls) {
        answered += round_trip(&mut stream, frame, &mut answer) as u64;
    }
    let took = t0.elapsed();
    let (a1, r1, b1) = counters();
    std::thread::sleep(took);
    let (a2, r2, b2) = counters();
    let per = |n: u64| n as f64 / pulls as f64;
    println!(
        "pull: {:.2} allocs + {:.2} reallocs, {:.0} bytes allocated per pull ({:.0} bytes answered, \
         {:.1} µs per round trip); idle window of the same length: {:.2} + {:.2}, {:.0} bytes per \
         pull-equivalent",
        per(a1 - a0),
        per(r1 - r0),
        per(b1 - b0),
        per(answered),
        took.as_secs_f64() * 1e6 / pulls as f64,
        per(a2 - a1),
        per(r2 - r1),
        per(b2 - b1),
    );
    if trace_pulls > 0 {
        TRACING.store(true, Ordering::Relaxed);
        for frame in frames.by_ref().take(trace_pulls) {
            round_trip(&mut stream, frame, &mut answer);
        }
        TRACING.store(false, Ordering::Relaxed);
        let traces = std::mem::take(&mut *TRACES.lock().unwrap());
        let mut sites: HashMap<String, (usize, u64)> = HashMap::new();
        let mut categories: HashMap<String, (usize, u64)> = HashMap::new();
        for (t, size) in traces {
            let head = t.lines().next().unwrap_or("");
            let category = head.split(": ").next().unwrap_or("").to_owned();
            let c = categories.entry(category).or_default();
            c.0 += 1;
            c.1 += size;
            let s = sites.entry(t).or_default();
            s.0 += 1;
            s.1 += size;
        }
        let mut sites: Vec<_> = sites.into_iter().collect();
        sites.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
        let n = trace_pulls as f64;
        println!("allocation sites over {trace_pulls} pulls, per pull (count, bytes):");
        for (site, (count, size)) in sites {
            println!("{:.2} {:.0} B {site}", count as f64 / n, size as f64 / n);
        }
        let mut categories: Vec<_> = categories.into_iter().collect();
        categories.sort();
        for (category, (count, size)) in categories {
            println!(
                "{category}: {:.2} allocations, {:.0} bytes per pull",
                count as f64 / n,
                size as f64 / n
            );
        }
    }
    drop(stream);
    drop(store);
    std::process::exit(0);
}

//! Heap allocations per SEND_MESSAGE_V2 request, from the socket to the CommitLog append and back:
//! the broker runs in this process (one shard, its own temp store, a free loopback port) under a
//! counting global allocator, and a blocking client that allocates nothing per message sends the same
//! pre-encoded frame (JSON header, then ROCKETMQ header) and reads each answer into a fixed buffer.
//! The broker's background work (flusher, timers, stats) is measured in an idle window of the same
//! length and reported beside it. Run: `cargo bench -p broker --bench send_allocations`.
//! With `ALLOC_TRACE=n` it also records a backtrace for every allocation made during `n` more sends
//! (ROCKETMQ header; `TRACE_HEADER=JSON` for JSON) and prints them grouped by call site, most frequent
//! first, then the counts per send of the connection's task (the send path), the executor's
//! park/wake and the other tasks: where the count comes
//! from (the dev profile keeps line tables for the workspace's crates). `DELAY_LEVEL=n` sends delayed
//! messages instead (parked in the schedule topic by the send path).

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
use protocol::request_code::SEND_MESSAGE_V2;
use protocol::{RemotingCommand, SerializeType};

/// The system allocator, counting calls.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);
/// Set while `ALLOC_TRACE` sends run: every allocation records its backtrace.
static TRACING: AtomicBool = AtomicBool::new(false);
static TRACES: Mutex<Vec<String>> = Mutex::new(Vec::new());

thread_local! {
    /// Set while this thread records a backtrace (which allocates itself).
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
}

/// Records where an allocation comes from, when tracing and not already inside a trace.
fn trace(kind: &str) {
    if !TRACING.load(Ordering::Relaxed) || IN_TRACE.with(Cell::get) {
        return;
    }
    IN_TRACE.with(|t| t.set(true));
    let bt = std::backtrace::Backtrace::force_capture().to_string();
    // The connection's task (request decode, handler, answer) is the send path; the executor's
    // park/wake (reactor, timers, io_uring submission) and the other tasks (flusher, timers, stats)
    // are counted apart.
    let category = if bt.contains("serve_connection") || bt.contains("BrokerHandler") {
        "send path (connection task)"
    } else if ["glommio::reactor", "glommio::parking", "glommio::sys"]
        .iter()
        .any(|c| bt.contains(c))
        && !bt.contains("Task::run")
    {
        "executor (park, wake, timers)"
    } else {
        "other tasks (flusher, timers, stats)"
    };
    // Keep the frames that name the workspace's crates or glommio, past the allocator's own.
    let frames: Vec<&str> = bt
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("at ") && !l.contains("send_allocations::"))
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
    TRACES.lock().unwrap().push(entry);
    IN_TRACE.with(|t| t.set(false));
}

// SAFETY: every call is passed on unchanged to the system allocator; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        trace("alloc");
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        trace("alloc_zeroed");
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Ordering::Relaxed);
        trace("realloc");
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

/// The message's properties; `DELAY_LEVEL=n` adds a DELAY level (the send path then parks it).
fn properties() -> String {
    let mut props = "KEYS\u{1}OrderID188\u{2}UNIQ_KEY\u{1}7F0000011F9C18B4AAC2156E4A3C0000\u{2}WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}".to_owned();
    if let Ok(level) = std::env::var("DELAY_LEVEL") {
        props.push_str(&format!("DELAY\u{1}{level}\u{2}"));
    }
    props
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
        .with_ext("i", &properties())
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

fn main() {
    let (store, mut stream) = common::start_broker(67108864);
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
    if let Some(n) = std::env::var("ALLOC_TRACE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let (header, serialize_type) = match std::env::var("TRACE_HEADER").as_deref() {
            Ok("JSON") => ("JSON", SerializeType::Json),
            _ => ("ROCKETMQ", SerializeType::RocketMq),
        };
        let frame = send_v2(serialize_type);
        TRACING.store(true, Ordering::Relaxed);
        for _ in 0..n {
            round_trip(&mut stream, &frame, &mut answer);
        }
        TRACING.store(false, Ordering::Relaxed);
        let traces = std::mem::take(&mut *TRACES.lock().unwrap());
        let mut sites: HashMap<String, usize> = HashMap::new();
        let mut categories: HashMap<String, usize> = HashMap::new();
        for t in traces {
            // "category: kind\n..." -> "category, kind"
            let head = t.lines().next().unwrap_or("");
            let category = head.replacen(": ", ", ", 1);
            *categories.entry(category).or_default() += 1;
            *sites.entry(t).or_default() += 1;
        }
        let mut sites: Vec<_> = sites.into_iter().collect();
        sites.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        println!("allocation sites over {n} sends ({header}), per send:");
        for (site, count) in sites {
            println!("{:.2} {site}", count as f64 / n as f64);
        }
        let mut categories: Vec<_> = categories.into_iter().collect();
        categories.sort();
        for (category, count) in categories {
            println!("{category}: {:.2} per send", count as f64 / n as f64);
        }
    }
    // The broker thread never returns on its own; the process exit ends it and the temp store goes.
    drop(stream);
    drop(store);
    std::process::exit(0);
}

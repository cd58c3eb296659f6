//! Slow and hostile peers against a real server on loopback: a peer that stops reading is cut off
//! with bounded buffering while another peer's latency holds; idle connections and slowloris frames
//! are closed; connections past the cap are refused.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::frame::{decode_frame, encode_frame};
use protocol::RemotingCommand;
use remoting::{accept_connections, ConnectionContext, ConnectionGate, ConnectionLimits, Handler};

/// Request code answered with a large body; any other code gets an empty answer.
const BIG: i32 = 1;

struct Counting {
    big_body: usize,
    handled_big: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
}

impl Handler for Counting {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            let mut resp = request.response_to(0, None);
            if request.code == BIG {
                self.handled_big.fetch_add(1, Ordering::SeqCst);
                resp.body = vec![7u8; self.big_body].into();
            }
            Some(resp)
        })
    }

    fn on_close(&self, _ctx: &ConnectionContext) {
        self.closed.fetch_add(1, Ordering::SeqCst);
    }
}

struct Server {
    addr: SocketAddr,
    handled_big: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(limits: ConnectionLimits, max_connections: usize, big_body: usize) -> Server {
    let handled_big = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (h, c, s) = (handled_big.clone(), closed.clone(), stop.clone());
    let thread = LocalExecutorBuilder::default()
        .spawn(move || async move {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            let handler = Rc::new(Counting {
                big_body,
                handled_big: h,
                closed: c,
            });
            let gate = Rc::new(ConnectionGate::new(max_connections));
            accept_connections(listener, handler, limits, gate, async move {
                while !s.load(Ordering::SeqCst) {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                }
            })
            .await;
        })
        .expect("executor");
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server address");
    Server {
        addr,
        handled_big,
        closed,
        stop,
        thread: Some(std::thread::spawn(move || {
            let _ = thread.join();
        })),
    }
}

fn frame(code: i32, opaque: i32) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_frame(
        &RemotingCommand::request(code).with_opaque(opaque),
        &mut buf,
    )
    .expect("encode");
    buf.to_vec()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// One request/response; the round trip time.
fn ping(s: &mut TcpStream, opaque: i32) -> std::io::Result<Duration> {
    let t = Instant::now();
    s.write_all(&frame(2, opaque))?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = u32::from_be_bytes(len) as usize;
    let mut rest = vec![0u8; n];
    s.read_exact(&mut rest)?;
    let mut buf = BytesMut::from(&len[..]);
    buf.extend_from_slice(&rest);
    let resp = decode_frame(&mut buf)
        .map_err(|e| std::io::Error::other(e.to_string()))?
        .ok_or_else(|| std::io::Error::other("short frame"))?;
    assert_eq!(resp.opaque, opaque);
    Ok(t.elapsed())
}

/// Whether the server closed `s` within `limit` (EOF or reset on read).
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let mut buf = [0u8; 4096];
    while t.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(t.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return Some(t.elapsed()),
        }
    }
    None
}

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

fn sysctl_max(path: &str) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.split_whitespace().last().and_then(|v| v.parse().ok()))
        .unwrap_or(8 << 20)
}

#[test]
fn a_peer_that_stops_reading_is_cut_off_with_bounded_buffering() {
    const BODY: usize = 256 * 1024;
    const SENT: usize = 1000;
    let limits = ConnectionLimits {
        max_in_flight: 16,
        max_pending_response_bytes: 512 * 1024,
        write_stall_timeout: Some(Duration::from_secs(2)),
        idle_timeout: None,
        frame_timeout: None,
    };
    let server = start(limits.clone(), 100, BODY);
    let mut good = connect(server.addr);
    let before: Vec<Duration> = (0..300)
        .map(|i| ping(&mut good, i).expect("ping"))
        .collect();

    // The hostile peer asks for 1000 large responses and never reads one.
    let mut hostile = connect(server.addr);
    let mut burst = Vec::new();
    for i in 0..SENT {
        burst.extend_from_slice(&frame(BIG, i as i32));
    }
    let (release, released) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let _ = hostile.write_all(&burst);
        // Keep the socket open and unread until the test is done: only the server may end it.
        let _ = released.recv_timeout(Duration::from_secs(60));
        drop(hostile);
    });
    std::thread::sleep(Duration::from_millis(300));
    let during: Vec<Duration> = (0..300)
        .map(|i| ping(&mut good, 1000 + i).expect("ping"))
        .collect();

    let t = Instant::now();
    while server.closed.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let closed = server.closed.load(Ordering::SeqCst);
    let _ = release.send(());
    assert_eq!(closed, 1, "the non-reading peer was not disconnected");
    // What may be produced: both kernels' socket buffers, the byte budget, the in-flight requests.
    let kernel =
        sysctl_max("/proc/sys/net/ipv4/tcp_wmem") + sysctl_max("/proc/sys/net/ipv4/tcp_rmem");
    let bound = kernel / BODY + limits.max_in_flight + (512 * 1024) / BODY + 4;
    let handled = server.handled_big.load(Ordering::SeqCst);
    assert!(
        handled <= bound && handled < SENT,
        "{handled} of {SENT} large responses produced for a peer that reads nothing (bound {bound})"
    );
    let (b, d) = (p99(before), p99(during));
    eprintln!("well-behaved peer p99: {b:?} before, {d:?} while the other stalls; {handled} responses produced");
    assert!(
        d <= b * 5 + Duration::from_millis(20),
        "p99 {d:?} while stalled vs {b:?} before"
    );
    // The well-behaved connection still works after the other one is gone.
    ping(&mut good, 9999).expect("ping after");
    let _ = release.send(());
    let _ = writer.join();
}

#[test]
fn idle_connections_are_closed_and_busy_ones_kept() {
    let limits = ConnectionLimits {
        idle_timeout: Some(Duration::from_millis(400)),
        frame_timeout: None,
        ..ConnectionLimits::new(16)
    };
    let server = start(limits, 100, 0);
    let mut idle = connect(server.addr);
    let mut busy = connect(server.addr);
    let busy_thread = std::thread::spawn(move || {
        for i in 0..15 {
            ping(&mut busy, i).expect("a connection in use must stay open");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let took =
        closed_within(&mut idle, Duration::from_secs(5)).expect("idle connection was not closed");
    assert!(
        took >= Duration::from_millis(300),
        "closed after {took:?}, before the idle limit"
    );
    busy_thread.join().expect("busy client");
}

#[test]
fn a_frame_dribbled_byte_by_byte_is_cut_off() {
    let limits = ConnectionLimits {
        frame_timeout: Some(Duration::from_millis(500)),
        ..ConnectionLimits::new(16)
    };
    let server = start(limits, 100, 0);

    // A frame sent in a few quick pieces is fine.
    let mut ok = connect(server.addr);
    let f = frame(2, 1);
    for piece in f.chunks(f.len() / 3 + 1) {
        ok.write_all(piece).expect("write");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut len = [0u8; 4];
    ok.read_exact(&mut len)
        .expect("answer to a frame sent in pieces");

    // One byte every 100 ms: the whole frame would take seconds.
    let mut slow = connect(server.addr);
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let f = frame(2, 2);
    let t = Instant::now();
    let mut cut = None;
    for byte in &f {
        if slow.write_all(&[*byte]).is_err() {
            cut = Some(t.elapsed());
            break;
        }
        let mut buf = [0u8; 16];
        match slow.read(&mut buf) {
            Ok(0) => {
                cut = Some(t.elapsed());
                break;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Ok(n) => panic!("{n} unexpected bytes on the slowloris connection"),
            // A reset is the server closing too (it shut the socket while we were still writing).
            Err(_) => {
                cut = Some(t.elapsed());
                break;
            }
        }
    }
    let cut = cut.expect("the slowloris connection was never closed");
    assert!(cut < Duration::from_secs(4), "closed only after {cut:?}");
    assert!(
        cut >= Duration::from_millis(400),
        "closed after {cut:?}, before the frame limit"
    );
}

#[test]
fn connections_past_the_maximum_are_refused() {
    let server = start(ConnectionLimits::new(16), 4, 0);
    let mut open: Vec<TcpStream> = (0..4).map(|_| connect(server.addr)).collect();
    for (i, s) in open.iter_mut().enumerate() {
        ping(s, i as i32).expect("connection within the maximum");
    }
    let mut extra = connect(server.addr);
    assert!(
        ping(&mut extra, 10).is_err(),
        "a fifth connection was served"
    );
    // Once one closes, a new one is admitted.
    drop(open.pop());
    let t = Instant::now();
    loop {
        let mut again = connect(server.addr);
        if ping(&mut again, 11).is_ok() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no slot freed after a close"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for s in open.iter_mut() {
        ping(s, 12).expect("admitted connections keep working");
    }
}

#[test]
fn a_slow_peer_that_keeps_reading_is_not_cut_off() {
    // Each response is a write of its own (over the 1 MiB batch), and takes the reader ~2 s at its
    // rate: twice the stall limit. A peer that takes bytes all the while has not stalled.
    const BODY: usize = 3 * 1024 * 1024;
    const RESPONSES: i32 = 3;
    const RATE: f64 = 1.5e6;
    let limits = ConnectionLimits {
        max_in_flight: 16,
        max_pending_response_bytes: 64 * 1024 * 1024,
        write_stall_timeout: Some(Duration::from_secs(1)),
        idle_timeout: None,
        frame_timeout: None,
    };
    let server = start(limits, 100, BODY);
    let mut slow = connect(server.addr);
    // A small receive buffer, so that the server's writes wait for this reader's pace.
    let small: libc::c_int = 64 * 1024;
    // SAFETY: setsockopt on a socket this test owns, with a correctly sized int.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&slow),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let mut burst = Vec::new();
    for i in 0..RESPONSES {
        burst.extend_from_slice(&frame(BIG, i));
    }
    slow.write_all(&burst).expect("requests sent");
    // Let the server fill every buffer on the way, then read steadily at RATE.
    std::thread::sleep(Duration::from_millis(300));
    let began = Instant::now();
    let mut received = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let complete = |bytes: &[u8]| {
        let mut buf = BytesMut::from(bytes);
        let mut n = 0;
        while let Ok(Some(_)) = decode_frame(&mut buf) {
            n += 1;
        }
        n
    };
    while began.elapsed() < Duration::from_secs(30) {
        let due = Duration::from_secs_f64(received.len() as f64 / RATE);
        if let Some(wait) = due.checked_sub(began.elapsed()) {
            std::thread::sleep(wait);
        }
        match slow.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => received.extend_from_slice(&chunk[..n]),
        }
        if received.len() >= RESPONSES as usize * BODY && complete(&received) == RESPONSES {
            break;
        }
    }
    let took = began.elapsed();
    let mut buf = BytesMut::from(&received[..]);
    let mut opaques = Vec::new();
    while let Ok(Some(resp)) = decode_frame(&mut buf) {
        assert_eq!(resp.body.len(), BODY);
        opaques.push(resp.opaque);
    }
    eprintln!(
        "slow reader: {} B in {took:?}, responses {opaques:?}, server closed {} connection(s)",
        received.len(),
        server.closed.load(Ordering::SeqCst)
    );
    assert_eq!(
        opaques,
        (0..RESPONSES).collect::<Vec<_>>(),
        "a reader taking bytes all the while was cut off after {took:?}"
    );
    assert_eq!(server.closed.load(Ordering::SeqCst), 0);
    // The bound it must not enforce: the reading took longer than the stall limit, several times.
    assert!(
        took > Duration::from_secs(3),
        "the reader was not slow: {took:?}"
    );
}

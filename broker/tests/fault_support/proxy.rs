//! A loopback TCP proxy that injects network faults between two of our processes: it forwards, delays,
//! reorders across connections, limits bandwidth, stalls (holds bytes, keeps the connections open),
//! refuses new connections, or cuts the open ones (with a reset), optionally after letting a given
//! number of client bytes through (a torn frame). It counts the bytes it carried and the chunks that
//! overtook one another.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward at once.
    Pass,
    /// Forward each chunk after this delay.
    Delay(Duration),
    /// Hold every byte (both directions) and keep connections open: a black hole.
    Stall,
    /// Accept new connections and close them at once; open ones keep working.
    Refuse,
    /// At most this many bytes per second in each direction of each connection (a slow link).
    Bandwidth(u64),
    /// `Bandwidth`, and each chunk (at most 64 KiB) held this much longer: a slow, distant link. The
    /// hold is not pipelined: it lowers the rate too, a little.
    BandwidthHold(u64, Duration),
    /// Hold each chunk read for a random delay in `0..=max` (drawn per chunk from a generator seeded
    /// with `seed` and the connection's number), so that what two connections write in one order
    /// arrives in the other. Bytes of one connection keep their order: reordering them would corrupt
    /// the TCP stream, which no network does (TCP reassembles what IP reorders).
    Reorder { max: Duration, seed: u64 },
    /// What the connections accepted before the `n`th carry is read and thrown away, both ways
    /// (requests that never arrive, on a link that will not recover); their closes still pass.
    /// Connections accepted later pass.
    DiscardOlderThan(u64),
}

struct Conn {
    client: TcpStream,
    upstream: TcpStream,
    dead: AtomicBool,
    /// Client-to-upstream bytes still allowed through before the connection is cut (u64::MAX: no limit).
    budget: AtomicU64,
    /// Directions that have finished (the connection is gone when both have).
    pumps_done: AtomicU8,
    /// The connection's number in accept order (seeds its reordering delays).
    number: u64,
}

impl Conn {
    /// Closes both sides with a reset (SO_LINGER 0), as a crashed peer or a middlebox would.
    fn cut(&self) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        for s in [&self.client, &self.upstream] {
            set_linger_zero(s);
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn set_linger_zero(s: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on an fd we own, with a correctly sized linger struct.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

struct State {
    mode: Mutex<Mode>,
    changed: Condvar,
    conns: Mutex<Vec<Arc<Conn>>>,
    stopping: AtomicBool,
    accepted: AtomicU64,
    /// Bytes written to the upstream side, and to the client side.
    to_upstream: AtomicU64,
    to_client: AtomicU64,
    /// Chunks numbered in the order they were read, from every connection and direction.
    chunks_read: AtomicU64,
    /// The highest number of a chunk written so far.
    newest_written: AtomicU64,
    /// Chunks written after a chunk read later than them (on another connection) was written.
    overtaken: AtomicU64,
}

/// A running proxy from `addr()` to an upstream address. Dropping it stops it and cuts everything.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept_thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub fn start(upstream: SocketAddr) -> FaultProxy {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), upstream)
    }

    /// Listens on `listen` (port 0: a free one) and forwards to `upstream`.
    pub fn start_on(listen: SocketAddr, upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind(listen).expect("proxy binds");
        let addr = listener.local_addr().expect("proxy address");
        let state = Arc::new(State {
            mode: Mutex::new(Mode::Pass),
            changed: Condvar::new(),
            conns: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            to_upstream: AtomicU64::new(0),
            to_client: AtomicU64::new(0),
            chunks_read: AtomicU64::new(0),
            newest_written: AtomicU64::new(0),
            overtaken: AtomicU64::new(0),
        });
        let st = state.clone();
        let accept_thread = std::thread::spawn(move || accept_loop(listener, upstream, st));
        FaultProxy {
            addr,
            state,
            accept_thread: Some(accept_thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.state.mode) = mode;
        self.state.changed.notify_all();
    }

    pub fn mode(&self) -> Mode {
        *lock(&self.state.mode)
    }

    /// Resets every open connection now.
    pub fn cut_all(&self) {
        let conns = std::mem::take(&mut *lock(&self.state.conns));
        for c in conns {
            c.cut();
        }
        self.state.changed.notify_all();
    }

    /// Lets `bytes` more client-to-upstream bytes through on every open connection, then resets it.
    pub fn cut_all_after(&self, bytes: u64) {
        for c in lock(&self.state.conns).iter() {
            c.budget.store(bytes, Ordering::Release);
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.state.accepted.load(Ordering::Acquire)
    }

    /// Bytes carried so far: (client to upstream, upstream to client).
    pub fn bytes_carried(&self) -> (u64, u64) {
        (
            self.state.to_upstream.load(Ordering::Acquire),
            self.state.to_client.load(Ordering::Acquire),
        )
    }

    /// Chunks forwarded while reordering (`Mode::Reorder`) that arrived after a chunk read later
    /// than them on another connection or direction: how much reordering actually happened.
    pub fn reordered_chunks(&self) -> u64 {
        self.state.overtaken.load(Ordering::Acquire)
    }

    /// Connections currently open through the proxy.
    pub fn open_connections(&self) -> usize {
        let mut conns = lock(&self.state.conns);
        conns.retain(|c| !c.dead.load(Ordering::Acquire));
        conns.len()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.stopping.store(true, Ordering::Release);
        self.cut_all();
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn accept_loop(listener: TcpListener, upstream: SocketAddr, state: Arc<State>) {
    for incoming in listener.incoming() {
        if state.stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = incoming else { continue };
        let number = state.accepted.fetch_add(1, Ordering::AcqRel);
        if *lock(&state.mode) == Mode::Refuse {
            set_linger_zero(&client);
            drop(client);
            continue;
        }
        let Ok(upstream) = TcpStream::connect_timeout(&upstream, Duration::from_secs(2)) else {
            set_linger_zero(&client);
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let conn = Arc::new(Conn {
            client,
            upstream,
            dead: AtomicBool::new(false),
            budget: AtomicU64::new(u64::MAX),
            pumps_done: AtomicU8::new(0),
            number,
        });
        lock(&state.conns).push(conn.clone());
        for to_upstream in [true, false] {
            let (conn, state) = (conn.clone(), state.clone());
            std::thread::spawn(move || pump(conn, state, to_upstream));
        }
    }
}

/// Blocks while the proxy stalls; false when the connection died meanwhile.
fn wait_while_stalled(conn: &Conn, state: &State) -> bool {
    let mut mode = lock(&state.mode);
    while *mode == Mode::Stall && !conn.dead.load(Ordering::Acquire) {
        mode = state
            .changed
            .wait_timeout(mode, Duration::from_millis(50))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
    !conn.dead.load(Ordering::Acquire)
}

fn pump(conn: Arc<Conn>, state: Arc<State>, to_upstream: bool) {
    let (mut src, mut dst) = if to_upstream {
        (&conn.client, &conn.upstream)
    } else {
        (&conn.upstream, &conn.client)
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut rng = None;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = state.chunks_read.fetch_add(1, Ordering::AcqRel) + 1;
        if !wait_while_stalled(&conn, &state) {
            return;
        }
        let mode = *lock(&state.mode);
        if matches!(mode, Mode::DiscardOlderThan(n) if conn.number < n) {
            continue;
        }
        let delay = match mode {
            Mode::Delay(d) => Some(d),
            Mode::Bandwidth(rate) => Some(Duration::from_secs_f64(n as f64 / rate.max(1) as f64)),
            Mode::BandwidthHold(rate, hold) => {
                Some(Duration::from_secs_f64(n as f64 / rate.max(1) as f64) + hold)
            }
            Mode::Reorder { max, seed } => {
                let rng = rng.get_or_insert_with(|| {
                    SplitMix64(seed ^ (conn.number << 1 | u64::from(to_upstream)))
                });
                let max_us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
                Some(Duration::from_micros(rng.next() % max_us.saturating_add(1)))
            }
            _ => None,
        };
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        let mut len = n;
        let mut cut_after = false;
        if to_upstream {
            let budget = conn.budget.load(Ordering::Acquire);
            if budget != u64::MAX {
                len = len.min(usize::try_from(budget).unwrap_or(usize::MAX));
                conn.budget
                    .store(budget.saturating_sub(len as u64), Ordering::Release);
                cut_after = budget <= n as u64;
            }
        }
        if dst.write_all(buf.get(..len).unwrap_or_default()).is_err() {
            break;
        }
        let carried = if to_upstream {
            &state.to_upstream
        } else {
            &state.to_client
        };
        carried.fetch_add(len as u64, Ordering::AcqRel);
        let newest = state.newest_written.fetch_max(chunk, Ordering::AcqRel);
        if newest > chunk && matches!(mode, Mode::Reorder { .. }) {
            state.overtaken.fetch_add(1, Ordering::AcqRel);
        }
        if cut_after {
            conn.cut();
            return;
        }
    }
    // One side closed: pass the close on (half-close); the other direction ends on its own.
    let _ = dst.shutdown(Shutdown::Write);
    if conn.pumps_done.fetch_add(1, Ordering::AcqRel) == 1 {
        conn.dead.store(true, Ordering::Release);
    }
}

/// The SplitMix64 generator: seeded, reproducible delays without a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

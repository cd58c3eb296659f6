//! Hostile clients against a remoting server's connection limits, as `broker/tests/hostile_clients.rs`
//! drives the broker: a flood of connections past the cap, a slowloris frame, an idle connection and
//! a pipelined flood of requests whose responses are never read. Shared by the name server's and the
//! controller's tests (the controller's includes this file by path).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use protocol::frame::encode_frame;
use protocol::RemotingCommand;

/// One request frame; any code gets an answer (REQUEST_CODE_NOT_SUPPORTED for this one).
pub fn frame(opaque: i32) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let cmd = RemotingCommand::request(9999).with_opaque(opaque);
    encode_frame(&cmd, &mut buf).expect("encode");
    buf.to_vec()
}

pub fn connect_to(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    s
}

/// Whether one request on `s` gets a whole response.
pub fn answered(s: &mut TcpStream, opaque: i32) -> bool {
    if s.write_all(&frame(opaque)).is_err() {
        return false;
    }
    let mut len = [0u8; 4];
    if s.read_exact(&mut len).is_err() {
        return false;
    }
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut rest).is_ok()
}

/// A connection the server answers, retrying for a few seconds while slots are still being freed.
pub fn served_connection(addr: SocketAddr, opaque: i32) -> TcpStream {
    let t = Instant::now();
    loop {
        let mut s = connect_to(addr);
        if answered(&mut s, opaque) {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no connection slot became free"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How long until the server closed `s` (EOF or reset), if within `limit`.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("read timeout");
    let mut buf = [0u8; 1024];
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

/// Past a cap of `max` connections a new one is closed unanswered; a freed slot is reused. Returns a
/// served connection that stays silent from here on (for [`idle_is_closed`]).
pub fn connections_past_the_cap_are_refused(addr: SocketAddr, max: usize) -> TcpStream {
    let mut open: Vec<TcpStream> = (0..max)
        .map(|i| served_connection(addr, i as i32))
        .collect();
    let mut extra = connect_to(addr);
    assert!(
        !answered(&mut extra, 100),
        "a connection past serverMaxConnectionsPerShard = {max} was served"
    );
    drop(extra);
    drop(open.pop());
    let again = served_connection(addr, 101);
    drop(open);
    again
}

/// A frame dribbled one byte every 200 ms is cut off after about `frame_limit`.
pub fn slowloris_is_cut_off(addr: SocketAddr, frame_limit: Duration) {
    // Admitted first with one whole request, so a slot still being freed cannot be the cause.
    let mut slow = served_connection(addr, 200);
    slow.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("read timeout");
    let t = Instant::now();
    let mut cut = None;
    for byte in frame(201) {
        if slow.write_all(&[byte]).is_err() {
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
    let cut = cut.expect("a frame dribbled byte by byte was never cut off");
    assert!(
        cut >= frame_limit.mul_f32(0.9) && cut < frame_limit + Duration::from_secs(5),
        "cut after {cut:?} with a frame limit of {frame_limit:?}"
    );
}

/// `silent` (answered once, then quiet) is closed after about `idle_limit`.
pub fn idle_is_closed(silent: &mut TcpStream, idle_limit: Duration) {
    let took = closed_within(silent, idle_limit + Duration::from_secs(7))
        .expect("an idle connection was not closed");
    assert!(
        took < idle_limit + Duration::from_secs(7),
        "closed after {took:?}"
    );
}

/// Requests pipelined as fast as the socket takes them, no response ever read: the server stops
/// reading once its pending responses pass the byte budget and closes the connection after the
/// write stall limit, while other connections are answered meanwhile. Returns how long the flood
/// lasted until the server cut it off.
pub fn request_flood_is_cut_off(addr: SocketAddr, stall_limit: Duration) -> Duration {
    let mut flood = served_connection(addr, 300);
    // Bounds a write that the server never unblocks (the test then fails below).
    flood
        .set_write_timeout(Some(Duration::from_secs(30)))
        .expect("write timeout");
    let burst: Vec<u8> = (0..256).flat_map(frame).collect();
    let pump = std::thread::spawn(move || {
        let t = Instant::now();
        let mut sent = 0u64;
        loop {
            match flood.write_all(&burst) {
                Ok(()) => sent += 256,
                Err(e) => return (t.elapsed(), sent, e.kind()),
            }
            if t.elapsed() > Duration::from_secs(60) {
                return (t.elapsed(), sent, ErrorKind::Other);
            }
        }
    });
    // Another connection is answered while the flood goes on.
    std::thread::sleep(Duration::from_millis(300));
    let mut other = served_connection(addr, 301);
    let t = Instant::now();
    assert!(
        answered(&mut other, 302),
        "a second connection went unanswered"
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "a second connection waited {:?} during the flood",
        t.elapsed()
    );
    let (took, sent, kind) = pump.join().expect("flood thread");
    assert!(
        matches!(
            kind,
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
        ),
        "the flood of {sent} requests ended with {kind:?} after {took:?}, not with the server closing"
    );
    assert!(
        took >= stall_limit && took < Duration::from_secs(45),
        "the flood of {sent} requests was cut off after {took:?} (stall limit {stall_limit:?})"
    );
    took
}

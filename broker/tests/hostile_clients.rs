//! The broker binary under slow and hostile clients, with the limits set from its config: a slowloris
//! frame is cut off, connections past `serverMaxConnectionsPerShard` are refused, idle ones are closed.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::*;
use protocol::frame::encode_frame;
use protocol::RemotingCommand;

fn frame(opaque: i32) -> Vec<u8> {
    let mut buf = BytesMut::new();
    // Any code gets an answer (REQUEST_CODE_NOT_SUPPORTED for this one).
    let cmd = RemotingCommand::request(9999).with_opaque(opaque);
    encode_frame(&cmd, &mut buf).unwrap();
    buf.to_vec()
}

fn connect_to(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn answered(s: &mut TcpStream, opaque: i32) -> bool {
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

/// A connection the broker answers, retrying for a few seconds while slots are still being freed.
fn served_connection(addr: SocketAddr, opaque: i32) -> TcpStream {
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

/// How long until the broker closed `s` (EOF or reset), if within `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
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

#[test]
fn the_broker_cuts_off_slowloris_floods_and_idle_connections() {
    let broker = Broker::start(
        "shardCount = 1\nserverMaxConnectionsPerShard = 3\nserverFrameTimeoutSeconds = 1\n\
         serverChannelMaxIdleTimeSeconds = 3\n",
    );
    let addr = broker.addr();

    // Flood: three connections are served, a fourth is closed unanswered; a freed slot is reused.
    // (The readiness probe's connections may still hold slots for a moment after closing.)
    let mut open: Vec<TcpStream> = (0..3).map(|i| served_connection(addr, i)).collect();
    let mut extra = connect_to(addr);
    assert!(
        !answered(&mut extra, 10),
        "a connection past serverMaxConnectionsPerShard was served"
    );
    drop(open.pop());
    let mut again = served_connection(addr, 11);
    drop(open);

    // Slowloris: one byte every 200 ms; the frame would take seconds, the limit is 1 s.
    // (Admitted first with one whole request, so a slot still being freed cannot be the cause.)
    let mut slow = served_connection(addr, 12);
    slow.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let t = Instant::now();
    let mut cut = None;
    for byte in frame(13) {
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
        cut >= Duration::from_millis(900) && cut < Duration::from_secs(6),
        "cut after {cut:?}"
    );

    // Idle: `again` has been silent since its answer; the limit is 3 s.
    let took =
        closed_within(&mut again, Duration::from_secs(10)).expect("idle connection not closed");
    assert!(took < Duration::from_secs(10));
    // The broker still serves new connections.
    served_connection(addr, 14);
}

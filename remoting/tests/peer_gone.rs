//! A peer that sends its requests and closes without reading the answers (the Go client,
//! rocketmq-client-go v2.1.2, right after its "oneway" sends, which it does not flag oneway): every
//! request it sent is still handled, though the answers cannot be written.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::io::Write;
use std::net::TcpStream;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::frame::encode_frame;
use protocol::RemotingCommand;
use remoting::{serve_connection, ConnectionContext, Handler};

/// Answered only after a pause: the peer is gone by then.
const SLOW: i32 = 1;
const REQUESTS: usize = 40;

struct Counting {
    handled: Arc<AtomicUsize>,
}

impl Handler for Counting {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            if request.code == SLOW {
                glommio::timer::sleep(Duration::from_millis(300)).await;
            }
            self.handled.fetch_add(1, Ordering::SeqCst);
            // A body big enough that the answers are real writes, not one small batch.
            let mut resp = request.response_to(0, None);
            resp.body = vec![7u8; 2048].into();
            Some(resp)
        })
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

#[test]
fn requests_sent_before_the_peer_closed_are_all_handled() {
    let handled = Arc::new(AtomicUsize::new(0));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let h = handled.clone();
    let _server = LocalExecutorBuilder::default()
        .spawn(move || async move {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            addr_tx.send(listener.local_addr().expect("addr")).unwrap();
            let stream = listener.accept().await.expect("accept");
            // One request at a time: the reader is still behind when the first answers meet the
            // closed peer (and its reset).
            let served =
                serve_connection(stream, Rc::new(Counting { handled: h.clone() }), 1).await;
            // The last handler may still run: give it a moment.
            let t = Instant::now();
            while h.load(Ordering::SeqCst) < REQUESTS && t.elapsed() < Duration::from_secs(5) {
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            done_tx.send(served.is_ok()).unwrap();
        })
        .expect("executor");
    let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    let mut bytes = Vec::new();
    for opaque in 0..REQUESTS as i32 {
        bytes.extend(frame(if opaque == 0 { SLOW } else { 2 }, opaque));
    }
    s.write_all(&bytes).unwrap();
    // Closed before any answer came: the answers get a reset.
    drop(s);
    let clean = done_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the connection did not end within 20 s of the peer's close");
    assert_eq!(
        handled.load(Ordering::SeqCst),
        REQUESTS,
        "requests the peer sent before closing were dropped"
    );
    assert!(clean, "a peer gone after sending is no connection error");
}

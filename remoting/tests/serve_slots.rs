//! A handler that implements `Serve` (an unboxed future, kept in the connection's reused slots): a
//! request answered at once and one that waits share a connection, the waiting ones overlap, every
//! answer matches its request, and the open/close hooks run once each.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::RemotingCommand;
use remoting::{serve_connection, Client, ConnectionContext, Serve};

#[derive(Default)]
struct Slow {
    opened: Cell<u32>,
    closed: Cell<u32>,
    /// Answers given so far: each answer's remark carries its rank.
    answered: Cell<u32>,
}

impl Serve for Slow {
    async fn serve(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Option<RemotingCommand> {
        // Code 1 waits (its future goes on in a task of its own); the others answer at once.
        if request.code == 1 {
            glommio::timer::sleep(Duration::from_millis(400)).await;
        }
        let rank = self.answered.get();
        self.answered.set(rank + 1);
        let remark = format!("answer {} rank {rank}", request.code);
        let mut response = request.response_to(0, Some(remark));
        response.body = request.body.clone();
        Some(response)
    }

    fn opened(&self, _ctx: &ConnectionContext) {
        self.opened.set(self.opened.get() + 1);
    }

    fn closed(&self, _ctx: &ConnectionContext) {
        self.closed.set(self.closed.get() + 1);
    }

    fn peer_response(&self, _response: RemotingCommand, _ctx: &ConnectionContext) {}
}

#[test]
fn waiting_and_ready_requests_overlap_and_match() {
    LocalExecutorBuilder::default()
        .spawn(|| async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let handler = Rc::new(Slow::default());
            let served = handler.clone();
            glommio::spawn_local(async move {
                let stream = listener.accept().await.unwrap();
                let _ = serve_connection(stream, served, 16).await;
            })
            .detach();

            let client = Client::connect(addr, Duration::from_secs(5)).await.unwrap();
            let started = Instant::now();
            // Three waiting requests at once: they overlap (about 400 ms in all, not 1200).
            let slow: Vec<_> = (0..3)
                .map(|i| {
                    let client = client.clone();
                    glommio::spawn_local(async move {
                        let request = RemotingCommand::request(1).with_body(vec![i; 10]);
                        client.invoke(request, Duration::from_secs(5)).await
                    })
                })
                .collect();
            // Requests answered at once, meanwhile, on the same connection (reusing one slot): they
            // are answered before the waiting ones.
            let fast = 20u32;
            for code in 2..2 + fast as i32 {
                let request = RemotingCommand::request(code).with_body(vec![code as u8; 50]);
                let response = client
                    .invoke(request, Duration::from_secs(5))
                    .await
                    .unwrap();
                let remark = response.remark.unwrap_or_default();
                assert!(
                    remark.starts_with(&format!("answer {code} rank ")),
                    "{remark}"
                );
                assert_eq!(&response.body[..], &vec![code as u8; 50][..]);
            }
            for (i, task) in slow.into_iter().enumerate() {
                let response = task.await.unwrap();
                let remark = response.remark.unwrap_or_default();
                let rank: u32 = remark
                    .strip_prefix("answer 1 rank ")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or_else(|| panic!("{remark}"));
                assert!(
                    rank >= fast,
                    "a waiting request held up the others: {remark}"
                );
                assert_eq!(&response.body[..], &vec![i as u8; 10][..]);
            }
            let took = started.elapsed();
            assert!(
                took < Duration::from_millis(1100),
                "the waiting requests ran one after another: {took:?}"
            );

            // The last client gone, the connection closes: each hook ran once.
            drop(client);
            for _ in 0..200 {
                if handler.closed.get() == 1 {
                    break;
                }
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!((handler.opened.get(), handler.closed.get()), (1, 1));
        })
        .expect("executor")
        .join()
        .expect("join");
}

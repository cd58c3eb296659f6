//! A real server and client on loopback: responses match requests, oneway gets no answer, bad frames close.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::{RemotingCommand, SerializeType};
use remoting::{serve_connection, Client, ConnectionContext, Handler};

struct Echo;

impl Handler for Echo {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            // Code 1 answers late so later requests overtake it: responses must still match.
            if request.code == 1 {
                glommio::timer::sleep(Duration::from_millis(100)).await;
            }
            if request.code == 99 {
                _ctx.sink.close();
                return None;
            }
            let mut resp = request.response_to(0, Some(format!("echo {}", request.code)));
            resp.body = request.body.clone();
            Some(resp)
        })
    }
}

fn run<F: Future<Output = ()> + 'static>(f: impl FnOnce() -> F + Send + 'static) {
    LocalExecutorBuilder::default()
        .spawn(f)
        .expect("executor")
        .join()
        .expect("join");
}

#[test]
fn requests_and_responses_match_by_opaque() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        glommio::spawn_local(async move {
            while let Ok(stream) = listener.accept().await {
                glommio::spawn_local(serve_connection(stream, Rc::new(Echo), 16)).detach();
            }
        })
        .detach();

        let client = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        let slow = {
            let client = client.clone();
            glommio::spawn_local(async move {
                client
                    .invoke(RemotingCommand::request(1), Duration::from_secs(2))
                    .await
            })
        };
        for code in 2..20 {
            let req = RemotingCommand::request(code)
                .with_body(vec![code as u8; 100])
                .with_serialize_type(if code % 2 == 0 {
                    SerializeType::Json
                } else {
                    SerializeType::RocketMq
                });
            let resp = client.invoke(req, Duration::from_secs(2)).await.unwrap();
            assert_eq!(
                resp.remark.as_deref(),
                Some(format!("echo {code}").as_str())
            );
            assert_eq!(resp.body.as_ref(), &vec![code as u8; 100][..]);
            assert!(resp.is_response());
        }
        let resp = slow.await.unwrap();
        assert_eq!(resp.remark.as_deref(), Some("echo 1"));

        // A oneway request gets no response; the connection keeps working after it.
        client
            .invoke_oneway(RemotingCommand::request(5))
            .await
            .unwrap();
        let resp = client
            .invoke(RemotingCommand::request(6), Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(resp.remark.as_deref(), Some("echo 6"));
    });
}

#[test]
fn a_garbage_frame_closes_only_that_connection() {
    run(|| async {
        use futures_lite::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        glommio::spawn_local(async move {
            while let Ok(stream) = listener.accept().await {
                glommio::spawn_local(serve_connection(stream, Rc::new(Echo), 16)).detach();
            }
        })
        .detach();

        let mut raw = glommio::net::TcpStream::connect(addr).await.unwrap();
        // Length -5: not a frame. The server must close without reading the claimed size.
        raw.write_all(&[0xFF, 0xFF, 0xFF, 0xFB, 0, 0, 0, 0])
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        let n = raw.read(&mut buf).await.unwrap_or(0);
        assert_eq!(n, 0, "server should close the connection");

        let client = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        let resp = client
            .invoke(RemotingCommand::request(7), Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(resp.remark.as_deref(), Some("echo 7"));
    });
}

#[test]
fn invoke_times_out_when_nobody_answers() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Accept and hold the connection without answering.
        let holder = glommio::spawn_local(async move {
            let s = listener.accept().await.unwrap();
            glommio::timer::sleep(Duration::from_secs(2)).await;
            drop(s);
        });
        let client = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        let err = client
            .invoke(RemotingCommand::request(1), Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, remoting::RemotingError::Timeout(_)), "{err}");
        holder.cancel().await;
    });
}

struct CountCloses(Rc<std::cell::Cell<u32>>);

impl Handler for CountCloses {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move { Some(request.response_to(0, None)) })
    }
    fn on_close(&self, _ctx: &ConnectionContext) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn either_side_can_close() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let closes = Rc::new(std::cell::Cell::new(0));
        let handler = Rc::new(CountCloses(closes.clone()));
        let echo_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let echo_addr = echo_listener.local_addr().unwrap();
        glommio::spawn_local(async move {
            while let Ok(stream) = listener.accept().await {
                glommio::spawn_local(serve_connection(stream, handler.clone(), 4)).detach();
            }
        })
        .detach();
        glommio::spawn_local(async move {
            while let Ok(stream) = echo_listener.accept().await {
                glommio::spawn_local(serve_connection(stream, Rc::new(Echo), 4)).detach();
            }
        })
        .detach();

        // Dropping the last Client clone closes the connection: the server sees it go.
        let client = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        client
            .invoke(RemotingCommand::request(1), Duration::from_secs(2))
            .await
            .unwrap();
        drop(client);
        for _ in 0..100 {
            if closes.get() == 1 {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(closes.get(), 1, "server did not see the client close");

        // The server closes from a handler: the client's waiting request fails with Closed.
        let client = Client::connect(echo_addr, Duration::from_secs(2))
            .await
            .unwrap();
        let err = client
            .invoke(RemotingCommand::request(99), Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(matches!(err, remoting::RemotingError::Closed), "{err}");
        assert!(client.is_closed());
    });
}

/// Asks the client something on request code 50 and records the client's answers.
struct AsksBack(Rc<std::cell::RefCell<Vec<RemotingCommand>>>);

impl Handler for AsksBack {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            let mut ask = RemotingCommand::request(326);
            ask.opaque = 777;
            ctx.sink.send(ask).await.unwrap();
            Some(request.response_to(0, None))
        })
    }
    fn on_response(&self, response: RemotingCommand, _ctx: &ConnectionContext) {
        self.0.borrow_mut().push(response);
    }
}

struct Answers;

impl remoting::ServerRequestHandler for Answers {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        Some(request.response_to(0, Some(format!("answer to {}", request.code))))
    }
}

#[test]
fn a_clients_answer_to_a_server_request_reaches_the_handler() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answers = Rc::new(std::cell::RefCell::new(Vec::new()));
        let handler = Rc::new(AsksBack(answers.clone()));
        glommio::spawn_local(async move {
            while let Ok(stream) = listener.accept().await {
                glommio::spawn_local(serve_connection(stream, handler.clone(), 4)).detach();
            }
        })
        .detach();
        let client =
            Client::connect_with_handler(addr, Duration::from_secs(2), Some(Rc::new(Answers)))
                .await
                .unwrap();
        client
            .invoke(RemotingCommand::request(50), Duration::from_secs(2))
            .await
            .unwrap();
        for _ in 0..100 {
            if !answers.borrow().is_empty() {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        let got = answers.borrow();
        assert_eq!(
            got.len(),
            1,
            "the client's answer did not reach on_response"
        );
        assert!(got[0].is_response());
        assert_eq!(got[0].opaque, 777);
        assert_eq!(got[0].remark.as_deref(), Some("answer to 326"));
    });
}

/// Answers the request's `hooked` extField as the remark.
struct ExtEcho;

impl Handler for ExtEcho {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            let remark = request.ext("hooked").map(str::to_owned);
            Some(request.response_to(0, remark))
        })
    }
}

struct MarkRequests;

impl remoting::RpcHook for MarkRequests {
    fn before_request(&self, request: &mut RemotingCommand) {
        request.set_ext("hooked", &format!("code {}", request.code));
    }
}

#[test]
fn an_rpc_hook_changes_every_request_of_every_clone() {
    run(|| async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        glommio::spawn_local(async move {
            while let Ok(stream) = listener.accept().await {
                glommio::spawn_local(serve_connection(stream, Rc::new(ExtEcho), 16)).detach();
            }
        })
        .detach();
        let client = Client::connect(addr, Duration::from_secs(2)).await.unwrap();
        let limit = Duration::from_secs(2);
        let plain = client
            .invoke(RemotingCommand::request(7), limit)
            .await
            .unwrap();
        assert_eq!(plain.remark, None);
        client.set_rpc_hook(Some(Rc::new(MarkRequests)));
        let clone = client.clone();
        let hooked = clone
            .invoke(RemotingCommand::request(8), limit)
            .await
            .unwrap();
        assert_eq!(hooked.remark.as_deref(), Some("code 8"));
        client.set_rpc_hook(None);
        let plain = client
            .invoke(RemotingCommand::request(9), limit)
            .await
            .unwrap();
        assert_eq!(plain.remark, None);
    });
}

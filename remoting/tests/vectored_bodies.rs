//! Responses whose body is several shared buffers (`body_tail`, as a pull's records) arrive whole and
//! in order over a plain socket, mixed with small responses, also when one is larger than the
//! socket's buffers (the writer then waits for room between vectored sends).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::RemotingCommand;
use remoting::{serve_connection, Client, ConnectionContext, Handler};

/// Answers request `n` with `n` parts, part `i` of `2000 + i` bytes filled with `i`.
struct Parts;

fn parts(n: i32) -> Vec<Bytes> {
    (0..n)
        .map(|i| Bytes::from(vec![i as u8; 2000 + i as usize]))
        .collect()
}

impl Handler for Parts {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            let mut resp = request.response_to(0, None).with_body(&b"head"[..]);
            resp.body_tail = parts(request.code);
            Some(resp)
        })
    }
}

#[test]
fn bodies_of_shared_parts_arrive_whole() {
    LocalExecutorBuilder::default()
        .spawn(|| async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            glommio::spawn_local(async move {
                while let Ok(stream) = listener.accept().await {
                    glommio::spawn_local(serve_connection(stream, Rc::new(Parts), 64)).detach();
                }
            })
            .detach();
            let client = Client::connect(addr, Duration::from_secs(5)).await.unwrap();
            // 0, 1 and 3 stay under the size sent without a copy; 2000 is 6 MB in 2000 parts.
            let codes = [0, 1, 3, 40, 2000, 2, 64, 300, 5];
            let calls: Vec<_> = codes
                .iter()
                .map(|&code| {
                    let client = client.clone();
                    glommio::spawn_local(async move {
                        let resp = client
                            .invoke(RemotingCommand::request(code), Duration::from_secs(20))
                            .await
                            .unwrap();
                        (code, resp)
                    })
                })
                .collect();
            for call in calls {
                let (code, resp) = call.await;
                let mut expected = b"head".to_vec();
                for part in parts(code) {
                    expected.extend_from_slice(&part);
                }
                assert_eq!(resp.body.len(), expected.len(), "code {code}");
                assert!(resp.body == expected, "code {code}: body differs");
                assert!(resp.body_tail.is_empty());
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

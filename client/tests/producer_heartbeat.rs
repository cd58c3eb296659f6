//! A producer heartbeats its group as the Java client does: against an in-process fake name server
//! and broker, the first send's route lookup is followed by one HEART_BEAT carrying only the
//! producer group (`producerDataSet`) and the producer's client id; later sends add none.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use client::namesrv::NameServer;
use client::{Message, Producer, ProducerConfig};
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::body::HeartbeatData;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{ConnectionContext, Handler};

#[derive(Default)]
struct Fake {
    addr: RefCell<String>,
    heartbeats: RefCell<Vec<HeartbeatData>>,
    sends: RefCell<usize>,
}

impl Fake {
    fn answer(&self, req: RemotingCommand) -> RemotingCommand {
        match req.code {
            request_code::GET_ROUTEINFO_BY_TOPIC => {
                let route = format!(
                    r#"{{"brokerDatas":[{{"brokerAddrs":{{0:"{}"}},"brokerName":"fake","cluster":"C"}}],"queueDatas":[{{"brokerName":"fake","perm":6,"readQueueNums":2,"writeQueueNums":2,"topicSysFlag":0}}]}}"#,
                    self.addr.borrow()
                );
                req.response_to(response_code::SUCCESS, None)
                    .with_body(route)
            }
            request_code::SEND_MESSAGE_V2 => {
                *self.sends.borrow_mut() += 1;
                req.response_to(response_code::SUCCESS, None)
                    .with_ext("msgId", "7F00000100002A9F0000000000000000")
                    .with_ext("queueId", "0")
                    .with_ext("queueOffset", "0")
            }
            request_code::HEART_BEAT => {
                let data: HeartbeatData = protocol::body::from_json(&req.body).expect("heartbeat");
                self.heartbeats.borrow_mut().push(data);
                req.response_to(response_code::SUCCESS, None)
            }
            _ => req.response_to(response_code::REQUEST_CODE_NOT_SUPPORTED, None),
        }
    }
}

impl Handler for Fake {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move { Some(self.answer(request)) })
    }
}

async fn start_fake() -> (Rc<Fake>, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0".parse::<SocketAddr>().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = Rc::new(Fake::default());
    *fake.addr.borrow_mut() = addr.to_string();
    let served = fake.clone();
    glommio::spawn_local(async move {
        while let Ok(stream) = listener.accept().await {
            glommio::spawn_local(remoting::serve_connection(stream, served.clone(), 64)).detach();
        }
    })
    .detach();
    (fake, addr)
}

#[test]
fn the_first_route_brings_one_producer_heartbeat() {
    LocalExecutorBuilder::default()
        .spawn(|| async {
            let (fake, addr) = start_fake().await;
            let producer = Producer::new(
                NameServer::new(vec![addr], Duration::from_secs(2)),
                ProducerConfig {
                    group: "pg".into(),
                    instance: 7,
                    ..ProducerConfig::default()
                },
            );
            assert!(
                producer.client_id().ends_with("#7"),
                "{}",
                producer.client_id()
            );
            for i in 0..5 {
                producer
                    .send(&Message::new("T", format!("m{i}")))
                    .await
                    .unwrap();
            }
            for _ in 0..200 {
                if !fake.heartbeats.borrow().is_empty() {
                    break;
                }
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            // Time for a second one, were the sends to bring any.
            glommio::timer::sleep(Duration::from_millis(100)).await;
            assert_eq!(*fake.sends.borrow(), 5);
            let beats = fake.heartbeats.borrow();
            assert_eq!(beats.len(), 1, "{beats:?}");
            let beat = &beats[0];
            assert_eq!(beat.client_id, producer.client_id());
            assert_eq!(beat.producer_data_set.len(), 1);
            assert_eq!(beat.producer_data_set[0].group_name, "pg");
            assert!(beat.consumer_data_set.is_empty());
        })
        .unwrap()
        .join()
        .unwrap();
}

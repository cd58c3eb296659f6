//! The client against an in-process fake name server + broker on a loopback socket: route fallback to
//! TBW102 for an unknown topic, round-robin queues, sync / async / oneway / batch sends, and a pull.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use client::namesrv::NameServer;
use client::producer::AsyncSender;
use client::pull::PullOptions;
use client::{
    BrokerConnections, Message, MessageQueue, Producer, ProducerConfig, PullConsumer, PullStatus,
};
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use protocol::header::{CommandHeader, PullMessageRequestHeader, SendMessageRequestHeader};
use protocol::message::record::MessageRecord;
use protocol::message::{batch, properties};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{ConnectionContext, Handler};

/// (code, topic, queueId, properties, body) of one send.
type SendSeen = (i32, String, i32, String, Bytes);

#[derive(Default)]
struct Fake {
    addr: RefCell<String>,
    sends: RefCell<Vec<SendSeen>>,
}

impl Fake {
    fn answer(&self, req: RemotingCommand) -> RemotingCommand {
        match req.code {
            request_code::GET_ROUTEINFO_BY_TOPIC => {
                if req.ext("topic") != Some("TBW102") {
                    return req.response_to(
                        response_code::TOPIC_NOT_EXIST,
                        Some("No topic route info".into()),
                    );
                }
                let route = format!(
                    r#"{{"brokerDatas":[{{"brokerAddrs":{{0:"{}"}},"brokerName":"fake","cluster":"C"}}],"queueDatas":[{{"brokerName":"fake","perm":7,"readQueueNums":8,"writeQueueNums":8,"topicSysFlag":0}}]}}"#,
                    self.addr.borrow()
                );
                req.response_to(response_code::SUCCESS, None)
                    .with_body(route)
            }
            request_code::SEND_MESSAGE_V2 | request_code::SEND_BATCH_MESSAGE => {
                let h = SendMessageRequestHeader::parse(req.code, &req.ext_fields)
                    .expect("send header");
                let n = self.sends.borrow().len();
                self.sends.borrow_mut().push((
                    req.code,
                    h.topic,
                    h.queue_id,
                    h.properties.unwrap_or_default(),
                    req.body.clone(),
                ));
                req.response_to(response_code::SUCCESS, None)
                    .with_ext("msgId", "7F00000100002A9F0000000000000000")
                    .with_ext("queueId", &h.queue_id.to_string())
                    .with_ext("queueOffset", &n.to_string())
            }
            request_code::PULL_MESSAGE => {
                let h = PullMessageRequestHeader::from_ext_fields(&req.ext_fields)
                    .expect("pull header");
                let resp = if h.queue_offset == 0 {
                    let record = MessageRecord {
                        queue_id: h.queue_id,
                        flag: 0,
                        queue_offset: 0,
                        physical_offset: 0,
                        sys_flag: 0,
                        born_timestamp: 1,
                        born_host: "127.0.0.1:1".parse().unwrap(),
                        store_timestamp: 2,
                        store_host: "127.0.0.1:2".parse().unwrap(),
                        reconsume_times: 0,
                        prepared_transaction_offset: 0,
                        body: Bytes::from_static(b"pulled"),
                        topic: h.topic.clone(),
                        properties: "TAGS\u{1}T\u{2}".into(),
                    };
                    req.response_to(response_code::SUCCESS, None)
                        .with_body(record.to_vec().unwrap())
                } else {
                    req.response_to(response_code::PULL_NOT_FOUND, None)
                };
                let next = if h.queue_offset == 0 {
                    1
                } else {
                    h.queue_offset
                };
                resp.with_ext("suggestWhichBrokerId", "0")
                    .with_ext("nextBeginOffset", &next.to_string())
                    .with_ext("minOffset", "0")
                    .with_ext("maxOffset", "1")
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

fn run<F: Future<Output = ()> + 'static>(make: impl FnOnce() -> F + Send + 'static) {
    LocalExecutorBuilder::default()
        .spawn(make)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn unknown_topics_go_through_tbw102_round_robin() {
    run(|| async {
        let (fake, addr) = start_fake().await;
        let ns = NameServer::new(vec![addr], Duration::from_secs(2));
        let config = ProducerConfig {
            default_topic_queue_nums: 4,
            connections_per_broker: 2,
            ..ProducerConfig::default()
        };
        let producer = Rc::new(Producer::new(ns, config));
        let mut ids = Vec::new();
        for i in 0..8 {
            let msg = Message::new("NewTopic", format!("m{i}"))
                .with_tags("A")
                .with_keys(&format!("k{i}"));
            let result = producer.send(&msg).await.expect("send");
            assert_eq!(result.queue.broker_name, "fake");
            assert_eq!(result.queue_offset, i);
            ids.push(result.msg_id);
        }
        let sends = fake.sends.borrow().clone();
        // TBW102 has 8 queues but the producer caps an auto-created topic at defaultTopicQueueNums = 4.
        let queues: Vec<i32> = sends.iter().map(|s| s.2).collect();
        assert_eq!(queues, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        for (i, (code, topic, _, props, body)) in sends.iter().enumerate() {
            assert_eq!(*code, request_code::SEND_MESSAGE_V2);
            assert_eq!(topic, "NewTopic");
            assert_eq!(&body[..], format!("m{i}").as_bytes());
            assert_eq!(
                properties::get(props, properties::UNIQ_KEY),
                Some(ids[i].as_str())
            );
            assert_eq!(
                properties::get(props, properties::KEYS),
                Some(format!("k{i}").as_str())
            );
        }
    });
}

#[test]
fn async_oneway_and_batch_sends_arrive() {
    run(|| async {
        let (fake, addr) = start_fake().await;
        let producer = Rc::new(Producer::new(
            NameServer::new(vec![addr], Duration::from_secs(2)),
            ProducerConfig::default(),
        ));
        let done = Rc::new(RefCell::new(0));
        let sender = AsyncSender::new(producer.clone(), 3);
        for i in 0..10 {
            let done = done.clone();
            sender
                .send(Message::new("A", format!("a{i}")), move |r, _| {
                    assert!(r.is_ok());
                    *done.borrow_mut() += 1;
                })
                .await
                .unwrap();
            assert!(sender.in_flight() <= 3);
        }
        sender.flush().await;
        assert_eq!(*done.borrow(), 10);
        producer
            .send_oneway(&Message::new("A", "oneway"))
            .await
            .unwrap();
        let batch: Vec<Message> = (0..5).map(|i| Message::new("A", format!("b{i}"))).collect();
        let result = producer.send_batch(&batch).await.unwrap();
        assert_eq!(result.msg_id.split(',').count(), 5);
        // The oneway send has no answer to wait for: give the fake a moment to see it.
        for _ in 0..100 {
            if fake.sends.borrow().len() == 12 {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        let sends = fake.sends.borrow();
        assert_eq!(sends.len(), 12);
        let batch_send = sends
            .iter()
            .find(|s| s.0 == request_code::SEND_BATCH_MESSAGE)
            .expect("batch");
        let entries = batch::decode(&batch_send.4).unwrap();
        assert_eq!(
            entries.iter().map(|e| e.body).collect::<Vec<_>>(),
            vec![&b"b0"[..], b"b1", b"b2", b"b3", b"b4"]
        );
    });
}

#[test]
fn pulls_decode_records_and_report_no_new_message() {
    run(|| async {
        let (_fake, addr) = start_fake().await;
        let ns = NameServer::new(vec![addr], Duration::from_secs(2));
        let consumer = PullConsumer::new(
            "g",
            ns,
            BrokerConnections::new(1, Duration::from_secs(2)),
            Duration::from_secs(2),
        );
        let queue = MessageQueue {
            topic: "TBW102".into(),
            broker_name: "fake".into(),
            queue_id: 5,
        };
        assert_eq!(consumer.queues("TBW102").await.unwrap().len(), 8);
        let found = consumer
            .pull(&queue, 0, &PullOptions::default())
            .await
            .unwrap();
        assert_eq!(found.status, PullStatus::Found);
        let records: Vec<_> = found
            .records_checked(true)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].body, b"pulled");
        assert_eq!(records[0].queue_id, 5);
        let empty = consumer
            .pull(&queue, 1, &PullOptions::default())
            .await
            .unwrap();
        assert_eq!(empty.status, PullStatus::NoNewMessage);
        assert_eq!(empty.next_begin_offset, 1);
    });
}

//! Request-reply as Java's `DefaultMQProducer.request` and `MessageUtil.createReplyMessage` drive it,
//! with the frames those clients send: the broker stamps `CLUSTER` on stored messages, has
//! `<cluster>_REPLY_TOPIC`, and answers SEND_REPLY_MESSAGE(_V2) by pushing the reply to the requester's
//! connection (on whichever shard it is) and storing it.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::*;
use protocol::body::{HeartbeatData, ProducerData, TopicConfigSerializeWrapper};
use protocol::header::{CommandHeader, SendMessageRequestHeader};
use protocol::message::{batch, msgid, properties};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

const CLUSTER: &str = "TestCluster";
const REPLY_TOPIC: &str = "TestCluster_REPLY_TOPIC";

/// A requester's client: records the replies pushed to it and answers them with `answer`.
struct Requester {
    pushed: RefCell<Vec<RemotingCommand>>,
    answer: i32,
}

impl ServerRequestHandler for Requester {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        self.pushed.borrow_mut().push(request.clone());
        Some(request.response_to(self.answer, None))
    }
}

/// A producer's heartbeat, as every Java client sends one to each broker it uses.
fn producer_heartbeat(client_id: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: vec![ProducerData {
            group_name: "RequesterGroup".into(),
        }],
        ..HeartbeatData::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(protocol::body::to_json(&data))
}

/// A connected, registered requester.
async fn requester(broker: &Broker, client_id: &str, answer: i32) -> (Client, Rc<Requester>) {
    let handler = Rc::new(Requester {
        pushed: RefCell::new(Vec::new()),
        answer,
    });
    let client = Client::connect_with_handler(broker.addr(), TIMEOUT, Some(handler.clone()))
        .await
        .unwrap();
    let r = client
        .invoke(producer_heartbeat(client_id), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    (client, handler)
}

/// The properties of a request message (`prepareSendRequest`: correlation id, the requester's client
/// id, the time to live) with the usual unique key.
fn request_properties(correlation: &str, client_id: &str) -> String {
    properties::encode([
        (properties::UNIQ_KEY, format!("UNIQ-{correlation}").as_str()),
        ("WAIT", "true"),
        (properties::CORRELATION_ID, correlation),
        (properties::REPLY_TO_CLIENT, client_id),
        (properties::MESSAGE_TTL, "3000"),
    ])
}

/// The properties `MessageUtil.createReplyMessage` gives a reply to a request with these properties.
fn reply_properties(request: &str) -> String {
    let get = |k| properties::get(request, k).unwrap_or_default();
    properties::encode([
        (properties::MESSAGE_TYPE, "reply"),
        (properties::CORRELATION_ID, get(properties::CORRELATION_ID)),
        (
            properties::REPLY_TO_CLIENT,
            get(properties::REPLY_TO_CLIENT),
        ),
        (properties::MESSAGE_TTL, get(properties::MESSAGE_TTL)),
        ("WAIT", "true"),
    ])
}

/// The SEND_REPLY_MESSAGE_V2 a responder's producer sends (short header names).
fn reply_v2(properties: &str, body: &str) -> RemotingCommand {
    let mut header = send_header(REPLY_TOPIC, 0, properties);
    header.a = "ResponderGroup".into();
    RemotingCommand::request(request_code::SEND_REPLY_MESSAGE_V2)
        .with_ext_fields(header.to_ext_fields())
        .with_body(Bytes::copy_from_slice(body.as_bytes()))
}

/// The SEND_REPLY_MESSAGE a producer without `sendSmartMsg` sends (long header names).
fn reply_v1(properties: &str, body: &str) -> RemotingCommand {
    let mut header = SendMessageRequestHeader::from(send_header(REPLY_TOPIC, 0, properties));
    header.producer_group = "ResponderGroup".into();
    RemotingCommand::request(request_code::SEND_REPLY_MESSAGE)
        .with_ext_fields(header.to_ext_fields())
        .with_body(Bytes::copy_from_slice(body.as_bytes()))
}

async fn wait_pushed(r: &Requester, n: usize) {
    let start = Instant::now();
    while r.pushed.borrow().len() < n && start.elapsed() < TIMEOUT {
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn every_stored_message_carries_the_brokers_cluster() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        // A client's own CLUSTER is replaced, as RocketMQ's broker does.
        let p = properties::encode([(properties::TAGS, "A"), (properties::CLUSTER, "Other")]);
        let r = send(&client, "Stamped", 0, b"one", &p).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let mut body = BytesMut::new();
        batch::encode(
            [(0, &b"b1"[..], "K\u{1}1\u{2}"), (0, &b"b2"[..], "")],
            &mut body,
        )
        .unwrap();
        let mut req = send_request("Stamped", 0, &body, "");
        req.code = request_code::SEND_BATCH_MESSAGE;
        let r = client.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let records = pull_all(&client, "Stamped", 0).await;
        assert_eq!(records.len(), 3);
        for rec in &records {
            assert_eq!(
                properties::get(&rec.properties, properties::CLUSTER),
                Some(CLUSTER),
                "{:?}",
                rec.properties
            );
        }
        assert_eq!(properties::get(&records[0].properties, "TAGS"), Some("A"));
        assert_eq!(properties::get(&records[1].properties, "K"), Some("1"));
    });
}

#[test]
fn the_reply_topic_exists_from_the_start() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let r = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: TopicConfigSerializeWrapper = protocol::body::from_json(&r.body).unwrap();
        let reply = table
            .topic_config_table
            .get(REPLY_TOPIC)
            .expect("reply topic created at start");
        assert_eq!(
            (reply.read_queue_nums, reply.write_queue_nums, reply.perm),
            (1, 1, 6)
        );
    });
}

#[test]
fn replies_reach_their_requesters_on_every_shard_and_are_stored() {
    let broker = Broker::start("");
    run_local(async {
        // Eight requesters: with two shards, their connections land on both (1 in 128 that they
        // all share the responder's shard).
        let mut requesters = Vec::new();
        for i in 0..8 {
            let id = format!("127.0.0.1@requester-{i}");
            let (client, handler) = requester(&broker, &id, response_code::SUCCESS).await;
            requesters.push((id, client, handler));
        }
        let responder = connect(broker.addr()).await;
        for (i, (id, client, _)) in requesters.iter().enumerate() {
            let p = request_properties(&format!("corr-{i}"), id);
            let r = send(client, "Requests", (i % 4) as i32, b"question", &p).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        let mut asked = Vec::new();
        for q in 0..4 {
            asked.extend(pull_all(&responder, "Requests", q).await);
        }
        assert_eq!(asked.len(), 8);
        let mut stored = Vec::new();
        for (n, request) in asked.iter().enumerate() {
            // createReplyMessage needs the request's CLUSTER.
            assert_eq!(
                properties::get(&request.properties, properties::CLUSTER),
                Some(CLUSTER)
            );
            let reply_props = reply_properties(&request.properties);
            let body = format!(
                "answer to {}",
                properties::get(&request.properties, properties::CORRELATION_ID).unwrap()
            );
            // Alternate the two request codes.
            let req = if n % 2 == 0 {
                reply_v2(&reply_props, &body)
            } else {
                reply_v1(&reply_props, &body)
            };
            let r = responder.invoke(req, TIMEOUT).await.unwrap();
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            assert_eq!(r.ext("queueId"), Some("0"));
            // Stored: the answer names the stored reply.
            let msg_id = r.ext("msgId").unwrap().to_owned();
            let (host, _) = msgid::parse_offset_msg_id(&msg_id).expect("an offsetMsgId");
            assert_eq!(host, broker.addr());
            stored.push((msg_id, r.ext("queueOffset").unwrap().to_owned(), body));
        }
        for (i, (id, _, handler)) in requesters.iter().enumerate() {
            wait_pushed(handler, 1).await;
            let pushed = handler.pushed.borrow();
            assert_eq!(pushed.len(), 1, "{id} got {} replies", pushed.len());
            let push = &pushed[0];
            assert_eq!(push.code, request_code::PUSH_REPLY_MESSAGE_TO_CLIENT);
            assert!(
                !push.is_oneway(),
                "the broker waits for the requester's answer"
            );
            let corr = format!("corr-{i}");
            assert_eq!(push.body.as_ref(), format!("answer to {corr}").as_bytes());
            // Every field the Java client requires (ReplyMessageRequestHeader's @CFNotNull ones).
            for field in [
                "producerGroup",
                "topic",
                "defaultTopic",
                "defaultTopicQueueNums",
                "queueId",
                "sysFlag",
                "bornTimestamp",
                "flag",
                "bornHost",
                "storeHost",
                "storeTimestamp",
            ] {
                assert!(push.ext(field).is_some(), "push lacks {field}: {push:?}");
            }
            assert_eq!(push.ext("topic"), Some(REPLY_TOPIC));
            assert_eq!(push.ext("producerGroup"), Some("ResponderGroup"));
            assert_eq!(
                push.ext("storeHost"),
                Some(broker.addr().to_string().as_str())
            );
            let props = push.ext("properties").unwrap();
            assert_eq!(
                properties::get(props, properties::CORRELATION_ID),
                Some(corr.as_str())
            );
            assert_eq!(
                properties::get(props, properties::MESSAGE_TYPE),
                Some("reply")
            );
            assert!(properties::get(props, properties::PUSH_REPLY_TIME).is_some());
        }
        let replies = pull_all(&responder, REPLY_TOPIC, 0).await;
        assert_eq!(replies.len(), 8);
        for (rec, (msg_id, offset, body)) in replies.iter().zip(&stored) {
            assert_eq!(rec.body.as_ref(), body.as_bytes());
            assert_eq!(rec.queue_offset.to_string(), *offset);
            assert_eq!(
                msgid::parse_offset_msg_id(msg_id).unwrap().1,
                rec.physical_offset
            );
            assert_eq!(
                properties::get(&rec.properties, properties::MESSAGE_TYPE),
                Some("reply")
            );
        }
    });
}

#[test]
fn replies_that_cannot_be_pushed_answer_system_error() {
    let broker = Broker::start("");
    run_local(async {
        let (_refuser, refusing) =
            requester(&broker, "127.0.0.1@refuser", response_code::SYSTEM_ERROR).await;
        let responder = connect(broker.addr()).await;
        let cases = [
            (
                reply_properties(&request_properties("c1", "127.0.0.1@refuser")),
                "127.0.0.1@refuserfail.",
            ),
            (
                reply_properties(&request_properties("c2", "127.0.0.1@nobody")),
                "channel of <127.0.0.1@nobody> not found",
            ),
            (
                properties::encode([
                    (properties::MESSAGE_TYPE, "reply"),
                    (properties::CORRELATION_ID, "c3"),
                ]),
                "properties[REPLY_TO_CLIENT] is null",
            ),
        ];
        for (reply, why) in &cases {
            let r = responder
                .invoke(reply_v2(reply, "late"), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SYSTEM_ERROR, "{:?}", r.remark);
            let remark = r.remark.unwrap_or_default();
            assert!(remark.contains(why), "{remark}");
        }
        assert_eq!(refusing.pushed.borrow().len(), 1);
        // Stored anyway (storeReplyMessageEnable), as RocketMQ does.
        assert_eq!(pull_all(&responder, REPLY_TOPIC, 0).await.len(), 3);
    });
}

#[test]
fn with_store_reply_message_enable_off_replies_are_only_pushed() {
    let broker = Broker::start("storeReplyMessageEnable = false");
    run_local(async {
        let (_client, handler) =
            requester(&broker, "127.0.0.1@requester", response_code::SUCCESS).await;
        let responder = connect(broker.addr()).await;
        let request = request_properties("only-pushed", "127.0.0.1@requester");
        let r = responder
            .invoke(reply_v2(&reply_properties(&request), "pushed"), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(r.ext("msgId"), Some("0"));
        assert_eq!(r.ext("queueOffset"), Some("0"));
        wait_pushed(&handler, 1).await;
        assert_eq!(handler.pushed.borrow().len(), 1);
        assert!(pull_all(&responder, REPLY_TOPIC, 0).await.is_empty());
    });
}

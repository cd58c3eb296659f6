//! GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) against the real broker binary
//! with two shard-brokers: the broker asks the named client of the group on the connection its
//! heartbeat came in on (here a connection of the other shard) and answers what the client answered;
//! 309 carries the stored message and the shard-broker's name; INVOKE_BROKER_TO_GET_CONSUMER_STATUS
//! (223) gathers the clients' queue offsets; unknown clients and blank headers get errors.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use bytes::Bytes;
use common::*;
use protocol::body::{ConsumerData, GetConsumerStatusBody, HeartbeatData};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

const GROUP: &str = "running_info_group";
const CLIENT_ID: &str = "127.0.0.1@running-info";

/// Answers the broker's GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY calls with the client
/// id they named, in the body (other pushes, e.g. NOTIFY_CONSUMER_IDS_CHANGED, are taken without an
/// answer).
#[derive(Default)]
struct Answering {
    calls: RefCell<Vec<RemotingCommand>>,
}

impl ServerRequestHandler for Answering {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        if request.code == request_code::GET_CONSUMER_STATUS_FROM_CLIENT {
            // One queue of the topic asked about, at offset 5 (fastjson's object keys).
            let body = format!(
                "{{\"messageQueueTable\":{{{{\"brokerName\":\"broker-t-0\",\"queueId\":0,\
                 \"topic\":\"{}\"}}:5}}}}",
                request.ext("topic").unwrap_or_default()
            );
            return Some(
                RemotingCommand::response(response_code::SUCCESS, None)
                    .with_body(Bytes::from(body)),
            );
        }
        if request.code != request_code::GET_CONSUMER_RUNNING_INFO
            && request.code != request_code::CONSUME_MESSAGE_DIRECTLY
        {
            return None;
        }
        let body = format!(
            "{{\"properties\":{{\"asked\":\"{}\"}}}}",
            request.ext("clientId").unwrap_or_default()
        );
        self.calls.borrow_mut().push(request);
        Some(RemotingCommand::response(response_code::SUCCESS, None).with_body(Bytes::from(body)))
    }
}

fn running_info(group: &str, client_id: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO)
        .with_ext("consumerGroup", group)
        .with_ext("clientId", client_id)
        .with_ext("jstackEnable", "false")
}

#[test]
fn the_broker_relays_running_info_and_direct_consume_requests_to_the_client() {
    let broker = Broker::start("");
    run_local(async {
        let shard1 = SocketAddr::from(([127, 0, 0, 1], broker.addr().port() + 4));
        let handler = Rc::new(Answering::default());
        let consumer = Client::connect_with_handler(shard1, TIMEOUT, Some(handler.clone()))
            .await
            .unwrap();
        let data = HeartbeatData {
            client_id: CLIENT_ID.into(),
            consumer_data_set: vec![ConsumerData {
                group_name: GROUP.into(),
                ..ConsumerData::default()
            }],
            ..HeartbeatData::default()
        };
        let hb = RemotingCommand::request(request_code::HEART_BEAT)
            .with_body(protocol::body::to_json(&data));
        let r = consumer.invoke(hb, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);

        let admin = connect(broker.addr()).await;
        let r = admin
            .invoke(running_info(GROUP, CLIENT_ID), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            std::str::from_utf8(&r.body).unwrap(),
            format!("{{\"properties\":{{\"asked\":\"{CLIENT_ID}\"}}}}")
        );
        {
            let calls = handler.calls.borrow();
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].ext("consumerGroup"), Some(GROUP));
            assert_eq!(calls[0].ext("jstackEnable"), Some("false"));
        }

        // CONSUME_MESSAGE_DIRECTLY: a message stored through broker-t-1, asked through broker-t-1.
        let on_shard1 = connect(shard1).await;
        let sent = send(&on_shard1, "DirectTopic", 1, b"direct", "").await;
        assert_eq!(sent.code, response_code::SUCCESS, "{:?}", sent.remark);
        let msg_id = sent.ext("msgId").unwrap().to_owned();
        let direct = RemotingCommand::request(request_code::CONSUME_MESSAGE_DIRECTLY)
            .with_ext("consumerGroup", GROUP)
            .with_ext("clientId", CLIENT_ID)
            .with_ext("msgId", &msg_id);
        let r = on_shard1.invoke(direct.clone(), TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        {
            let calls = handler.calls.borrow();
            assert_eq!(calls.len(), 2);
            assert_eq!(calls[1].code, request_code::CONSUME_MESSAGE_DIRECTLY);
            assert_eq!(calls[1].ext("brokerName"), Some("broker-t-1"));
            assert_eq!(calls[1].ext("msgId"), Some(msg_id.as_str()));
            let records = decode_records(&calls[1].body);
            assert_eq!(records.len(), 1);
            assert_eq!(&records[0].body[..], b"direct");
        }
        // A msgId that is no offsetMsgId, and one past the stored data.
        let bad = direct.clone().with_ext("msgId", "nonsense");
        let r = on_shard1.invoke(bad, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        let past = protocol::message::msgid::offset_msg_id(shard1, 1 << 40);
        let r = on_shard1
            .invoke(direct.with_ext("msgId", &past), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert_eq!(handler.calls.borrow().len(), 2);

        // A client the group does not have, a group nobody is in, a blank header field.
        for (group, client) in [(GROUP, "127.0.0.1@other"), ("no_such_group", CLIENT_ID)] {
            let r = admin
                .invoke(running_info(group, client), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SYSTEM_ERROR);
            let remark = r.remark.unwrap_or_default();
            assert!(remark.contains("not online"), "{remark}");
        }
        let r = admin
            .invoke(running_info(GROUP, " "), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert!(r.remark.unwrap_or_default().contains("clientId"));
        assert_eq!(
            handler.calls.borrow().len(),
            2,
            "only the first two reached it"
        );

        // INVOKE_BROKER_TO_GET_CONSUMER_STATUS: every client's offsets (here one), or the named one's.
        let status = |group: &str, client: &str| {
            RemotingCommand::request(request_code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS)
                .with_ext("topic", "StatusTopic")
                .with_ext("group", group)
                .with_ext("clientAddr", client)
        };
        let r = admin.invoke(status(GROUP, ""), TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let body = GetConsumerStatusBody::from_json(&r.body).unwrap();
        let offsets: Vec<(String, i32, i64)> = body
            .consumer_table
            .iter()
            .flat_map(|(id, t)| {
                t.iter()
                    .map(move |(mq, o)| (format!("{id}/{}", mq.topic), mq.queue_id, *o))
            })
            .collect();
        assert_eq!(offsets, [(format!("{CLIENT_ID}/StatusTopic"), 0, 5)]);
        let r = admin
            .invoke(status(GROUP, "127.0.0.1@other"), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert!(GetConsumerStatusBody::from_json(&r.body)
            .unwrap()
            .consumer_table
            .is_empty());
        let r = admin
            .invoke(status("no_such_group", ""), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert!(r
            .remark
            .unwrap_or_default()
            .contains("No Any Consumer online"));

        // Once the client's connection is gone it is not asked.
        drop(consumer);
        let mut last = None;
        for _ in 0..100 {
            let r = admin
                .invoke(running_info(GROUP, CLIENT_ID), TIMEOUT)
                .await
                .unwrap();
            if r.code != response_code::SUCCESS {
                last = r.remark;
                break;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(20)).await;
        }
        let remark = last.expect("a closed client's call fails");
        assert!(
            remark.contains("not online") || remark.contains("gone"),
            "{remark}"
        );
    });
}

//! Heartbeats, consumer lists and NOTIFY_CONSUMER_IDS_CHANGED; topic administration; broker-wide queries.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use protocol::body::{
    ConsumerData, ConsumerOffsetSerializeWrapper, GetConsumerListByGroupResponseBody,
    HeartbeatData, KVTable, SubscriptionData, TopicConfigSerializeWrapper,
};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

#[derive(Default)]
struct Recorder {
    seen: RefCell<Vec<RemotingCommand>>,
}

impl ServerRequestHandler for Recorder {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        self.seen.borrow_mut().push(request);
        None
    }
}

fn heartbeat(client_id: &str, group: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            subscription_data_set: vec![SubscriptionData {
                topic: "Watched".into(),
                sub_string: "TagA".into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    RemotingCommand::request(request_code::HEART_BEAT).with_body(protocol::body::to_json(&data))
}

async fn consumer_list(client: &Client, group: &str) -> Option<Vec<String>> {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_CONSUMER_LIST_BY_GROUP)
                .with_ext("consumerGroup", group),
            TIMEOUT,
        )
        .await
        .unwrap();
    if r.code != response_code::SUCCESS {
        return None;
    }
    let body: GetConsumerListByGroupResponseBody = protocol::body::from_json(&r.body).unwrap();
    Some(body.consumer_id_list)
}

async fn wait_for(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if check() {
            return true;
        }
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[test]
fn consumers_are_tracked_and_told_about_membership_changes() {
    let broker = Broker::start("");
    run_local(async {
        let first_seen = Rc::new(Recorder::default());
        let first = Client::connect_with_handler(broker.addr(), TIMEOUT, Some(first_seen.clone()))
            .await
            .unwrap();
        assert_eq!(
            first
                .invoke(heartbeat("c1", "cg"), TIMEOUT)
                .await
                .unwrap()
                .code,
            response_code::SUCCESS
        );
        assert_eq!(consumer_list(&first, "cg").await.unwrap(), vec!["c1"]);
        let notified_before = first_seen.seen.borrow().len();
        // A second consumer joins (through the fast port, maybe another shard): the first is told.
        let second = Client::connect(broker.fast_addr(), TIMEOUT).await.unwrap();
        assert_eq!(
            second
                .invoke(heartbeat("c2", "cg"), TIMEOUT)
                .await
                .unwrap()
                .code,
            response_code::SUCCESS
        );
        assert_eq!(consumer_list(&first, "cg").await.unwrap(), vec!["c1", "c2"]);
        assert!(
            wait_for(|| first_seen.seen.borrow().len() > notified_before).await,
            "no NOTIFY_CONSUMER_IDS_CHANGED"
        );
        let notice = first_seen.seen.borrow().last().cloned().unwrap();
        assert_eq!(notice.code, request_code::NOTIFY_CONSUMER_IDS_CHANGED);
        assert_eq!(notice.ext("consumerGroup"), Some("cg"));
        assert!(notice.is_oneway());
        // The retry topic and the subscription group were created.
        let topics = first
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: TopicConfigSerializeWrapper = protocol::body::from_json(&topics.body).unwrap();
        assert!(table.topic_config_table.contains_key("%RETRY%cg"));
        let groups = first
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert!(String::from_utf8_lossy(&groups.body).contains("\"cg\""));
        // Unregistering c2, then closing c1's connection, empties the group.
        let unregister = RemotingCommand::request(request_code::UNREGISTER_CLIENT)
            .with_ext("clientID", "c2")
            .with_ext("consumerGroup", "cg");
        assert_eq!(
            second.invoke(unregister, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        assert_eq!(consumer_list(&second, "cg").await.unwrap(), vec!["c1"]);
        drop(first);
        let mut gone = false;
        for _ in 0..100 {
            if consumer_list(&second, "cg").await.is_none() {
                gone = true;
                break;
            }
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "closing the connection unregisters its client");
    });
}

#[test]
fn registered_subscription_filters_pulls_without_one() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        assert_eq!(
            client
                .invoke(heartbeat("c1", "filtering"), TIMEOUT)
                .await
                .unwrap()
                .code,
            response_code::SUCCESS
        );
        for (i, tag) in ["TagA", "TagB", "TagA"].iter().enumerate() {
            let props = protocol::message::properties::encode([("TAGS", *tag)]);
            assert_eq!(
                send(&client, "Watched", i as i32 % 2, b"m", &props)
                    .await
                    .code,
                response_code::SUCCESS
            );
        }
        // Queue 0 holds TagA, TagA; queue 1 holds TagB only: the group subscribed TagA.
        let r0 = client
            .invoke(pull_request("filtering", "Watched", 0, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(decode_records(&r0.body).len(), 2);
        let r1 = client
            .invoke(pull_request("filtering", "Watched", 1, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r1.code, response_code::PULL_RETRY_IMMEDIATELY);
        assert_eq!(r1.ext("nextBeginOffset"), Some("1"));
    });
}

#[test]
fn topics_are_created_listed_and_deleted() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
            .with_ext("topic", "Admin")
            .with_ext("defaultTopic", "TBW102")
            .with_ext("readQueueNums", "8")
            .with_ext("writeQueueNums", "8")
            .with_ext("perm", "6")
            .with_ext("topicFilterType", "SINGLE_TAG");
        assert_eq!(
            client.invoke(create, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        let all = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: TopicConfigSerializeWrapper = protocol::body::from_json(&all.body).unwrap();
        assert_eq!(table.topic_config_table["Admin"].write_queue_nums, 8);
        // Every shard knows the new topic at once: queue 7 accepts a send on either port.
        for addr in [broker.addr(), broker.fast_addr()] {
            let c = connect(addr).await;
            assert_eq!(
                send(&c, "Admin", 7, b"x", "").await.code,
                response_code::SUCCESS
            );
        }
        // Read-only topic refuses sends.
        let read_only = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
            .with_ext("topic", "Admin")
            .with_ext("defaultTopic", "TBW102")
            .with_ext("readQueueNums", "8")
            .with_ext("writeQueueNums", "8")
            .with_ext("perm", "4")
            .with_ext("topicFilterType", "SINGLE_TAG");
        assert_eq!(
            client.invoke(read_only, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        assert_eq!(
            send(&client, "Admin", 0, b"x", "").await.code,
            response_code::NO_PERMISSION
        );
        let delete = RemotingCommand::request(request_code::DELETE_TOPIC_IN_BROKER)
            .with_ext("topic", "Admin");
        assert_eq!(
            client.invoke(delete, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        let all = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: TopicConfigSerializeWrapper = protocol::body::from_json(&all.body).unwrap();
        assert!(!table.topic_config_table.contains_key("Admin"));
        let pull = client
            .invoke(pull_request("g", "Admin", 7, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(pull.code, response_code::TOPIC_NOT_EXIST);
    });
}

#[test]
fn runtime_info_and_offset_tables_cover_every_shard() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        for q in 0..4 {
            assert_eq!(
                send(&client, "Counted", q, b"abc", "").await.code,
                response_code::SUCCESS
            );
            let up = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
                .with_ext("consumerGroup", "cg")
                .with_ext("topic", "Counted")
                .with_ext("queueId", &q.to_string())
                .with_ext("commitOffset", "1");
            assert_eq!(
                client.invoke(up, TIMEOUT).await.unwrap().code,
                response_code::SUCCESS
            );
        }
        let info = client
            .invoke(
                RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(info.code, response_code::SUCCESS);
        let kv: KVTable = protocol::body::from_json(&info.body).unwrap();
        assert_eq!(kv.table["msgPutTotalTodayNow"], "4");
        assert_eq!(kv.table["shardCount"], "2");
        let offsets = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_CONSUMER_OFFSET),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: ConsumerOffsetSerializeWrapper =
            protocol::body::from_json(&offsets.body).unwrap();
        assert_eq!(table.offset_table["Counted@cg"].len(), 4);
        let delay = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_DELAY_OFFSET),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(delay.code, response_code::SUCCESS);
    });
}

#[test]
fn orderly_consumers_lock_queues_one_client_at_a_time() {
    use protocol::body::{LockBatchRequestBody, LockBatchResponseBody, MessageQueue};
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let mqs: Vec<MessageQueue> = (0..3)
            .map(|q| MessageQueue {
                topic: "Ordered".into(),
                broker_name: "broker-t".into(),
                queue_id: q,
            })
            .collect();
        let lock = |client_id: &str, mqs: &[MessageQueue]| {
            let body = LockBatchRequestBody {
                consumer_group: "og".into(),
                client_id: client_id.into(),
                only_this_broker: true,
                mq_set: mqs.to_vec(),
            };
            RemotingCommand::request(request_code::LOCK_BATCH_MQ)
                .with_body(protocol::body::to_json(&body))
        };
        let r = client.invoke(lock("a", &mqs[..2]), TIMEOUT).await.unwrap();
        let got: LockBatchResponseBody = protocol::body::from_json(&r.body).unwrap();
        assert_eq!(got.lock_ok_mq_set.len(), 2);
        let r = client.invoke(lock("b", &mqs), TIMEOUT).await.unwrap();
        let got: LockBatchResponseBody = protocol::body::from_json(&r.body).unwrap();
        assert_eq!(got.lock_ok_mq_set, vec![mqs[2].clone()]);
        let mut unlock = lock("a", &mqs[..1]);
        unlock.code = request_code::UNLOCK_BATCH_MQ;
        assert_eq!(
            client.invoke(unlock, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        let r = client.invoke(lock("b", &mqs[..1]), TIMEOUT).await.unwrap();
        let got: LockBatchResponseBody = protocol::body::from_json(&r.body).unwrap();
        assert_eq!(got.lock_ok_mq_set, vec![mqs[0].clone()]);
    });
}

#[test]
fn silent_clients_expire() {
    let broker = Broker::start("serverChannelMaxIdleTimeSeconds = 1");
    run_local(async {
        let client = connect(broker.addr()).await;
        assert_eq!(
            client
                .invoke(heartbeat("c1", "idle"), TIMEOUT)
                .await
                .unwrap()
                .code,
            response_code::SUCCESS
        );
        assert_eq!(consumer_list(&client, "idle").await.unwrap(), vec!["c1"]);
        // Heartbeats keep it registered; silence removes it.
        for _ in 0..4 {
            glommio::timer::sleep(Duration::from_millis(400)).await;
            assert_eq!(
                client
                    .invoke(heartbeat("c1", "idle"), TIMEOUT)
                    .await
                    .unwrap()
                    .code,
                response_code::SUCCESS
            );
        }
        assert!(consumer_list(&client, "idle").await.is_some());
        glommio::timer::sleep(Duration::from_millis(2200)).await;
        // The idle connection itself is closed by now (as RocketMQ's idle handler does): ask on a new one.
        assert!(client
            .invoke(heartbeat("c1", "idle"), TIMEOUT)
            .await
            .is_err());
        let fresh = connect(broker.addr()).await;
        assert!(
            consumer_list(&fresh, "idle").await.is_none(),
            "a silent client expires"
        );
    });
}

// Retry and DLQ (CONSUMER_SEND_MSG_BACK) are tested with their delays in delay_retry.rs.

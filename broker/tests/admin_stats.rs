//! GET_TOPIC_STATS_INFO, GET_CONSUME_STATS and INVOKE_BROKER_TO_RESET_OFFSET against the real broker
//! binary (two shards, so a topic's queues are spread over both): figures per queue match what was
//! sent, pulled and committed; a reset moves the committed offsets and is pushed to the group's
//! clients as RESET_CONSUMER_CLIENT_OFFSET; bad headers get error responses.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use protocol::body::{
    ConsumeStats, ConsumerConnection, ConsumerData, HeartbeatData, ResetOffsetBody,
    ResetOffsetBodyForC, SubscriptionData, TopicStatsTable,
};
use protocol::{request_code, response_code, LanguageCode, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

const TOPIC: &str = "StatsTopic";
const GROUP: &str = "stats_group";
const QUEUES: i32 = 4;
/// Messages sent to each queue before and after the split time.
const FIRST: [i64; 4] = [3, 2, 0, 4];
const SECOND: [i64; 4] = [2, 1, 0, 3];

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

async fn invoke(client: &Client, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.expect("answered")
}

async fn topic_stats(client: &Client, topic: &str) -> RemotingCommand {
    invoke(
        client,
        RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", topic),
    )
    .await
}

async fn consume_stats(client: &Client, topic: Option<&str>) -> ConsumeStats {
    let mut req =
        RemotingCommand::request(request_code::GET_CONSUME_STATS).with_ext("consumerGroup", GROUP);
    if let Some(t) = topic {
        req = req.with_ext("topic", t);
    }
    let r = invoke(client, req).await;
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    ConsumeStats::from_json(&r.body).expect("ConsumeStats body")
}

/// Committed offsets per queue, as GET_CONSUME_STATS reports them.
fn consumer_offsets(stats: &ConsumeStats) -> BTreeMap<i32, i64> {
    stats
        .offset_table
        .iter()
        .filter(|(mq, _)| mq.topic == TOPIC)
        .map(|(mq, w)| (mq.queue_id, w.consumer_offset))
        .collect()
}

fn reset_request(timestamp: i64, force: Option<bool>) -> RemotingCommand {
    let mut req = RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
        .with_ext("group", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("timestamp", &timestamp.to_string());
    if let Some(f) = force {
        req = req.with_ext("isForce", if f { "true" } else { "false" });
    }
    req
}

async fn reset(client: &Client, req: RemotingCommand) -> BTreeMap<i32, i64> {
    let r = invoke(client, req).await;
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    let body = ResetOffsetBody::from_json(&r.body).expect("ResetOffsetBody");
    for mq in body.offset_table.keys() {
        assert_eq!(
            (mq.topic.as_str(), mq.broker_name.as_str()),
            (TOPIC, "broker-t-0")
        );
    }
    body.offset_table
        .iter()
        .map(|(mq, o)| (mq.queue_id, *o))
        .collect()
}

async fn commit(client: &Client, queue_id: i32, offset: i64) {
    let up = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", &queue_id.to_string())
        .with_ext("commitOffset", &offset.to_string());
    assert_eq!(invoke(client, up).await.code, response_code::SUCCESS);
}

fn heartbeat(client_id: &str, language: LanguageCode) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: GROUP.into(),
            subscription_data_set: vec![SubscriptionData {
                topic: TOPIC.into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    let mut cmd = RemotingCommand::request(request_code::HEART_BEAT)
        .with_body(protocol::body::to_json(&data));
    cmd.language = language;
    cmd.version = 401;
    cmd
}

/// Waits (bounded) until the recorder holds `n` RESET_CONSUMER_CLIENT_OFFSET pushes.
async fn resets_pushed(rec: &Recorder, n: usize) -> Vec<RemotingCommand> {
    for _ in 0..500 {
        let pushed: Vec<RemotingCommand> = rec
            .seen
            .borrow()
            .iter()
            .filter(|c| c.code == request_code::RESET_CONSUMER_CLIENT_OFFSET)
            .cloned()
            .collect();
        if pushed.len() >= n {
            return pushed;
        }
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
    panic!("no RESET_CONSUMER_CLIENT_OFFSET push arrived");
}

#[test]
fn stats_and_reset_follow_sends_and_commits() {
    let before_start = now_ms();
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let started = now_ms();
        for (q, n) in FIRST.iter().enumerate() {
            for i in 0..*n {
                let r = send(&client, TOPIC, q as i32, format!("a{q}-{i}").as_bytes(), "").await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
        }
        glommio::timer::sleep(Duration::from_millis(30)).await;
        let split = now_ms();
        glommio::timer::sleep(Duration::from_millis(30)).await;
        for (q, n) in SECOND.iter().enumerate() {
            for i in 0..*n {
                let r = send(&client, TOPIC, q as i32, format!("b{q}-{i}").as_bytes(), "").await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
        }
        let ended = now_ms();
        let max = |q: usize| FIRST[q] + SECOND[q];

        // Topic stats: every queue (the auto-created topic has 4), bounds as sent, last store time
        // equal to the newest record's.
        let r = topic_stats(&client, TOPIC).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let table = TopicStatsTable::from_json(&r.body).unwrap();
        assert_eq!(table.offset_table.len(), QUEUES as usize, "{table:?}");
        for (mq, t) in &table.offset_table {
            let q = mq.queue_id as usize;
            assert_eq!(
                (mq.topic.as_str(), mq.broker_name.as_str()),
                (TOPIC, "broker-t-0")
            );
            assert_eq!((t.min_offset, t.max_offset), (0, max(q)), "{mq:?}");
            if max(q) == 0 {
                assert_eq!(t.last_update_timestamp, 0);
            } else {
                let records = pull_all(&client, TOPIC, q as i32).await;
                let newest = records.last().unwrap();
                assert_eq!(t.last_update_timestamp, newest.store_timestamp, "{mq:?}");
                assert!((started..=ended).contains(&t.last_update_timestamp));
            }
        }

        // Consume queue 0 fully and queue 3 partly; queue 1 is never committed.
        let q0 = pull_all(&client, TOPIC, 0).await;
        assert_eq!(q0.len() as i64, max(0));
        commit(&client, 0, max(0)).await;
        commit(&client, 3, 4).await;
        let q3 = pull_all(&client, TOPIC, 3).await;
        for stats in [
            consume_stats(&client, Some(TOPIC)).await,
            consume_stats(&client, None).await,
        ] {
            assert_eq!(stats.offset_table.len(), QUEUES as usize, "{stats:?}");
            for (mq, w) in &stats.offset_table {
                let q = mq.queue_id as usize;
                let committed = [max(0), 0, 0, 4][q];
                assert_eq!(w.broker_offset, max(q), "{mq:?}");
                assert_eq!(w.consumer_offset, committed, "{mq:?}");
                assert_eq!(w.pull_offset, committed, "{mq:?}");
                let want_ts = match q {
                    0 => q0.last().unwrap().store_timestamp,
                    3 => q3[3].store_timestamp,
                    _ => 0,
                };
                assert_eq!(w.last_timestamp, want_ts, "{mq:?}");
            }
            // Queue 1 was never committed (counts from 0), queue 3 up to 4, queue 0 fully.
            assert_eq!(stats.total_diff(), max(1) + (max(3) - 4));
            // The group pulled nothing.
            assert_eq!(stats.consume_tps, 0.0, "{stats:?}");
        }

        // Rates over the last minute (the broker's uptime here): 15 messages put, and `pull`'s
        // group pulled every queue once above and queues 0 and 3 again, all through broker-t-0.
        let put: i64 = (0..4).map(max).sum();
        let pulled = put + max(0) + max(3);
        let table = TopicStatsTable::from_json(&topic_stats(&client, TOPIC).await.body).unwrap();
        let r = invoke(
            &client,
            RemotingCommand::request(request_code::GET_CONSUME_STATS)
                .with_ext("consumerGroup", "test_consumer")
                .with_ext("topic", TOPIC),
        )
        .await;
        let pulls = ConsumeStats::from_json(&r.body).unwrap();
        let uptime_s = (now_ms() - before_start) as f64 / 1000.0;
        assert!(
            table.topic_put_tps >= put as f64 / uptime_s,
            "{} over {uptime_s} s",
            table.topic_put_tps
        );
        // Both rates are over the same window, so their ratio is the counts' ratio.
        let ratio = pulls.consume_tps / table.topic_put_tps;
        let want = pulled as f64 / put as f64;
        assert!(
            (ratio - want).abs() < want * 0.05,
            "consumeTps {} / topicPutTps {} = {ratio}, want {want}",
            pulls.consume_tps,
            table.topic_put_tps
        );
        // Rates are per shard-broker: a send through broker-t-1 counts there, not on broker-t-0.
        let shard1 = connect(std::net::SocketAddr::from((
            [127, 0, 0, 1],
            broker.addr().port() + 4,
        )))
        .await;
        let r = send(&shard1, "OtherShardTopic", 0, b"o", "").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let rate = |r: RemotingCommand| TopicStatsTable::from_json(&r.body).unwrap().topic_put_tps;
        assert!(rate(topic_stats(&shard1, "OtherShardTopic").await) > 0.0);
        assert_eq!(rate(topic_stats(&client, "OtherShardTopic").await), 0.0);

        // An online consumer of the group (its connection records what the broker pushes).
        let seen = Rc::new(Recorder::default());
        let consumer = Client::connect_with_handler(broker.addr(), TIMEOUT, Some(seen.clone()))
            .await
            .unwrap();
        assert_eq!(
            invoke(&consumer, heartbeat("127.0.0.1@go", LanguageCode::Go))
                .await
                .code,
            response_code::SUCCESS
        );
        // A C++ client of the same group: it is pushed the list form C++ clients read.
        let seen_cpp = Rc::new(Recorder::default());
        let consumer_cpp =
            Client::connect_with_handler(broker.addr(), TIMEOUT, Some(seen_cpp.clone()))
                .await
                .unwrap();
        assert_eq!(
            invoke(&consumer_cpp, heartbeat("127.0.0.1@cpp", LanguageCode::Cpp))
                .await
                .code,
            response_code::SUCCESS
        );

        // Their connections as GET_CONSUMER_CONNECTION_LIST reports them.
        let r = invoke(
            &client,
            RemotingCommand::request(request_code::GET_CONSUMER_CONNECTION_LIST)
                .with_ext("consumerGroup", GROUP),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let cc: ConsumerConnection = protocol::body::from_json(&r.body).unwrap();
        let mut listed: Vec<(String, String, i32)> = cc
            .connection_set
            .iter()
            .map(|c| (c.client_id.clone(), c.language.clone(), c.version))
            .collect();
        listed.sort();
        assert_eq!(
            listed,
            vec![
                ("127.0.0.1@cpp".to_owned(), "CPP".to_owned(), 401),
                ("127.0.0.1@go".to_owned(), "GO".to_owned(), 401)
            ]
        );
        assert!(
            cc.connection_set
                .iter()
                .all(|c| c.client_addr.starts_with("127.0.0.1:")),
            "{cc:?}"
        );
        assert_eq!(cc.message_model, "CLUSTERING");
        assert!(cc.subscription_table.contains_key(TOPIC), "{cc:?}");

        // Reset to the split time: every queue moves to its first message of the second batch.
        let moved = reset(&client, reset_request(split, Some(true))).await;
        let want: BTreeMap<i32, i64> = (0..QUEUES).map(|q| (q, FIRST[q as usize])).collect();
        assert_eq!(moved, want);
        assert_eq!(
            consumer_offsets(&consume_stats(&client, Some(TOPIC)).await),
            want
        );
        let pushed = resets_pushed(&seen, 1).await;
        let push = &pushed[0];
        assert_eq!(push.ext("group"), Some(GROUP));
        assert_eq!(push.ext("topic"), Some(TOPIC));
        assert_eq!(push.ext("timestamp"), Some(split.to_string().as_str()));
        let pushed_offsets: BTreeMap<i32, i64> = ResetOffsetBody::from_json(&push.body)
            .unwrap()
            .offset_table
            .iter()
            .map(|(mq, o)| (mq.queue_id, *o))
            .collect();
        assert_eq!(pushed_offsets, want);
        let pushed_cpp = resets_pushed(&seen_cpp, 1).await;
        let for_c: ResetOffsetBodyForC = protocol::body::from_json(&pushed_cpp[0].body).unwrap();
        let for_c: BTreeMap<i32, i64> = for_c
            .offset_table
            .iter()
            .map(|e| (e.queue_id, e.offset))
            .collect();
        assert_eq!(for_c, want);

        // Without force, a reset never moves a group forward (here: to the end).
        let kept = reset(&client, reset_request(-1, Some(false))).await;
        assert_eq!(kept, want);
        // With force (the default when absent), -1 means the end of each queue.
        let ends = reset(&client, reset_request(-1, None)).await;
        assert_eq!(ends, (0..QUEUES).map(|q| (q, max(q as usize))).collect());

        // One queue to an exact offset; the others stay.
        let one = reset(
            &client,
            reset_request(0, Some(true))
                .with_ext("queueId", "1")
                .with_ext("offset", "1"),
        )
        .await;
        assert_eq!(one, BTreeMap::from([(1, 1)]));
        let after = consumer_offsets(&consume_stats(&client, Some(TOPIC)).await);
        assert_eq!(after[&1], 1);
        assert_eq!(after[&3], max(3));
        let out_of_range = invoke(
            &client,
            reset_request(0, Some(true))
                .with_ext("queueId", "1")
                .with_ext("offset", "100"),
        )
        .await;
        assert_eq!(out_of_range.code, response_code::SYSTEM_ERROR);
        assert!(out_of_range
            .remark
            .unwrap_or_default()
            .contains("not in consume queue range"));
        assert_eq!(
            consumer_offsets(&consume_stats(&client, Some(TOPIC)).await),
            after
        );

        // A C++ admin request (mqadmin -c) makes the broker push the list form to every client.
        let mut cpp = reset_request(0, Some(true));
        cpp.language = LanguageCode::Cpp;
        let from_zero = reset(&client, cpp).await;
        assert_eq!(from_zero, (0..QUEUES).map(|q| (q, 0)).collect());
        let pushed = resets_pushed(&seen, 5).await;
        let for_c: ResetOffsetBodyForC = protocol::body::from_json(&pushed[4].body).unwrap();
        assert_eq!(for_c.offset_table.len(), QUEUES as usize);
        assert!(for_c
            .offset_table
            .iter()
            .all(|e| e.offset == 0 && e.topic == TOPIC));
    });
}

#[test]
fn bad_headers_get_clear_errors() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        assert_eq!(
            send(&client, TOPIC, 0, b"x", "").await.code,
            response_code::SUCCESS
        );
        let cases = [
            (
                RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO),
                response_code::SYSTEM_ERROR,
                "topic",
            ),
            (
                RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO).with_ext("topic", " "),
                response_code::SYSTEM_ERROR,
                "topic",
            ),
            (
                RemotingCommand::request(request_code::GET_TOPIC_STATS_INFO)
                    .with_ext("topic", "NoSuchTopic"),
                response_code::TOPIC_NOT_EXIST,
                "NoSuchTopic",
            ),
            (
                RemotingCommand::request(request_code::GET_CONSUME_STATS).with_ext("topic", TOPIC),
                response_code::SYSTEM_ERROR,
                "consumerGroup",
            ),
            (
                RemotingCommand::request(request_code::GET_CONSUMER_CONNECTION_LIST),
                response_code::SYSTEM_ERROR,
                "consumerGroup",
            ),
            (
                RemotingCommand::request(request_code::GET_CONSUMER_CONNECTION_LIST)
                    .with_ext("consumerGroup", "nobody_group"),
                response_code::CONSUMER_NOT_ONLINE,
                "nobody_group",
            ),
            (
                RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("topic", TOPIC)
                    .with_ext("timestamp", "0"),
                response_code::SYSTEM_ERROR,
                "group",
            ),
            (
                RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("group", GROUP)
                    .with_ext("timestamp", "0"),
                response_code::SYSTEM_ERROR,
                "topic",
            ),
            (
                RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("group", GROUP)
                    .with_ext("topic", TOPIC)
                    .with_ext("timestamp", "soon"),
                response_code::SYSTEM_ERROR,
                "timestamp",
            ),
            (
                RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("group", GROUP)
                    .with_ext("topic", "NoSuchTopic")
                    .with_ext("timestamp", "0"),
                response_code::TOPIC_NOT_EXIST,
                "NoSuchTopic",
            ),
            (
                RemotingCommand::request(request_code::INVOKE_BROKER_TO_RESET_OFFSET)
                    .with_ext("group", "nobody_group")
                    .with_ext("topic", TOPIC)
                    .with_ext("timestamp", "0"),
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                "nobody_group",
            ),
        ];
        for (req, code, mentions) in cases {
            let what = format!("{} {:?}", req.code, req.ext_fields);
            let r = invoke(&client, req).await;
            let remark = r.remark.clone().unwrap_or_default();
            assert_eq!(r.code, code, "{what}: {remark}");
            assert!(remark.contains(mentions), "{what}: {remark}");
        }
        // An unknown group's stats are empty, not an error (as Java's broker answers).
        let r = invoke(
            &client,
            RemotingCommand::request(request_code::GET_CONSUME_STATS)
                .with_ext("consumerGroup", "nobody_group"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS);
        assert!(ConsumeStats::from_json(&r.body)
            .unwrap()
            .offset_table
            .is_empty());
        // The broker still serves.
        assert_eq!(
            topic_stats(&client, TOPIC).await.code,
            response_code::SUCCESS
        );
    });
}

#[test]
fn a_slave_refuses_to_reset_offsets() {
    // No master: the slave still serves requests while it retries its HA connection.
    let broker =
        Broker::start("brokerRole = \"SLAVE\"\nbrokerId = 1\nhaMasterAddress = \"127.0.0.1:1\"\n");
    run_local(async {
        let client = connect(broker.addr()).await;
        let r = invoke(&client, reset_request(0, Some(true))).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert!(
            r.remark.clone().unwrap_or_default().contains("slave"),
            "{:?}",
            r.remark
        );
    });
}

//! Send/pull round trips through the real broker binary: bodies and properties intact, batches,
//! lookups by offsetMsgId, tag filtering, long polling.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::*;
use protocol::header::{CommandHeader, SendMessageRequestHeader};
use protocol::message::{batch, msgid, properties};
use protocol::{request_code, response_code, RemotingCommand};

/// A code-10 send with long header names and this body (as the C++ client sends).
fn req10_like(body: &[u8]) -> RemotingCommand {
    let long = SendMessageRequestHeader::from(send_header("Batched", 1, ""));
    RemotingCommand::request(request_code::SEND_MESSAGE)
        .with_ext_fields(long.to_ext_fields())
        .with_body(Bytes::copy_from_slice(body))
}

fn props(tags: &str, keys: &str, uniq: &str) -> String {
    properties::encode([
        (properties::TAGS, tags),
        (properties::KEYS, keys),
        (properties::UNIQ_KEY, uniq),
        ("userProp", "v\u{e9}"),
    ])
}

/// The properties as stored: the client's, with the broker's cluster stamped (RocketMQ's broker
/// does so, for request-reply).
fn stamped(p: &str) -> String {
    properties::with(p, properties::CLUSTER, "TestCluster")
}

#[test]
fn send_then_pull_returns_identical_messages_on_every_queue() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let mut sent = Vec::new();
        for i in 0..12 {
            let queue = i % 4;
            let body = format!("body-{i}-").repeat(i as usize + 1).into_bytes();
            let p = props("TagA", &format!("key{i} other"), &format!("UNIQ{i:04}"));
            let r = send(&client, "RoundTrip", queue, &body, &p).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            assert_eq!(r.ext("queueId"), Some(queue.to_string().as_str()));
            let msg_id = r.ext("msgId").unwrap().to_owned();
            let queue_offset: i64 = r.ext("queueOffset").unwrap().parse().unwrap();
            assert_eq!(
                queue_offset,
                i64::from(i / 4),
                "offsets are consecutive per queue"
            );
            sent.push((queue, queue_offset, body, p, msg_id));
        }
        for queue in 0..4 {
            let records = pull_all(&client, "RoundTrip", queue).await;
            let expected: Vec<_> = sent.iter().filter(|s| s.0 == queue).collect();
            assert_eq!(records.len(), expected.len());
            for (rec, (q, off, body, p, msg_id)) in records.iter().zip(expected) {
                assert_eq!(rec.topic, "RoundTrip");
                assert_eq!(rec.queue_id, *q);
                assert_eq!(rec.queue_offset, *off);
                assert_eq!(&rec.body[..], &body[..]);
                assert_eq!(rec.properties, stamped(p));
                let (host, phys) = msgid::parse_offset_msg_id(msg_id).unwrap();
                assert_eq!(host, broker.addr());
                assert_eq!(phys, rec.physical_offset);
            }
        }
        // The fast ("VIP") port serves the same data.
        let fast = connect(broker.fast_addr()).await;
        assert_eq!(pull_all(&fast, "RoundTrip", 1).await.len(), 3);
        // Max offset and view by id.
        let max = fast
            .invoke(
                RemotingCommand::request(request_code::GET_MAX_OFFSET)
                    .with_ext("topic", "RoundTrip")
                    .with_ext("queueId", "2"),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(max.ext("offset"), Some("3"));
        let (_, phys) = msgid::parse_offset_msg_id(&sent[5].4).unwrap();
        let view = client
            .invoke(
                RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID)
                    .with_ext("offset", &phys.to_string()),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(view.code, response_code::SUCCESS, "{:?}", view.remark);
        let rec = &decode_records(&view.body)[0];
        assert_eq!(&rec.body[..], &sent[5].2[..]);
        // Query by key finds the message by one of its KEYS.
        let q = client
            .invoke(
                RemotingCommand::request(request_code::QUERY_MESSAGE)
                    .with_ext("topic", "RoundTrip")
                    .with_ext("key", "key7")
                    .with_ext("maxNum", "32")
                    .with_ext("beginTimestamp", "0")
                    .with_ext("endTimestamp", &i64::MAX.to_string()),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(q.code, response_code::SUCCESS, "{:?}", q.remark);
        let found = decode_records(&q.body);
        assert!(found.iter().any(|r| r.body[..] == sent[7].2[..]));
    });
}

#[test]
fn batches_store_every_message_and_answer_every_offset_msg_id() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let messages: Vec<(Vec<u8>, String)> = (0..5)
            .map(|i| {
                (
                    format!("batch-{i}").into_bytes(),
                    props("TagB", "", &format!("B{i}")),
                )
            })
            .collect();
        let mut body = BytesMut::new();
        batch::encode(
            messages.iter().map(|(b, p)| (0, b.as_slice(), p.as_str())),
            &mut body,
        )
        .unwrap();
        let mut req = send_request("Batched", 1, &body, "");
        req.code = request_code::SEND_BATCH_MESSAGE;
        let r = client.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let ids: Vec<&str> = r.ext("msgId").unwrap().split(',').collect();
        assert_eq!(ids.len(), 5);
        // The C++ client's form: code 10, long header names, batch=true.
        let mut long = SendMessageRequestHeader::from(send_header("Batched", 1, ""));
        long.batch = Some(true);
        let req10 = RemotingCommand::request(request_code::SEND_MESSAGE)
            .with_ext_fields(long.to_ext_fields())
            .with_body(Bytes::copy_from_slice(&body));
        let r10 = client.invoke(req10, TIMEOUT).await.unwrap();
        assert_eq!(r10.code, response_code::SUCCESS, "{:?}", r10.remark);
        assert_eq!(r10.ext("queueOffset"), Some("5"));
        // The C++ client writes the flag as "1".
        let mut cpp = req10_like(&body);
        cpp.ext_fields.insert("batch", "1");
        let r_cpp = client.invoke(cpp, TIMEOUT).await.unwrap();
        assert_eq!(r_cpp.code, response_code::SUCCESS, "{:?}", r_cpp.remark);
        assert_eq!(r_cpp.ext("queueOffset"), Some("10"));
        let records = pull_all(&client, "Batched", 1).await;
        assert_eq!(records.len(), 15);
        for (i, rec) in records.iter().enumerate() {
            assert_eq!(rec.queue_offset, i as i64);
            let (b, p) = &messages[i % 5];
            assert_eq!(&rec.body[..], &b[..]);
            assert_eq!(rec.properties, stamped(p));
        }
        for (id, rec) in ids.iter().zip(&records) {
            assert_eq!(
                msgid::parse_offset_msg_id(id).unwrap().1,
                rec.physical_offset
            );
        }
    });
}

#[test]
fn pulls_filter_by_tag() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        for i in 0..6 {
            let tag = if i % 2 == 0 { "TagA" } else { "TagB" };
            let r = send(
                &client,
                "Tagged",
                0,
                format!("m{i}").as_bytes(),
                &props(tag, "", &format!("T{i}")),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS);
        }
        let r = client
            .invoke(
                pull_request("g", "Tagged", 0, 0, 0, Some("TagB || TagC")),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let bodies: Vec<_> = decode_records(&r.body)
            .iter()
            .map(|r| r.body.clone())
            .collect();
        assert_eq!(
            bodies,
            vec![Bytes::from("m1"), Bytes::from("m3"), Bytes::from("m5")]
        );
        assert_eq!(r.ext("nextBeginOffset"), Some("6"));
        let all = client
            .invoke(pull_request("g", "Tagged", 0, 0, 0, Some("*")), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(decode_records(&all.body).len(), 6);
    });
}

/// How many messages one pull of `max_msg_nums` from offset 0 of `topic` queue 0 returns.
async fn pulled(client: &remoting::Client, topic: &str, max_msg_nums: i32) -> usize {
    let mut req = pull_request("g", topic, 0, 0, 0, None);
    req.set_ext("maxMsgNums", &max_msg_nums.to_string());
    let r = client.invoke(req, TIMEOUT).await.unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    decode_records(&r.body).len()
}

#[test]
fn a_pull_returns_at_most_max_transfer_count_messages() {
    for (config, want) in [("", 32), ("maxTransferCountOnMessageInMemory = 100", 100)] {
        let broker = Broker::start(config);
        run_local(async {
            let client = connect(broker.addr()).await;
            for i in 0..150 {
                let r = send(&client, "Transfer", 0, format!("m{i}").as_bytes(), "").await;
                assert_eq!(r.code, response_code::SUCCESS);
            }
            assert_eq!(pulled(&client, "Transfer", 128).await, want, "{config:?}");
            assert_eq!(pulled(&client, "Transfer", 10).await, 10, "{config:?}");
        });
    }
}

#[test]
fn long_poll_wakes_on_arrival_and_times_out_otherwise() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        assert_eq!(
            send(&client, "Polled", 3, b"first", "").await.code,
            response_code::SUCCESS
        );
        // Nothing past offset 1: the pull is held for its suspend time, then PULL_NOT_FOUND.
        let start = Instant::now();
        let r = client
            .invoke(pull_request("g", "Polled", 3, 1, 1500, None), TIMEOUT)
            .await
            .unwrap();
        let held = start.elapsed();
        assert_eq!(r.code, response_code::PULL_NOT_FOUND);
        assert!(
            held >= Duration::from_millis(1400) && held < Duration::from_secs(5),
            "{held:?}"
        );
        // A message arriving while the pull is parked wakes it at once.
        let waiting = client.clone();
        let parked = glommio::spawn_local(async move {
            let start = Instant::now();
            let r = waiting
                .invoke(pull_request("g", "Polled", 3, 1, 8000, None), TIMEOUT)
                .await
                .unwrap();
            (r, start.elapsed())
        });
        glommio::timer::sleep(Duration::from_millis(300)).await;
        // Another connection (maybe another shard) sends.
        let producer = connect(broker.addr()).await;
        assert_eq!(
            send(&producer, "Polled", 3, b"second", "").await.code,
            response_code::SUCCESS
        );
        let (r, waited) = parked.await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(&decode_records(&r.body)[0].body[..], b"second");
        assert!(waited < Duration::from_secs(3), "woken late: {waited:?}");
        // A pull of a queue of an unknown topic's queue beyond the queue count is refused.
        let bad = client
            .invoke(pull_request("g", "Polled", 99, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(bad.code, response_code::SYSTEM_ERROR);
        let none = client
            .invoke(pull_request("g", "NoSuchTopic", 0, 0, 0, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(none.code, response_code::TOPIC_NOT_EXIST);
    });
}

#[test]
fn queue_offsets_by_time_and_earliest_store_time() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let query = |code: i32, extra: Option<(&str, String)>| {
            let mut r = RemotingCommand::request(code)
                .with_ext("topic", "Timed")
                .with_ext("queueId", "1");
            if let Some((k, v)) = extra {
                r = r.with_ext(k, &v);
            }
            r
        };
        let empty = client
            .invoke(
                query(request_code::GET_EARLIEST_MSG_STORETIME, None),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(empty.ext("timestamp"), Some("-1"));
        let before = crate_now();
        for i in 0..3 {
            assert_eq!(
                send(&client, "Timed", 1, format!("{i}").as_bytes(), "")
                    .await
                    .code,
                response_code::SUCCESS
            );
        }
        glommio::timer::sleep(Duration::from_millis(30)).await;
        let middle = crate_now();
        glommio::timer::sleep(Duration::from_millis(30)).await;
        for i in 3..5 {
            assert_eq!(
                send(&client, "Timed", 1, format!("{i}").as_bytes(), "")
                    .await
                    .code,
                response_code::SUCCESS
            );
        }
        let earliest = client
            .invoke(
                query(request_code::GET_EARLIEST_MSG_STORETIME, None),
                TIMEOUT,
            )
            .await
            .unwrap();
        let ts: i64 = earliest.ext("timestamp").unwrap().parse().unwrap();
        assert!(
            ts >= before && ts <= middle,
            "{ts} not in [{before}, {middle}]"
        );
        let found = client
            .invoke(
                query(
                    request_code::SEARCH_OFFSET_BY_TIMESTAMP,
                    Some(("timestamp", middle.to_string())),
                ),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(found.ext("offset"), Some("3"));
        let min = client
            .invoke(query(request_code::GET_MIN_OFFSET, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(min.ext("offset"), Some("0"));
        let max = client
            .invoke(query(request_code::GET_MAX_OFFSET, None), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(max.ext("offset"), Some("5"));
    });
}

fn crate_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn prepared_transaction_messages_wait_in_the_half_topic() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let mut req = send_request("TxTopic", 2, b"half", &props("TagT", "", "TX1"));
        req.ext_fields.insert(
            "f",
            &protocol::message::record::sys_flag::TRANSACTION_PREPARED.to_string(),
        );
        let r = client.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert!(
            pull_all(&client, "TxTopic", 2).await.is_empty(),
            "not visible before commit"
        );
        let half = pull_all(&client, "RMQ_SYS_TRANS_HALF_TOPIC", 0).await;
        assert_eq!(half.len(), 1);
        assert_eq!(&half[0].body[..], b"half");
        assert_eq!(
            properties::get(&half[0].properties, properties::REAL_TOPIC),
            Some("TxTopic")
        );
        assert_eq!(
            properties::get(&half[0].properties, properties::REAL_QUEUE_ID),
            Some("2")
        );
    });
}

#[test]
fn one_shard_and_more_shards_than_cores_serve_the_same() {
    for shards in [1, 3] {
        let broker = Broker::start(&format!("shardCount = {shards}"));
        run_local(async {
            let client = connect(broker.addr()).await;
            for q in 0..4 {
                let r = send(
                    &client,
                    "Sharded",
                    q,
                    format!("s{shards}q{q}").as_bytes(),
                    "",
                )
                .await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
            for q in 0..4 {
                let records = pull_all(&client, "Sharded", q).await;
                assert_eq!(records.len(), 1);
                assert_eq!(records[0].body, Bytes::from(format!("s{shards}q{q}")));
                // The shard id lives in bits 48.. of the physical offset.
                let shard = records[0].physical_offset >> 48;
                assert!(shard < shards, "offset names shard {shard} of {shards}");
            }
        });
        assert_eq!(
            std::fs::read_dir(broker.dir.join("store"))
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with("shard-")
                })
                .count(),
            shards as usize
        );
    }
}

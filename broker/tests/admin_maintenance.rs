//! The HA and store-maintenance admin codes against a real broker process, checked field by field
//! against the JSON Apache RocketMQ 5's classes write: QUERY_CONSUME_QUEUE (321),
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225), DELETE_EXPIRED_COMMITLOG (329),
//! CLEAN_EXPIRED_CONSUMEQUEUE (306), CLEAN_UNUSED_TOPIC (316), GET_BROKER_HA_STATUS (907) and
//! RESET_MASTER_FLUSH_OFFSET (908) on a master/slave pair, GET_BROKER_EPOCH_CACHE (1007) outside
//! controller mode, and the codes refused with a reason (401, 402).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use ha_common::*;
use protocol::message::properties::java_string_hash;
use protocol::{request_code, response_code, RemotingCommand};
use serde_json::Value;

async fn call(addr: SocketAddr, req: RemotingCommand) -> RemotingCommand {
    connect(addr)
        .await
        .invoke(req, TIMEOUT)
        .await
        .expect("answer")
}

fn json(resp: &RemotingCommand) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or_else(|e| {
        panic!(
            "body is not JSON ({e}): {}",
            String::from_utf8_lossy(&resp.body)
        )
    })
}

/// The object's field names, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

fn query_cq(
    topic: &str,
    queue: i32,
    index: i64,
    count: i32,
    group: Option<&str>,
) -> RemotingCommand {
    let mut r = RemotingCommand::request(request_code::QUERY_CONSUME_QUEUE)
        .with_ext("topic", topic)
        .with_ext("queueId", &queue.to_string())
        .with_ext("index", &index.to_string())
        .with_ext("count", &count.to_string());
    if let Some(g) = group {
        r = r.with_ext("consumerGroup", g);
    }
    r
}

#[test]
fn query_consume_queue_answers_apaches_body() {
    let broker = Broker::start("");
    run_local(async {
        let c = connect(broker.addr()).await;
        let mut phys = Vec::new();
        for i in 0..3 {
            let r = send(
                &c,
                "CqTopic",
                0,
                format!("m{i}").as_bytes(),
                "TAGS\u{1}TagA\u{2}",
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            phys.push(phys_of_msg_id(r.ext("msgId").unwrap()));
        }
        let r = call(broker.addr(), query_cq("CqTopic", 0, 0, 10, None)).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let body = json(&r);
        // No subscription asked: Apache leaves subscriptionData and filterData out (null).
        assert_eq!(keys(&body), ["maxQueueIndex", "minQueueIndex", "queueData"]);
        assert_eq!(body["maxQueueIndex"], 3);
        assert_eq!(body["minQueueIndex"], 0);
        let units = body["queueData"].as_array().unwrap();
        assert_eq!(units.len(), 3);
        for (unit, phys) in units.iter().zip(&phys) {
            assert_eq!(
                keys(unit),
                ["eval", "physicOffset", "physicSize", "tagsCode"]
            );
            assert_eq!(unit["physicOffset"].as_i64(), Some(*phys));
            assert!(unit["physicSize"].as_i64().unwrap() > 0);
            assert_eq!(
                unit["tagsCode"].as_i64(),
                Some(i64::from(java_string_hash("TagA")))
            );
            assert_eq!(unit["eval"], false);
        }
        // count and index bound the units.
        let r = call(broker.addr(), query_cq("CqTopic", 0, 1, 1, None)).await;
        let units = json(&r)["queueData"].as_array().unwrap().clone();
        assert_eq!(units.len(), 1);
        assert_eq!(units[0]["physicOffset"].as_i64(), Some(phys[1]));
        // A group that is not online: Apache's filterData text.
        let r = call(
            broker.addr(),
            query_cq("CqTopic", 0, 0, 10, Some("offline-g")),
        )
        .await;
        assert_eq!(json(&r)["filterData"], "offline-g@CqTopic is not online!");
        // An index past the end: SUCCESS, Apache's remark, no units.
        let r = call(broker.addr(), query_cq("CqTopic", 0, 9, 10, None)).await;
        assert_eq!(r.code, response_code::SUCCESS);
        assert_eq!(
            r.remark.as_deref(),
            Some("Index 9 of 0@CqTopic is not exist!")
        );
        assert!(json(&r).get("queueData").is_none());
        // A queue that does not exist.
        let r = call(broker.addr(), query_cq("NoSuchTopic", 0, 0, 10, None)).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert_eq!(r.remark.as_deref(), Some("0@NoSuchTopic is not exist!"));
    });
}

fn group_list(body: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST)
        .with_body(Bytes::copy_from_slice(body.as_bytes()))
}

fn get_group(group: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG).with_ext("group", group)
}

#[test]
fn subscription_group_list_creates_every_group_or_none() {
    let broker = Broker::start("");
    run_local(async {
        let r = call(
            broker.addr(),
            group_list(
                r#"{"groupConfigList":[{"groupName":"bulk-a","retryMaxTimes":3},{"groupName":"bulk-b","consumeBroadcastEnable":false}]}"#,
            ),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let a = call(broker.addr(), get_group("bulk-a")).await;
        assert_eq!(a.code, response_code::SUCCESS, "{:?}", a.remark);
        assert_eq!(json(&a)["retryMaxTimes"], 3);
        let b = call(broker.addr(), get_group("bulk-b")).await;
        assert_eq!(json(&b)["consumeBroadcastEnable"], false);
        // One bad name: Apache's INVALID_PARAMETER and remark, and nothing of the list is created.
        let r = call(
            broker.addr(),
            group_list(r#"{"groupConfigList":[{"groupName":"bulk-c"},{"groupName":"bad name"}]}"#),
        )
        .await;
        assert_eq!(r.code, response_code::INVALID_PARAMETER);
        assert_eq!(
            r.remark.as_deref(),
            Some("The specified group: bad name, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
        );
        let c = call(broker.addr(), get_group("bulk-c")).await;
        assert_eq!(c.code, response_code::SUBSCRIPTION_GROUP_NOT_EXIST);
        // A body that is no list: an error, not a panic.
        let r = call(broker.addr(), group_list("{not json")).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
    });
}

/// Whether a directory named `name` exists anywhere under `dir`.
fn has_dir(dir: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        p.is_dir() && (e.file_name() == name || has_dir(&p, name))
    })
}

#[test]
fn clean_unused_topic_removes_the_queues_of_topics_without_config() {
    let mut broker = Broker::start("");
    run_local(async {
        let c = connect(broker.addr()).await;
        for topic in ["Orphan", "Kept"] {
            let r = send(&c, topic, 0, b"x", "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
    });
    broker.stop();
    // The topic's config goes while its queues stay (a config restored from an older copy).
    let path = broker.dir.join("store/config/topics.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(v["topicConfigTable"]
        .as_object_mut()
        .unwrap()
        .remove("Orphan")
        .is_some());
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    broker.spawn();
    broker.wait_ready();
    let store = broker.dir.join("store");
    assert!(
        has_dir(&store, "Orphan"),
        "the orphan queue is on disk before"
    );
    run_local(async {
        let r = call(
            broker.addr(),
            RemotingCommand::request(request_code::CLEAN_UNUSED_TOPIC),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let remark = r.remark.unwrap_or_default();
        assert!(remark.contains("Orphan"), "{remark}");
        assert!(!remark.contains("Kept"), "{remark}");
    });
    assert!(!has_dir(&store, "Orphan"), "the orphan queue is gone");
    assert!(
        has_dir(&store, "Kept"),
        "a topic with a config keeps its queues"
    );
}

#[test]
fn delete_expired_commit_log_runs_retention_now() {
    // Segments expire at once, but deleteWhen never comes and the disk is never "full": only the
    // admin request deletes.
    let broker = Broker::start(
        "fileReservedTime = 0\ndeleteWhen = \"25\"\ndiskMaxUsedSpaceRatio = 99\ndiskSpaceCleanForciblyRatio = 99\n",
    );
    run_local(async {
        let c = connect(broker.addr()).await;
        let body = vec![b'x'; 900 * 1024];
        // More than one 4 MiB segment.
        for _ in 0..6 {
            let r = send(&c, "RetentionTopic", 0, &body, "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        let min_before = call(broker.addr(), min_offset("RetentionTopic", 0)).await;
        assert_eq!(min_before.ext("offset"), Some("0"));
        let start = Instant::now();
        let remark = loop {
            let r = call(
                broker.addr(),
                RemotingCommand::request(request_code::DELETE_EXPIRED_COMMITLOG),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            let remark = r.remark.unwrap_or_default();
            // The queue owner's first segment goes once it is flushed.
            if deleted_segments(&remark) == 1 {
                break remark;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no segment deleted: {remark}"
            );
            glommio::timer::sleep(Duration::from_millis(300)).await;
        };
        println!("deleteExpiredCommitLog: {remark}");
        let min_after = call(broker.addr(), min_offset("RetentionTopic", 0)).await;
        let min: i64 = min_after.ext("offset").unwrap().parse().unwrap();
        assert!(
            min > 0,
            "the queue's min offset rose past the deleted records"
        );
        // The ConsumeQueue half again: nothing left to clean, still SUCCESS with what it did.
        let r = call(
            broker.addr(),
            RemotingCommand::request(request_code::CLEAN_EXPIRED_CONSUMEQUEUE),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert!(
            r.remark
                .as_deref()
                .is_some_and(|t| t.contains("expired ConsumeQueue files deleted")),
            "{:?}",
            r.remark
        );
    });
}

/// The CommitLog segments a DELETE_EXPIRED_COMMITLOG remark says went, over every shard
/// (`shard N: K CommitLog segments, ...; ...`).
fn deleted_segments(remark: &str) -> usize {
    remark
        .split("; ")
        .filter_map(|part| {
            let (_, rest) = part.split_once(": ")?;
            rest.split_once(" CommitLog segments")?
                .0
                .parse::<usize>()
                .ok()
        })
        .sum()
}

fn min_offset(topic: &str, queue: i32) -> RemotingCommand {
    RemotingCommand::request(request_code::GET_MIN_OFFSET)
        .with_ext("topic", topic)
        .with_ext("queueId", &queue.to_string())
}

#[test]
fn request_modes_are_refused_with_the_reason_and_epochs_need_controller_mode() {
    let broker = Broker::start("");
    run_local(async {
        for code in [
            request_code::SET_MESSAGE_REQUEST_MODE,
            request_code::GET_ALL_MESSAGE_REQUEST_MODE,
        ] {
            let r = call(broker.addr(), RemotingCommand::request(code)).await;
            assert_eq!(r.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
            assert!(
                r.remark
                    .as_deref()
                    .unwrap_or_default()
                    .contains("QUERY_ASSIGNMENT"),
                "{:?}",
                r.remark
            );
        }
        let r = call(
            broker.addr(),
            RemotingCommand::request(request_code::GET_BROKER_EPOCH_CACHE),
        )
        .await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert_eq!(
            r.remark.as_deref(),
            Some("this request only for controllerMode ")
        );
        let r = call(
            broker.addr(),
            RemotingCommand::request(request_code::POP_ROLLBACK),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS);
        assert!(r.remark.is_some());
    });
}

fn ha_status() -> RemotingCommand {
    RemotingCommand::request(request_code::GET_BROKER_HA_STATUS)
}

#[test]
fn ha_status_on_a_master_and_its_slave() {
    let master = Broker::start(&master_extra("ASYNC_MASTER", "ASYNC_FLUSH"));
    let slave = Broker::start(&slave_extra(Some(&master), None));
    run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(60)).await;
        let c = connect(master.addr()).await;
        for i in 0..5 {
            let r = send(&c, "HaStatusTopic", 0, format!("ha {i}").as_bytes(), "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        wait_caught_up(master.addr(), slave.addr(), 2, Duration::from_secs(60)).await;

        let r = call(master.addr(), ha_status()).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let m = json(&r);
        assert_eq!(
            keys(&m),
            [
                "haClientRuntimeInfo",
                "haConnectionInfo",
                "inSyncSlaveNums",
                "master",
                "masterCommitLogMaxOffset"
            ]
        );
        assert_eq!(m["master"], true);
        // One stream per shard of the broker reached: its own as a shard-broker, every shard's
        // when the shards make one broker (TEST_SHARD_ROUTING=forward).
        let streams = if std::env::var("TEST_SHARD_ROUTING").as_deref() == Ok("forward") {
            2
        } else {
            1
        };
        assert_eq!(m["inSyncSlaveNums"], streams);
        let conns = m["haConnectionInfo"].as_array().unwrap();
        assert_eq!(conns.len(), streams as usize, "{m}");
        let end = m["masterCommitLogMaxOffset"].as_i64().unwrap();
        assert!(end > 0);
        let mut acked = 0;
        for conn in conns {
            assert_eq!(
                keys(conn),
                [
                    "addr",
                    "diff",
                    "inSync",
                    "slaveAckOffset",
                    "transferFromWhere",
                    "transferredByteInSecond"
                ]
            );
            assert!(conn["addr"].as_str().unwrap().starts_with("127.0.0.1:"));
            acked += conn["slaveAckOffset"].as_i64().unwrap();
            assert_eq!(conn["diff"], 0);
            assert_eq!(conn["inSync"], true);
            assert_eq!(conn["transferFromWhere"], 0);
        }
        assert_eq!(acked, end, "the slaves hold every shard's log");

        // Apache's slave fields, and the master flush offset an admin sets on a slave.
        let r = call(
            slave.addr(),
            RemotingCommand::request(request_code::RESET_MASTER_FLUSH_OFFSET)
                .with_ext("masterFlushOffset", "4242"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = call(slave.addr(), ha_status()).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let s = json(&r);
        assert_eq!(s["master"], false);
        assert_eq!(s["haConnectionInfo"].as_array().map(Vec::len), Some(0));
        let client = &s["haClientRuntimeInfo"];
        assert_eq!(
            keys(client),
            [
                "lastReadTimestamp",
                "lastWriteTimestamp",
                "masterAddr",
                "masterFlushOffset",
                "maxOffset",
                "transferredByteInSecond"
            ]
        );
        assert_eq!(client["masterAddr"], master.ha_addr().to_string());
        assert_eq!(client["maxOffset"].as_i64(), Some(end));
        assert_eq!(client["masterFlushOffset"], 4242);
        let now = now_ms();
        for k in ["lastReadTimestamp", "lastWriteTimestamp"] {
            let t = client[k].as_i64().unwrap();
            assert!(t > now - 120_000 && t <= now + 1_000, "{k} = {t}");
        }
        // A master ignores it, as Apache's does; a header without the field is refused.
        let r = call(
            master.addr(),
            RemotingCommand::request(request_code::RESET_MASTER_FLUSH_OFFSET)
                .with_ext("masterFlushOffset", "1"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS);
        let m = json(&call(master.addr(), ha_status()).await);
        assert_eq!(
            m["haClientRuntimeInfo"],
            serde_json::json!({"lastReadTimestamp":0,"lastWriteTimestamp":0,"masterFlushOffset":0,"maxOffset":0,"transferredByteInSecond":0}),
            "a master's client part is empty, as Apache's"
        );
        let r = call(
            slave.addr(),
            RemotingCommand::request(request_code::RESET_MASTER_FLUSH_OFFSET),
        )
        .await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
    });
}

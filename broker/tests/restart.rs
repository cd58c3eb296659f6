//! Durability across restarts: consumer offsets and topics survive a graceful stop; under SYNC_FLUSH a
//! SIGKILL loses no acknowledged message; a restart with another shard count is refused.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use protocol::{request_code, response_code, RemotingCommand};

fn offset_request(code: i32, group: &str, topic: &str, queue: i32) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", &queue.to_string())
}

#[test]
fn offsets_and_topics_survive_a_graceful_restart() {
    let mut broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        for q in 0..4 {
            assert_eq!(
                send(&client, "Durable", q, b"x", "").await.code,
                response_code::SUCCESS
            );
            let up = offset_request(request_code::UPDATE_CONSUMER_OFFSET, "cg", "Durable", q)
                .with_ext("commitOffset", &(q as i64 + 10).to_string());
            assert_eq!(
                client.invoke(up, TIMEOUT).await.unwrap().code,
                response_code::SUCCESS
            );
        }
        // Unknown group on a queue whose first message is still there: offset 0, as RocketMQ answers.
        let q = offset_request(
            request_code::QUERY_CONSUMER_OFFSET,
            "new-group",
            "Durable",
            0,
        );
        let r = client.invoke(q, TIMEOUT).await.unwrap();
        assert_eq!(
            (r.code, r.ext("offset")),
            (response_code::SUCCESS, Some("0"))
        );
        let q = offset_request(
            request_code::QUERY_CONSUMER_OFFSET,
            "new-group",
            "Durable",
            0,
        )
        .with_ext("setZeroIfNotFound", "false");
        assert_eq!(
            client.invoke(q, TIMEOUT).await.unwrap().code,
            response_code::QUERY_NOT_FOUND
        );
    });
    let status = broker.stop();
    assert!(
        status.success(),
        "graceful stop exits 0: {status}\n{}",
        broker.log()
    );
    assert!(broker.log().contains("shut down cleanly"));
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        for q in 0..4 {
            let r = client
                .invoke(
                    offset_request(request_code::QUERY_CONSUMER_OFFSET, "cg", "Durable", q),
                    TIMEOUT,
                )
                .await
                .unwrap();
            assert_eq!(r.code, response_code::SUCCESS);
            assert_eq!(r.ext("offset"), Some((q as i64 + 10).to_string().as_str()));
            assert_eq!(pull_all(&client, "Durable", q).await.len(), 1);
        }
        let all = client
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        let table: protocol::body::TopicConfigSerializeWrapper =
            protocol::body::from_json(&all.body).unwrap();
        assert_eq!(table.topic_config_table["Durable"].write_queue_nums, 4);
        assert!(table.topic_config_table.contains_key("TBW102"));
    });
}

#[test]
fn sigkill_under_sync_flush_loses_no_acknowledged_message() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    type Acked = Vec<(i32, i64, Vec<u8>)>;
    let acked: Rc<RefCell<Acked>> = Rc::default();
    run_local(async {
        let mut producers = Vec::new();
        for p in 0..4 {
            let acked = acked.clone();
            let addr = broker.addr();
            producers.push(glommio::spawn_local(async move {
                let client = connect(addr).await;
                for i in 0.. {
                    let queue = (i % 4) as i32;
                    let body = format!("p{p}-m{i}-{}", "z".repeat(i % 300)).into_bytes();
                    match client
                        .invoke(
                            send_request("Crash", queue, &body, ""),
                            Duration::from_secs(3),
                        )
                        .await
                    {
                        Ok(r) if r.code == response_code::SUCCESS => {
                            let off = r.ext("queueOffset").unwrap().parse().unwrap();
                            acked.borrow_mut().push((queue, off, body));
                        }
                        _ => return,
                    }
                }
            }));
        }
        glommio::timer::sleep(Duration::from_millis(1500)).await;
        broker.kill9();
        for p in producers {
            p.await;
        }
    });
    let acked = acked.take();
    assert!(
        acked.len() > 20,
        "too few sends acknowledged: {}",
        acked.len()
    );
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        let mut queues = Vec::new();
        for q in 0..4 {
            queues.push(pull_all(&client, "Crash", q).await);
        }
        for (queue, offset, body) in &acked {
            let rec = queues[*queue as usize]
                .get(*offset as usize)
                .unwrap_or_else(|| panic!("acknowledged message {queue}/{offset} lost"));
            assert_eq!(rec.queue_offset, *offset);
            assert_eq!(&rec.body[..], &body[..], "queue {queue} offset {offset}");
        }
        // The broker keeps accepting after recovery.
        assert_eq!(
            send(&client, "Crash", 0, b"after", "").await.code,
            response_code::SUCCESS
        );
    });
}

#[test]
fn restart_with_another_shard_count_is_refused() {
    let mut broker = Broker::start("");
    assert!(broker.stop().success());
    let text = std::fs::read_to_string(&broker.config)
        .unwrap()
        .replace("shardCount = 2", "shardCount = 1");
    std::fs::write(&broker.config, text).unwrap();
    let (status, output) = broker.run_expecting_exit();
    assert!(!status.success());
    assert!(output.contains("shardCount = 2"), "{output}");
}

#[test]
fn sigterm_answers_parked_pulls_and_exits_zero() {
    let mut broker = Broker::start("");
    let pid = broker.pid();
    let (code, waited) = run_local(async {
        let client = connect(broker.addr()).await;
        assert_eq!(
            send(&client, "Parked", 0, b"x", "").await.code,
            response_code::SUCCESS
        );
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            send_signal(pid, libc::SIGTERM);
        });
        let start = std::time::Instant::now();
        let r = client
            .invoke(
                pull_request("g", "Parked", 0, 1, 20_000, None),
                Duration::from_secs(25),
            )
            .await
            .unwrap();
        (r.code, start.elapsed())
    });
    assert_eq!(code, response_code::PULL_NOT_FOUND);
    assert!(
        waited < Duration::from_secs(5),
        "parked pull released late: {waited:?}"
    );
    let status = broker.wait_stopped();
    assert!(status.success(), "{status}\n{}", broker.log());
}

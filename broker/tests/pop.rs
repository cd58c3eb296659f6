//! POP consumption (RocketMQ 5) over real sockets against the broker binary, with the project's
//! client speaking the remoting POP codes as Apache's Java client does: pop and ack, redelivery after
//! the invisible time with reconsumeTimes + 1, change of invisible time, batch ack, the dead-letter
//! queue after the group's retryMaxTimes, ordered (FIFO) pops, long polling, and ack state across a
//! graceful restart and a SIGKILL.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use client::pop::{self, PopOptions, PoppedMessage};
use common::*;
use protocol::header::extra_info::RetryMark;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

/// The brokerName of shard 0 (every shard is a broker of its own by default; one broker in `forward`).
fn broker_name() -> &'static str {
    if std::env::var("TEST_SHARD_ROUTING").is_ok_and(|m| m == "forward") {
        "broker-t"
    } else {
        "broker-t-0"
    }
}

fn options(invisible_ms: u64) -> PopOptions {
    PopOptions {
        invisible_time: Duration::from_millis(invisible_ms),
        ..PopOptions::default()
    }
}

async fn send_bodies(client: &Client, topic: &str, queue: i32, bodies: &[String]) {
    for b in bodies {
        let r = send(client, topic, queue, b.as_bytes(), "").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    }
}

async fn pop_now(client: &Client, group: &str, topic: &str, o: &PopOptions) -> Vec<PoppedMessage> {
    let r = pop::pop(client, broker_name(), group, topic, o, TIMEOUT)
        .await
        .unwrap();
    if r.code == response_code::SUCCESS {
        assert!(!r.messages.is_empty());
    } else {
        assert_eq!(r.code, response_code::POLLING_TIMEOUT);
    }
    r.messages
}

/// Pops until `want` messages came or `limit` passed (each pop long-polls 500 ms).
async fn pop_until(
    client: &Client,
    group: &str,
    topic: &str,
    o: &PopOptions,
    want: usize,
    limit: Duration,
) -> Vec<PoppedMessage> {
    let start = Instant::now();
    let mut out = Vec::new();
    let o = PopOptions {
        poll_time: Duration::from_millis(500),
        ..o.clone()
    };
    while out.len() < want && start.elapsed() < limit {
        out.extend(pop_now(client, group, topic, &o).await);
    }
    out
}

fn body(m: &PoppedMessage) -> String {
    String::from_utf8(m.body.to_vec()).unwrap()
}

fn bodies(n: usize, tag: &str) -> Vec<String> {
    (0..n).map(|i| format!("{tag}-{i:03}")).collect()
}

#[test]
fn popped_message_comes_back_after_its_invisible_time_unless_acked() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        send_bodies(&client, "PopT", 0, &bodies(3, "m")).await;
        let got = pop_now(&client, "pg", "PopT", &options(1500)).await;
        assert_eq!(got.iter().map(body).collect::<Vec<_>>(), bodies(3, "m"));
        assert!(got
            .iter()
            .all(|m| m.reconsume_times == 0 && m.topic == "PopT"));
        assert!(got
            .iter()
            .all(|m| m.handle.broker_name == broker_name() && m.handle.retry == RetryMark::Normal));
        // Invisible now: a second pop finds nothing.
        assert!(pop_now(&client, "pg", "PopT", &options(1500))
            .await
            .is_empty());
        pop::ack(&client, "pg", &got[0], TIMEOUT).await.unwrap();
        pop::ack(&client, "pg", &got[2], TIMEOUT).await.unwrap();
        // Acking twice is harmless, as in RocketMQ.
        pop::ack(&client, "pg", &got[2], TIMEOUT).await.unwrap();

        let again = pop_until(
            &client,
            "pg",
            "PopT",
            &options(1500),
            1,
            Duration::from_secs(8),
        )
        .await;
        assert_eq!(again.len(), 1, "only the unacked message comes back");
        let m = &again[0];
        assert_eq!(body(m), "m-001");
        assert_eq!(m.reconsume_times, 1);
        assert_eq!(m.topic, "PopT", "answered under the topic asked for");
        assert_eq!(m.handle.retry, RetryMark::RetryV1);
        assert_eq!(m.real_topic("pg"), "%RETRY%pg_PopT");
        assert!(m.property("1ST_POP_TIME").is_some());
        pop::ack(&client, "pg", m, TIMEOUT).await.unwrap();
        // Acked in the retry topic: it does not come back.
        let late = pop_until(
            &client,
            "pg",
            "PopT",
            &options(1500),
            1,
            Duration::from_secs(3),
        )
        .await;
        assert!(
            late.is_empty(),
            "{:?}",
            late.iter().map(body).collect::<Vec<_>>()
        );
        // A bad receipt handle is refused with a clear answer.
        let bad = RemotingCommand::request(request_code::ACK_MESSAGE)
            .with_ext("consumerGroup", "pg")
            .with_ext("topic", "PopT")
            .with_ext("queueId", "0")
            .with_ext("offset", "0")
            .with_ext("extraInfo", "garbage");
        let r = client.invoke(bad, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::INVALID_PARAMETER, "{:?}", r.remark);
    });
}

#[test]
fn change_invisible_time_and_batch_ack() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        send_bodies(&client, "PopC", 1, &bodies(3, "c")).await;
        let mut got = pop_now(&client, "cg", "PopC", &options(1000)).await;
        assert_eq!(got.len(), 3);
        // c-000 stays invisible for 4 s from now; c-001 and c-002 are acked in one batch.
        pop::change_invisible_time(&client, "cg", &mut got[0], Duration::from_secs(4), TIMEOUT)
            .await
            .unwrap();
        pop::batch_ack(&client, broker_name(), "cg", &[&got[1], &got[2]], TIMEOUT)
            .await
            .unwrap();
        let changed_at = Instant::now();
        let early = pop_until(
            &client,
            "cg",
            "PopC",
            &options(1000),
            1,
            Duration::from_secs(2),
        )
        .await;
        assert!(
            early.is_empty(),
            "{:?}",
            early.iter().map(body).collect::<Vec<_>>()
        );
        let back = pop_until(
            &client,
            "cg",
            "PopC",
            &options(5000),
            1,
            Duration::from_secs(8),
        )
        .await;
        assert!(
            changed_at.elapsed() >= Duration::from_millis(3900),
            "{:?}",
            changed_at.elapsed()
        );
        assert_eq!(back.iter().map(body).collect::<Vec<_>>(), vec!["c-000"]);
        assert_eq!(back[0].reconsume_times, 1);
        // The new handle (after a change) acks too.
        let mut m = back[0].clone();
        pop::change_invisible_time(&client, "cg", &mut m, Duration::from_secs(1), TIMEOUT)
            .await
            .unwrap();
        pop::ack(&client, "cg", &m, TIMEOUT).await.unwrap();
        let none = pop_until(
            &client,
            "cg",
            "PopC",
            &options(1000),
            1,
            Duration::from_secs(2),
        )
        .await;
        assert!(none.is_empty());
    });
}

async fn update_group(client: &Client, group: &str, retry_max_times: i32) {
    let body = serde_json::json!({"groupName": group, "retryMaxTimes": retry_max_times});
    let r = client
        .invoke(
            RemotingCommand::request(request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
                .with_body(serde_json::to_vec(&body).unwrap()),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

async fn max_offset(client: &Client, topic: &str, queue: i32) -> i64 {
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_MAX_OFFSET)
                .with_ext("topic", topic)
                .with_ext("queueId", &queue.to_string()),
            TIMEOUT,
        )
        .await
        .unwrap();
    if r.code != response_code::SUCCESS {
        return 0;
    }
    r.ext("offset").unwrap().parse().unwrap()
}

#[test]
fn message_goes_to_the_dead_letter_queue_after_retry_max_times() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        update_group(&client, "dg", 2).await;
        send_bodies(&client, "PopD", 0, &bodies(1, "d")).await;
        // Delivered 1 + retryMaxTimes times, never acked.
        for attempt in 0..3 {
            let got = pop_until(
                &client,
                "dg",
                "PopD",
                &options(800),
                1,
                Duration::from_secs(6),
            )
            .await;
            assert_eq!(got.len(), 1, "attempt {attempt}");
            assert_eq!(got[0].reconsume_times, attempt);
        }
        let start = Instant::now();
        while max_offset(&client, "%DLQ%dg", 0).await < 1
            && start.elapsed() < Duration::from_secs(6)
        {
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(max_offset(&client, "%DLQ%dg", 0).await, 1, "in the DLQ");
        let more = pop_until(
            &client,
            "dg",
            "PopD",
            &options(800),
            1,
            Duration::from_secs(2),
        )
        .await;
        assert!(more.is_empty(), "not delivered again after the DLQ");
    });
}

#[test]
fn ordered_pop_holds_the_queue_until_the_message_is_acked() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        send_bodies(&client, "PopO", 2, &bodies(3, "o")).await;
        let o = PopOptions {
            queue_id: 2,
            max_msg_nums: 1,
            order: true,
            ..options(1500)
        };
        let first = pop_now(&client, "og", "PopO", &o).await;
        assert_eq!(first.iter().map(body).collect::<Vec<_>>(), vec!["o-000"]);
        assert!(first[0].handle.is_order());
        // The queue is held: o-001 is not given out while o-000 is unacked.
        assert!(pop_now(&client, "og", "PopO", &o).await.is_empty());
        pop::ack(&client, "og", &first[0], TIMEOUT).await.unwrap();
        let second = pop_now(&client, "og", "PopO", &o).await;
        assert_eq!(second.iter().map(body).collect::<Vec<_>>(), vec!["o-001"]);
        // Not acked: after the invisible time the same message comes first again, counted.
        let again = pop_until(&client, "og", "PopO", &o, 1, Duration::from_secs(6)).await;
        assert_eq!(again.iter().map(body).collect::<Vec<_>>(), vec!["o-001"]);
        assert_eq!(again[0].reconsume_times, 1);
        pop::ack(&client, "og", &again[0], TIMEOUT).await.unwrap();
        let third = pop_now(&client, "og", "PopO", &o).await;
        assert_eq!(third.iter().map(body).collect::<Vec<_>>(), vec!["o-002"]);
    });
}

/// Two consumers of one group popping in order from any queue (-1): a queue whose message one consumer
/// holds unacked gives nothing to the other, the other queue goes on; after the invisible time the held
/// message comes back first, counted, to whichever consumer pops, and only then the rest of its queue.
#[test]
fn ordered_pop_keeps_queue_order_across_two_consumers_and_a_redelivery() {
    let broker = Broker::start("");
    run_local(async {
        let a = connect(broker.addr()).await;
        let b = connect(broker.addr()).await;
        send_bodies(&a, "PopO2", 1, &bodies(3, "q1")).await;
        send_bodies(&a, "PopO2", 2, &bodies(3, "q2")).await;
        let o = PopOptions {
            queue_id: -1,
            max_msg_nums: 1,
            order: true,
            ..options(1500)
        };
        // A takes the first message of some queue and does not ack it.
        let held = pop_now(&a, "og2", "PopO2", &o).await;
        assert_eq!(held.len(), 1);
        let held_body = body(&held[0]);
        let (x, y) = if held_body.starts_with("q1") {
            ("q1", "q2")
        } else {
            ("q2", "q1")
        };
        assert_eq!(held_body, format!("{x}-000"));
        // B gets the other queue, in order, and never the held queue's next message.
        let mut got_b = Vec::new();
        for _ in 0..4 {
            for m in pop_now(&b, "og2", "PopO2", &o).await {
                got_b.push(body(&m));
                pop::ack(&b, "og2", &m, TIMEOUT).await.unwrap();
            }
        }
        assert_eq!(got_b, bodies(3, y));
        assert!(pop_now(&a, "og2", "PopO2", &o).await.is_empty());
        // After the invisible time the held message comes back first, to B, with its count.
        let again = pop_until(&b, "og2", "PopO2", &o, 1, Duration::from_secs(6)).await;
        assert_eq!(again.iter().map(body).collect::<Vec<_>>(), vec![held_body]);
        assert_eq!(again[0].reconsume_times, 1);
        pop::ack(&b, "og2", &again[0], TIMEOUT).await.unwrap();
        let mut rest = Vec::new();
        for c in [&a, &b, &a, &b] {
            for m in pop_now(c, "og2", "PopO2", &o).await {
                rest.push(body(&m));
                pop::ack(c, "og2", &m, TIMEOUT).await.unwrap();
            }
        }
        assert_eq!(rest, bodies(3, x)[1..].to_vec());
    });
}

#[test]
fn long_polling_pop_answers_when_a_message_arrives() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let producer = connect(broker.addr()).await;
        send_bodies(&producer, "PopL", 0, &bodies(1, "first")).await;
        pop::ack(
            &client,
            "lg",
            &pop_now(&client, "lg", "PopL", &options(30_000)).await[0],
            TIMEOUT,
        )
        .await
        .unwrap();
        let start = Instant::now();
        let o = PopOptions {
            poll_time: Duration::from_secs(10),
            ..options(30_000)
        };
        let sender = glommio::spawn_local(async move {
            glommio::timer::sleep(Duration::from_millis(700)).await;
            send_bodies(&producer, "PopL", 3, &bodies(1, "late")).await;
        });
        let got = pop_now(&client, "lg", "PopL", &o).await;
        let waited = start.elapsed();
        sender.await;
        assert_eq!(got.iter().map(body).collect::<Vec<_>>(), vec!["late-000"]);
        assert!(
            waited >= Duration::from_millis(600),
            "it waited: {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(3),
            "answered on arrival: {waited:?}"
        );
        // Nothing arrives: the pop ends after its poll time with POLLING_TIMEOUT.
        let start = Instant::now();
        let o = PopOptions {
            poll_time: Duration::from_millis(800),
            ..options(30_000)
        };
        assert!(pop_now(&client, "lg", "PopL", &o).await.is_empty());
        assert!(start.elapsed() >= Duration::from_millis(700));
    });
}

/// Pops everything that becomes visible within `limit`, acking nothing.
async fn drain(
    client: &Client,
    group: &str,
    topic: &str,
    invisible_ms: u64,
    limit: Duration,
) -> Vec<PoppedMessage> {
    let start = Instant::now();
    let mut out = Vec::new();
    let o = PopOptions {
        poll_time: Duration::from_millis(500),
        ..options(invisible_ms)
    };
    while start.elapsed() < limit {
        out.extend(pop_now(client, group, topic, &o).await);
    }
    out
}

#[test]
fn acks_survive_a_graceful_restart_and_a_sigkill() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    for (round, stop) in [("graceful", false), ("sigkill", true)] {
        let sent = bodies(20, round);
        let acked: BTreeSet<String> = run_local(async {
            let client = connect(broker.addr()).await;
            for q in 0..2 {
                send_bodies(
                    &client,
                    "PopR",
                    q,
                    &sent[q as usize * 10..q as usize * 10 + 10],
                )
                .await;
            }
            let got = pop_until(
                &client,
                "rg",
                "PopR",
                &options(3000),
                20,
                Duration::from_secs(5),
            )
            .await;
            assert_eq!(got.len(), 20, "{round}");
            let mut acked = BTreeSet::new();
            let even: Vec<&PoppedMessage> =
                got.iter().filter(|m| m.queue_offset % 2 == 0).collect();
            for (i, m) in even.iter().enumerate() {
                if i % 2 == 0 {
                    pop::ack(&client, "rg", m, TIMEOUT).await.unwrap();
                } else {
                    pop::batch_ack(&client, broker_name(), "rg", &[m], TIMEOUT)
                        .await
                        .unwrap();
                }
                acked.insert(body(m));
            }
            acked
        });
        if stop {
            broker.kill9();
        } else {
            broker.stop();
        }
        broker.restart();
        run_local(async {
            let client = connect(broker.addr()).await;
            let again = drain(&client, "rg", "PopR", 60_000, Duration::from_secs(6)).await;
            let got: BTreeSet<String> = again.iter().map(body).collect();
            let unacked: BTreeSet<String> = sent
                .iter()
                .filter(|b| !acked.contains(*b))
                .cloned()
                .collect();
            assert_eq!(
                got, unacked,
                "{round}: exactly the unacked messages come back"
            );
            assert_eq!(again.len(), unacked.len(), "{round}: each once");
            assert!(again.iter().all(|m| m.reconsume_times == 1), "{round}");
            for m in &again {
                pop::ack(&client, "rg", m, TIMEOUT).await.unwrap();
            }
        });
    }
}

#[test]
fn ordered_acks_survive_a_sigkill() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    let o = PopOptions {
        queue_id: 1,
        max_msg_nums: 2,
        order: true,
        ..options(2000)
    };
    run_local(async {
        let client = connect(broker.addr()).await;
        send_bodies(&client, "PopOK", 1, &bodies(4, "k")).await;
        let got = pop_now(&client, "okg", "PopOK", &o).await;
        assert_eq!(
            got.iter().map(body).collect::<Vec<_>>(),
            vec!["k-000", "k-001"]
        );
        pop::ack(&client, "okg", &got[0], TIMEOUT).await.unwrap();
        pop::ack(&client, "okg", &got[1], TIMEOUT).await.unwrap();
    });
    // Killed before the 5 s offsets file could catch up: the ordered commits are in the revive log.
    broker.kill9();
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        let next = pop_until(&client, "okg", "PopOK", &o, 1, Duration::from_secs(5)).await;
        assert_eq!(
            next.iter().map(body).collect::<Vec<_>>(),
            vec!["k-002", "k-003"],
            "acked ordered messages are not delivered again"
        );
    });
}

fn named(code: i32, group: &str, topic: &str, queue: i32) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("consumerGroup", group)
        .with_ext("topic", topic)
        .with_ext("queueId", &queue.to_string())
}

#[test]
fn peek_notification_and_polling_info() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let second = connect(broker.addr()).await;
        send_bodies(&client, "PopN", 0, &bodies(2, "n")).await;
        // PEEK shows the messages and changes nothing.
        let peek = named(request_code::PEEK_MESSAGE, "ng", "PopN", 0).with_ext("maxMsgNums", "32");
        let r = client.invoke(peek.clone(), TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(decode_records(&r.body).len(), 2);
        let notify = |poll_ms: i64| {
            named(request_code::NOTIFICATION, "ng", "PopN", -1)
                .with_ext("pollTime", &poll_ms.to_string())
                .with_ext("bornTime", &now_ms().to_string())
        };
        let r = client.invoke(notify(0), TIMEOUT).await.unwrap();
        assert_eq!(
            (r.code, r.ext("hasMsg")),
            (response_code::SUCCESS, Some("true"))
        );
        let got = pop_now(&client, "ng", "PopN", &options(30_000)).await;
        assert_eq!(got.len(), 2);
        let r = client.invoke(notify(300), TIMEOUT).await.unwrap();
        assert_eq!(r.ext("hasMsg"), Some("false"), "all popped");
        let r = client.invoke(peek, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::PULL_NOT_FOUND);
        // A pop parked on the topic is counted by POLLING_INFO.
        let parked = glommio::spawn_local(async move {
            let o = PopOptions {
                poll_time: Duration::from_secs(2),
                ..options(30_000)
            };
            pop_now(&second, "ng", "PopN", &o).await.len()
        });
        glommio::timer::sleep(Duration::from_millis(500)).await;
        // Asked as the pop asked (any queue), so it lands where the pop is parked in every mode.
        let r = client
            .invoke(named(request_code::POLLING_INFO, "ng", "PopN", -1), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(
            (r.code, r.ext("pollingNum")),
            (response_code::SUCCESS, Some("1"))
        );
        assert_eq!(parked.await, 0);
        let r = client
            .invoke(named(request_code::POLLING_INFO, "ng", "PopN", -1), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(r.ext("pollingNum"), Some("0"));

        // Bad input gets a clear answer and the broker keeps serving.
        let too_many = PopOptions {
            max_msg_nums: 33,
            ..options(30_000)
        };
        let e = pop::pop(&client, broker_name(), "ng", "PopN", &too_many, TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(e.response_code(), Some(response_code::INVALID_PARAMETER));
        let garbage =
            RemotingCommand::request(request_code::BATCH_ACK_MESSAGE).with_body(&b"{nope"[..]);
        let r = client.invoke(garbage, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::INVALID_PARAMETER, "{:?}", r.remark);
        let change = named(request_code::CHANGE_MESSAGE_INVISIBLETIME, "ng", "PopN", 0)
            .with_ext("offset", "0")
            .with_ext("invisibleTime", &i64::MAX.to_string())
            .with_ext("extraInfo", "0 9223372036854775807 1 999 0 b 0 0");
        let r = client.invoke(change, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        // A pop that waited too long on its way is answered at once, with a header clients can read.
        let stale = named(request_code::POP_MESSAGE, "ng", "PopN", -1)
            .with_ext("maxMsgNums", "1")
            .with_ext("invisibleTime", "1000")
            .with_ext("pollTime", "0")
            .with_ext("initMode", "0")
            .with_ext("bornTime", &(now_ms() - 10_000).to_string());
        let r = client.invoke(stale, TIMEOUT).await.unwrap();
        assert_eq!(
            (r.code, r.ext("restNum")),
            (response_code::POLLING_TIMEOUT, Some("0"))
        );
        let missing = named(request_code::POP_MESSAGE, "ng", "PopN", -1);
        let r = client.invoke(missing, TIMEOUT).await.unwrap();
        assert_ne!(r.code, response_code::SUCCESS);
        assert!(r.remark.unwrap_or_default().contains("maxMsgNums"));
        send_bodies(&client, "PopN", 0, &bodies(1, "after")).await;
        let got = pop_now(&client, "ng", "PopN", &options(30_000)).await;
        assert_eq!(got.iter().map(body).collect::<Vec<_>>(), vec!["after-000"]);
    });
}

#[test]
fn a_revived_message_is_not_revived_again_after_a_sigkill() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    run_local(async {
        let client = connect(broker.addr()).await;
        // A stays invisible for a minute: its open check point keeps the replay start back.
        send_bodies(&client, "PopV", 0, &bodies(1, "a")).await;
        assert_eq!(
            pop_now(&client, "vg", "PopV", &options(60_000)).await.len(),
            1
        );
        send_bodies(&client, "PopV", 0, &bodies(1, "b")).await;
        let b = pop_now(&client, "vg", "PopV", &options(800)).await;
        assert_eq!(b.iter().map(body).collect::<Vec<_>>(), vec!["b-000"]);
        let again = pop_until(
            &client,
            "vg",
            "PopV",
            &options(60_000),
            1,
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(again.iter().map(body).collect::<Vec<_>>(), vec!["b-000"]);
        pop::ack(&client, "vg", &again[0], TIMEOUT).await.unwrap();
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        let after = drain(&client, "vg", "PopV", 60_000, Duration::from_secs(3)).await;
        assert!(
            after.is_empty(),
            "revived once only: {:?}",
            after.iter().map(body).collect::<Vec<_>>()
        );
    });
}

#[test]
fn a_slave_refuses_pops_and_acks() {
    let broker = Broker::start("brokerRole = \"SLAVE\"\nbrokerId = 1");
    run_local(async {
        let client = connect(broker.addr()).await;
        let e = pop::pop(
            &client,
            broker_name(),
            "sg",
            "TBW102",
            &options(1000),
            TIMEOUT,
        )
        .await
        .unwrap_err();
        assert_eq!(e.response_code(), Some(response_code::NO_PERMISSION), "{e}");
        let ack = named(request_code::ACK_MESSAGE, "sg", "TBW102", 0)
            .with_ext("offset", "0")
            .with_ext("extraInfo", "0 1 1000 0 0 b 0 0");
        let r = client.invoke(ack, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::NO_PERMISSION, "{:?}", r.remark);
    });
}

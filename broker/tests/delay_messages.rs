//! Delayed messages against the real broker binary: a DELAY level parks the message until it is due,
//! then it appears on its real topic and queue with its properties (DELAY removed); a level above the
//! maximum is clamped; GET_ALL_DELAY_OFFSET reports progress; delayed batches are refused; delivery is
//! on time under a burst of due messages.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::*;
use delay_support::*;
use protocol::message::record::MessageRecord;
use protocol::message::{batch, msgid, properties};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const LEVELS: &str = "messageDelayLevel = \"1s 2s 3s\"\n";

/// The parked copy of a sent message (VIEW_MESSAGE_BY_ID of the offsetMsgId the send answered).
async fn parked(client: &Client, sent: &RemotingCommand) -> MessageRecord {
    let (_, phys) = msgid::parse_offset_msg_id(sent.ext("msgId").unwrap()).unwrap();
    let view = client
        .invoke(
            RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID)
                .with_ext("offset", &phys.to_string()),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(view.code, response_code::SUCCESS, "{:?}", view.remark);
    decode_records(&view.body).remove(0)
}

#[test]
fn delayed_messages_arrive_when_due_on_their_real_queue() {
    let mut broker = Broker::start(LEVELS);
    run_local(async {
        let client = connect(broker.addr()).await;
        let sent2 = send(&client, "DelayT", 1, b"in-2s", &delayed_props(2, "K2")).await;
        assert_eq!(sent2.code, response_code::SUCCESS, "{:?}", sent2.remark);
        assert_eq!(
            sent2.ext("queueId"),
            Some("1"),
            "the reply names the real queue"
        );
        // Level 9 with 3 levels configured: clamped to level 3 (3 s).
        let sent9 = send(&client, "DelayT", 3, b"in-3s", &delayed_props(9, "K9")).await;
        assert_eq!(sent9.code, response_code::SUCCESS, "{:?}", sent9.remark);
        let plain = send(&client, "DelayT", 0, b"now", "").await;
        assert_eq!(plain.code, response_code::SUCCESS);

        let p2 = parked(&client, &sent2).await;
        assert_eq!((p2.topic.as_str(), p2.queue_id), ("SCHEDULE_TOPIC_XXXX", 1));
        let p9 = parked(&client, &sent9).await;
        assert_eq!((p9.topic.as_str(), p9.queue_id), ("SCHEDULE_TOPIC_XXXX", 2));
        assert_eq!(properties::get(&p9.properties, "DELAY"), Some("3"));

        assert_eq!(pull_from(&client, "DelayT", 0, 0).await.len(), 1);
        assert!(
            pull_from(&client, "DelayT", 1, 0).await.is_empty(),
            "not visible before due"
        );
        assert!(
            pull_from(&client, "DelayT", 3, 0).await.is_empty(),
            "not visible before due"
        );

        let got2 = wait_records(&client, "DelayT", 1, 1, Duration::from_secs(15)).await;
        assert_eq!(got2.len(), 1, "level 2 delivered");
        let (d2, seen2) = &got2[0];
        let due2 = p2.store_timestamp + 2000;
        assert!(
            d2.store_timestamp >= due2,
            "stored {} before due {due2}",
            d2.store_timestamp
        );
        let late2 = d2.store_timestamp - due2;
        assert!(late2 < 1500, "delivered {late2} ms late");
        assert!(*seen2 >= due2);
        assert_eq!((d2.topic.as_str(), d2.queue_id), ("DelayT", 1));
        assert_eq!(&d2.body[..], b"in-2s");
        let props = &d2.properties;
        assert_eq!(properties::get(props, "DELAY"), None);
        assert_eq!(properties::get(props, "TAGS"), Some("tagA"));
        assert_eq!(properties::get(props, "KEYS"), Some("K2"));
        assert_eq!(properties::get(props, "UNIQ_KEY"), Some("K2"));
        assert_eq!(properties::get(props, "custom"), Some("kept"));
        assert_eq!(properties::get(props, "REAL_TOPIC"), Some("DelayT"));

        let got9 = wait_records(&client, "DelayT", 3, 1, Duration::from_secs(15)).await;
        assert_eq!(got9.len(), 1, "clamped level delivered");
        let d9 = &got9[0].0;
        let due9 = p9.store_timestamp + 3000;
        assert!(
            d9.store_timestamp >= due9,
            "clamped to the last level, not delivered early"
        );
        assert!(d9.store_timestamp - due9 < 1500);
        assert_eq!(&d9.body[..], b"in-3s");
        println!(
            "lateness: level 2 {late2} ms, level 3 {} ms",
            d9.store_timestamp - due9
        );

        // Each delivered once, and the progress table says so.
        glommio::timer::sleep(Duration::from_millis(500)).await;
        assert_eq!(pull_from(&client, "DelayT", 1, 0).await.len(), 1);
        assert_eq!(pull_from(&client, "DelayT", 3, 0).await.len(), 1);
        let mut table = String::new();
        for _ in 0..100 {
            table = delay_offsets(&client).await;
            if table.contains("2:1") && table.contains("3:1") {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(table, "{\"offsetTable\":{1:0,2:1,3:1}}");
    });
    assert!(broker.stop().success());
    let file = std::fs::read_to_string(broker.dir.join("store/config/delayOffset-0.json")).unwrap();
    assert_eq!(file, "{\"offsetTable\":{1:0,2:1,3:1}}");
}

#[test]
fn a_delayed_batch_is_refused() {
    let broker = Broker::start(LEVELS);
    run_local(async {
        let client = connect(broker.addr()).await;
        let delayed = delayed_props(1, "B1");
        let mut body = BytesMut::new();
        batch::encode(
            [(0, &b"a"[..], ""), (0, &b"b"[..], delayed.as_str())],
            &mut body,
        )
        .unwrap();
        let mut req = send_request("DelayBatch", 0, &body, "");
        req.code = request_code::SEND_BATCH_MESSAGE;
        let r = client.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::MESSAGE_ILLEGAL, "{:?}", r.remark);
        assert!(r
            .remark
            .unwrap_or_default()
            .contains("not supported for batching"));
        // Without DELAY the same batch is fine.
        let mut ok_body = BytesMut::new();
        batch::encode([(0, &b"a"[..], ""), (0, &b"b"[..], "")], &mut ok_body).unwrap();
        let mut ok = send_request("DelayBatch", 0, &ok_body, "");
        ok.code = request_code::SEND_BATCH_MESSAGE;
        assert_eq!(
            client.invoke(ok, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        // The schedule topic itself does not take sends.
        let direct = send(&client, "SCHEDULE_TOPIC_XXXX", 0, b"x", "").await;
        assert_eq!(direct.code, response_code::NO_PERMISSION);
        let _ = Bytes::new();
    });
}

/// A burst of messages that fall due together, sent on several connections to queues of both
/// shards: each is delivered once, none early, and the lateness stays small.
#[test]
fn a_burst_of_due_messages_is_delivered_on_time() {
    const PER_CONN: usize = 160;
    const CONNS: usize = 4;
    let broker = Broker::start(LEVELS);
    run_local(async {
        let addr = broker.addr();
        let senders = (0..CONNS).map(|c| async move {
            let client = connect(addr).await;
            let mut ids = Vec::new();
            for i in 0..PER_CONN {
                let key = format!("burst-{c}-{i}");
                let r = send(
                    &client,
                    "Burst",
                    (i % 4) as i32,
                    key.as_bytes(),
                    &delayed_props(1, &key),
                )
                .await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                ids.push(key);
            }
            ids
        });
        let sent: Vec<String> = futures_lite_join(senders.collect())
            .await
            .into_iter()
            .flatten()
            .collect();
        let client = connect(addr).await;
        // Due times from the parked copies (level 1 = queue 0 of the schedule topic).
        let parked = wait_records(
            &client,
            "SCHEDULE_TOPIC_XXXX",
            0,
            sent.len(),
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(parked.len(), sent.len());
        let due: std::collections::HashMap<String, i64> = parked
            .iter()
            .map(|(r, _)| {
                (
                    properties::get(&r.properties, "UNIQ_KEY")
                        .unwrap()
                        .to_owned(),
                    r.store_timestamp + 1000,
                )
            })
            .collect();
        let mut delivered = Vec::new();
        for q in 0..4 {
            let want = sent.len() / 4;
            let got = wait_records(&client, "Burst", q, want, Duration::from_secs(30)).await;
            if got.len() != want {
                let log = broker.log();
                let lines: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("delay") || l.contains("WARN") || l.contains("ERROR"))
                    .collect();
                let mut keys: Vec<(String, i64, i64)> = got
                    .iter()
                    .map(|(r, _)| {
                        (
                            properties::get(&r.properties, "UNIQ_KEY")
                                .unwrap()
                                .to_owned(),
                            r.queue_offset,
                            r.store_timestamp,
                        )
                    })
                    .collect();
                keys.sort();
                let dups: Vec<_> = keys.windows(2).filter(|w| w[0].0 == w[1].0).collect();
                panic!(
                    "queue {q}: {} of {want}\n{}\n{dups:?}",
                    got.len(),
                    lines.join("\n")
                );
            }
            delivered.extend(got.into_iter().map(|(r, _)| r));
        }
        let mut late: Vec<i64> = delivered
            .iter()
            .map(|r| {
                let key = properties::get(&r.properties, "UNIQ_KEY").unwrap();
                r.store_timestamp - due[key]
            })
            .collect();
        late.sort_unstable();
        assert!(
            late[0] >= 0,
            "a message was delivered {} ms early",
            -late[0]
        );
        let p = |q: f64| late[((late.len() - 1) as f64 * q) as usize];
        println!(
            "{} due messages: lateness p50 {} ms, p99 {} ms, max {} ms",
            late.len(),
            p(0.5),
            p(0.99),
            p(1.0)
        );
        // Generous for a loaded 2-core machine and a debug build; the README reports release numbers.
        assert!(p(0.99) < 1500, "p99 lateness {} ms", p(0.99));
        let mut keys: Vec<&str> = delivered
            .iter()
            .map(|r| properties::get(&r.properties, "UNIQ_KEY").unwrap())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), sent.len(), "each delivered once");
    });
}

/// Awaits futures concurrently (keeps order).
async fn futures_lite_join<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in pinned.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

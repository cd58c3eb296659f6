//! Timer messages (TIMER_DELAY_MS / TIMER_DELAY_SEC / TIMER_DELIVER_MS): held until due, then on their
//! real queue intact; due in the past = at once; over the maximum = refused; delivered in due order
//! whatever the send order; a SIGKILL with timers pending loses none and delivers none early.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use delay_support::*;
use protocol::message::properties;
use protocol::response_code;

fn timer_props(key: &str, value: &str, uniq: &str) -> String {
    properties::encode([
        (key, value),
        ("UNIQ_KEY", uniq),
        ("TAGS", "tagA"),
        ("color", "blue"),
    ])
}

#[test]
fn delay_ms_is_held_until_due_then_delivered_intact() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let sent_at = now_ms();
        let r = send(
            &client,
            "TimerA",
            1,
            b"pay or cancel",
            &timer_props("TIMER_DELAY_MS", "1500", "u1"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(r.ext("queueId"), Some("1"));
        let seen = wait_records(&client, "TimerA", 1, 1, Duration::from_secs(6)).await;
        assert_eq!(seen.len(), 1, "delivered within the bound");
        let (rec, at) = &seen[0];
        assert!(
            *at >= sent_at + 1500,
            "seen {} ms after the send",
            at - sent_at
        );
        assert!(rec.store_timestamp >= sent_at + 1500, "stored early");
        eprintln!(
            "stored {} ms after due",
            rec.store_timestamp - sent_at - 1500
        );
        assert!(
            rec.store_timestamp <= sent_at + 1500 + 1000,
            "stored {} ms late",
            rec.store_timestamp - sent_at - 1500
        );
        assert_eq!(&rec.body[..], b"pay or cancel");
        assert_eq!(properties::get(&rec.properties, "color"), Some("blue"));
        assert_eq!(properties::get(&rec.properties, "TAGS"), Some("tagA"));
        assert_eq!(properties::get(&rec.properties, "UNIQ_KEY"), Some("u1"));
        assert_eq!(properties::get(&rec.properties, "REAL_TOPIC"), None);
        assert_eq!((rec.topic.as_str(), rec.queue_id), ("TimerA", 1));
    });
}

#[test]
fn deliver_ms_in_the_past_is_delivered_at_once() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let past = (now_ms() - 10_000).to_string();
        let r = send(
            &client,
            "TimerB",
            0,
            b"late",
            &timer_props("TIMER_DELIVER_MS", &past, "u2"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let recs = pull_from(&client, "TimerB", 0, 0).await;
        assert_eq!(recs.len(), 1, "stored on its topic at once");
        assert_eq!(&recs[0].body[..], b"late");
    });
}

#[test]
fn delay_above_the_maximum_is_refused() {
    let broker = Broker::start("timerMaxDelaySec = 60\n");
    run_local(async {
        let client = connect(broker.addr()).await;
        for (key, value) in [
            ("TIMER_DELAY_SEC", "61".to_owned()),
            ("TIMER_DELAY_MS", "60001".to_owned()),
            ("TIMER_DELIVER_MS", (now_ms() + 120_000).to_string()),
            ("TIMER_DELAY_MS", "soon".to_owned()),
        ] {
            let r = send(&client, "TimerC", 0, b"x", &timer_props(key, &value, "u3")).await;
            assert_eq!(r.code, response_code::MESSAGE_ILLEGAL, "{key}={value}");
            assert!(r
                .remark
                .unwrap_or_default()
                .contains("timer message illegal"));
        }
        let r = send(
            &client,
            "TimerC",
            0,
            b"x",
            &timer_props("TIMER_DELAY_SEC", "59", "u4"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert!(pull_from(&client, "TimerC", 0, 0).await.is_empty(), "held");
    });
}

#[test]
fn disabled_timer_stores_at_once() {
    let broker = Broker::start("timerWheelEnable = false\n");
    run_local(async {
        let client = connect(broker.addr()).await;
        let r = send(
            &client,
            "TimerD",
            0,
            b"x",
            &timer_props("TIMER_DELAY_SEC", "30", "u5"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(pull_from(&client, "TimerD", 0, 0).await.len(), 1);
    });
}

#[test]
fn timers_sent_out_of_order_are_delivered_in_due_order() {
    let broker = Broker::start("");
    run_local(async {
        let client = connect(broker.addr()).await;
        let delays = [2400, 800, 1900, 500, 1300];
        for d in delays {
            let key = format!("d{d}");
            let r = send(
                &client,
                "TimerE",
                2,
                key.as_bytes(),
                &timer_props("TIMER_DELAY_MS", &d.to_string(), &key),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        let seen = wait_records(&client, "TimerE", 2, delays.len(), Duration::from_secs(8)).await;
        let order: Vec<String> = seen
            .iter()
            .map(|(r, _)| String::from_utf8_lossy(&r.body).into_owned())
            .collect();
        let mut want = delays.to_vec();
        want.sort_unstable();
        let want: Vec<String> = want.iter().map(|d| format!("d{d}")).collect();
        assert_eq!(order, want);
    });
}

const TOPIC_K: &str = "TimerKill";

/// body -> store timestamps of its deliveries over the topic's 4 queues.
async fn deliveries(client: &remoting::Client) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for q in 0..4 {
        for r in pull_from(client, TOPIC_K, q, 0).await {
            let key = String::from_utf8_lossy(&r.body).into_owned();
            out.entry(key).or_default().push(r.store_timestamp);
        }
    }
    out
}

#[test]
fn sigkill_with_timers_pending_loses_none_and_delivers_none_early() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"\n");
    // body -> earliest allowed store time
    let mut due: BTreeMap<String, i64> = BTreeMap::new();
    run_local(async {
        let client = connect(broker.addr()).await;
        for i in 0..16i64 {
            // Long ones first, so short ones sit above unsent-yet-due offsets on the same queues.
            let delay = if i < 8 { 5000 + 100 * i } else { 300 };
            let key = format!("m{i}");
            let at = now_ms();
            let r = send(
                &client,
                TOPIC_K,
                (i % 4) as i32,
                key.as_bytes(),
                &timer_props("TIMER_DELAY_MS", &delay.to_string(), &key),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            due.insert(key, at + delay);
        }
        // The short ones arrive; the long ones are still pending.
        let start = std::time::Instant::now();
        while deliveries(&client).await.len() < 8 && start.elapsed() < Duration::from_secs(5) {
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        let d = deliveries(&client).await;
        assert_eq!(d.len(), 8, "short timers delivered before the kill: {d:?}");
        // Progress is persisted every 500 ms: let it be, so a watermark that skipped the pending
        // timers would lose them.
        glommio::timer::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            deliveries(&client).await.len(),
            8,
            "long timers still pending"
        );
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        let start = std::time::Instant::now();
        while deliveries(&client).await.len() < due.len()
            && start.elapsed() < Duration::from_secs(20)
        {
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        let d = deliveries(&client).await;
        assert_eq!(d.len(), due.len(), "every timer delivered: {d:?}");
        for (key, times) in &d {
            let earliest = due[key];
            for t in times {
                assert!(*t >= earliest, "{key} stored {} ms early", earliest - t);
            }
        }
    });
}

#[test]
fn each_shard_brokers_timer_progress_is_its_own_across_a_sigkill() {
    // Shard-broker 0 delivers its timers and persists its progress; shard-broker 1's timers sit at
    // the same offsets of its own timer queue, not yet due. A restart must not take shard 0's
    // progress for shard 1's.
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"\n");
    let shard1 = std::net::SocketAddr::from(([127, 0, 0, 1], shard_broker_port(broker.port, 1)));
    let mut due: BTreeMap<String, i64> = BTreeMap::new();
    run_local(async {
        let (c0, c1) = (connect(broker.addr()).await, connect(shard1).await);
        for i in 0..6i64 {
            for (client, name, delay) in [(&c0, "s0", 200), (&c1, "s1", 5000)] {
                let key = format!("{name}-{i}");
                let at = now_ms();
                let r = send(
                    client,
                    TOPIC_K,
                    (i % 2) as i32,
                    key.as_bytes(),
                    &timer_props("TIMER_DELAY_MS", &delay.to_string(), &key),
                )
                .await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                due.insert(key, at + delay);
            }
        }
        let start = std::time::Instant::now();
        while deliveries(&c0).await.len() < 6 && start.elapsed() < Duration::from_secs(5) {
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(deliveries(&c0).await.len(), 6, "shard-broker 0's timers");
        // Let shard 0's progress be persisted (every 500 ms).
        glommio::timer::sleep(Duration::from_millis(1500)).await;
        assert!(
            deliveries(&c1).await.is_empty(),
            "shard-broker 1's still pending"
        );
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        let c1 = connect(shard1).await;
        let start = std::time::Instant::now();
        while deliveries(&c1).await.len() < 6 && start.elapsed() < Duration::from_secs(20) {
            glommio::timer::sleep(Duration::from_millis(50)).await;
        }
        let d = deliveries(&c1).await;
        assert_eq!(d.len(), 6, "every timer of shard-broker 1 delivered: {d:?}");
        for (key, times) in &d {
            assert!(
                times.iter().all(|t| *t >= due[key]),
                "{key} delivered early"
            );
        }
    });
}

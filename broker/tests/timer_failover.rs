//! Controller mode and timer messages across a failover: a slave copies its master's timer checkpoint
//! (GET_TIMER_CHECK_POINT) every few seconds, so, promoted after the master is SIGKILLed, it does not
//! deliver again the timers the master delivered (before 2026-12-07 it started from its own
//! watermark, 0 on a slave that was never master, and delivered every one of them again), and it
//! still delivers every timer that was pending at the kill.
//!
//! A controller (a child process of this test binary), an in-process name server, two brokers.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{connect, now_ms, run_local, send, ControllerProc};
use delay_support::{pull_from, wait_records};
use protocol::message::properties;
use protocol::response_code;

const TOPIC: &str = "TimerFailover";
const GROUP_NAME: &str = "broker-t";
/// Timers due over the first seconds, delivered by the first master before it dies.
const EARLY: usize = 40;
/// Timers still pending when the master dies.
const LATE: usize = 10;
const LATE_DELAY_MS: i64 = 30_000;

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn timer_failover_controller_helper_process() {
    common::serve_controller_if_asked();
}

/// How many times each key is on the queue.
fn count_keys(records: &[protocol::message::record::MessageRecord]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for r in records {
        let key = properties::get(&r.properties, "UNIQ_KEY")
            .unwrap_or("?")
            .to_owned();
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

#[test]
fn a_promoted_slave_does_not_deliver_again_what_the_master_delivered() {
    let controller = ControllerProc::start("timer_failover_controller_helper_process");
    let (mut a, _, b, b_addr) = controller.start_pair(GROUP_NAME, "");

    let late_due = run_local(async {
        let client = connect(a.addr()).await;
        let sent_at = now_ms();
        for i in 0..EARLY {
            // Due 1 to 3 s from now, in no order of sending.
            let delay = 1000 + (i * 7919 % EARLY) as i64 * 2000 / EARLY as i64;
            let props = properties::encode([
                ("TIMER_DELAY_MS", delay.to_string().as_str()),
                ("UNIQ_KEY", format!("early-{i}").as_str()),
            ]);
            let r = send(&client, TOPIC, 0, b"early", &props).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        for i in 0..LATE {
            let props = properties::encode([
                ("TIMER_DELAY_MS", LATE_DELAY_MS.to_string().as_str()),
                ("UNIQ_KEY", format!("late-{i}").as_str()),
            ]);
            let r = send(&client, TOPIC, 0, b"late", &props).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        // Every early timer delivered by a and consumed from it.
        let seen = wait_records(&client, TOPIC, 0, EARLY, Duration::from_secs(20)).await;
        assert_eq!(seen.len(), EARLY, "a delivered the early timers");
        let counts = count_keys(&seen.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>());
        assert!(counts.keys().all(|k| k.starts_with("early-")), "{counts:?}");
        sent_at + LATE_DELAY_MS
    });

    // Past one copy period (3 s) and a's watermark write (0.5 s): b holds a's progress.
    // (6 s: a failed copy is tried again 3 s later.)
    std::thread::sleep(Duration::from_secs(6));
    assert!(
        now_ms() < late_due - 12_000,
        "too slow: the late timers would fall due before the failover"
    );
    a.kill9();
    controller.wait_for(GROUP_NAME, &[&b], "b to be master", |(m, _)| *m == b_addr);

    let records = run_local(async {
        let client = connect(b.addr()).await;
        // Until every timer is on b (the late ones fall due after the failover), then a little more
        // for anything delivered again to show.
        let deadline = late_due + 20_000;
        loop {
            let recs = pull_from(&client, TOPIC, 0, 0).await;
            let counts = count_keys(&recs);
            let all = (0..EARLY).all(|i| counts.contains_key(&format!("early-{i}")))
                && (0..LATE).all(|i| counts.contains_key(&format!("late-{i}")));
            if all || now_ms() > deadline {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(200)).await;
        }
        glommio::timer::sleep(Duration::from_secs(3)).await;
        pull_from(&client, TOPIC, 0, 0).await
    });
    let counts = count_keys(&records);
    let lost: Vec<String> = (0..EARLY)
        .map(|i| format!("early-{i}"))
        .chain((0..LATE).map(|i| format!("late-{i}")))
        .filter(|k| !counts.contains_key(k))
        .collect();
    let early_again: usize = counts
        .iter()
        .filter(|(k, _)| k.starts_with("early-"))
        .map(|(_, n)| n - 1)
        .sum();
    let late_again: usize = counts
        .iter()
        .filter(|(k, _)| k.starts_with("late-"))
        .map(|(_, n)| n - 1)
        .sum();
    println!(
        "b's queue: {} records, {early_again} early timers delivered again, {late_again} late ones, lost {lost:?}",
        records.len()
    );
    assert!(lost.is_empty(), "timers lost: {lost:?}\n{}", b.log());
    // Every early timer was delivered, flushed and copied to b more than a copy period before the
    // kill: none may come again.
    assert_eq!(
        early_again, 0,
        "b delivered again {early_again} of the {EARLY} timers a had delivered"
    );
    assert_eq!(late_again, 0, "late timers delivered twice");
    for r in &records {
        let key = properties::get(&r.properties, "UNIQ_KEY").unwrap_or("?");
        if key.starts_with("late-") {
            assert!(r.store_timestamp >= late_due, "{key} delivered early");
        }
    }
}

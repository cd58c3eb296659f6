//! Controller mode and timer messages: a master deposed while a timer is pending leaves deliveries
//! to the new master (before 2026-12-07 its timer task kept retrying every due timer against its
//! own refused puts, every 200 ms, as long as it was a slave), and, master again, reads its timer
//! queue again from the watermark: its index from before may name offsets that the other master's
//! records took after the tail cut (delivered at the due time of the unit that was there before),
//! and misses units replicated below its scan position.
//!
//! A controller (a child process of this test binary), an in-process name server, two brokers.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::time::{Duration, Instant};

use common::{connect, now_ms, run_local, send, ControllerProc};
use delay_support::wait_records;
use protocol::message::properties;
use protocol::response_code;

const TOPIC: &str = "TimerDeposed";
const DELAY_MS: i64 = 20_000;

const GROUP_NAME: &str = "broker-t";

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn timer_controller_helper_process() {
    common::serve_controller_if_asked();
}

#[test]
fn a_deposed_master_leaves_timers_to_the_new_one_and_reads_its_queue_again() {
    let controller = ControllerProc::start("timer_controller_helper_process");
    let (a, a_addr, b, b_addr) = controller.start_pair(GROUP_NAME, "");

    let due = run_local(async {
        let client = connect(a.addr()).await;
        let sent_at = now_ms();
        let props = properties::encode([
            ("TIMER_DELAY_MS", DELAY_MS.to_string().as_str()),
            ("UNIQ_KEY", "t1"),
        ]);
        let r = send(&client, TOPIC, 0, b"due later", &props).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        sent_at + DELAY_MS
    });

    // a deposed before the timer is due: paused past the heartbeat timeout, b elected, a back as slave.
    assert!(common::send_signal(a.pid(), libc::SIGSTOP));
    controller.wait_for(GROUP_NAME, &[&a, &b], "b to be master", |(m, _)| {
        *m == b_addr
    });
    assert!(common::send_signal(a.pid(), libc::SIGCONT));
    controller.wait_for(
        GROUP_NAME,
        &[&a, &b],
        "a back in the SyncStateSet",
        |(m, s)| *m == b_addr && s.len() == 2,
    );
    assert!(now_ms() < due - 2000, "the failover took past the due time");

    // b delivers it, not early.
    let seen = run_local(async {
        let client = connect(b.addr()).await;
        wait_records(
            &client,
            TOPIC,
            0,
            1,
            Duration::from_millis((DELAY_MS + 20_000) as u64),
        )
        .await
    });
    assert_eq!(seen.len(), 1, "b delivered the timer");
    assert!(seen[0].0.store_timestamp >= due, "delivered early by b");
    std::thread::sleep(Duration::from_secs(2));
    let retries = a
        .log()
        .matches("delivery failed (the broker is a slave now")
        .count();
    assert_eq!(
        retries, 0,
        "a, a slave, tried to deliver the timer {retries} times"
    );

    // a master again: it reads its timer queue again (the timer is delivered again: at-least-once).
    assert!(common::send_signal(b.pid(), libc::SIGSTOP));
    controller.wait_for(GROUP_NAME, &[&a, &b], "a to be master again", |(m, _)| {
        *m == a_addr
    });
    let start = Instant::now();
    while !a.log().contains("master again: timer queue")
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(common::send_signal(b.pid(), libc::SIGCONT));
    assert!(
        a.log().contains("master again: timer queue"),
        "a did not read its timer queue again:\n{}",
        a.log()
    );
    let seen = run_local(async {
        let client = connect(a.addr()).await;
        wait_records(&client, TOPIC, 0, 2, Duration::from_secs(10)).await
    });
    assert!(!seen.is_empty(), "the timer is on a");
    for (rec, _) in &seen {
        assert!(rec.store_timestamp >= due, "delivered early");
    }
}

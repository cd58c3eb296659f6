//! Wall-clock steps while the broker runs, made with libfaketime (`LD_PRELOAD`, its offset read from
//! a file the test rewrites; the monotonic clock is left alone, as a real step leaves it):
//!
//! - timer messages pending while the clock steps back are not delivered before their due time on the
//!   stepped clock; delayed (DELAY level) ones then due later than now + their level's delay are
//!   delivered at once (RocketMQ's correction); all arrive. Pending ones whose due time a forward step
//!   passes arrive within seconds (the schedulers re-read the wall clock, they do not sleep out a wait
//!   computed before the step);
//! - a delayed message stored while the clock ran a minute ahead does not hold back the later ones of
//!   its level once the clock is back: both arrive within about the level's delay;
//! - a forward step by more than `fileReservedTime` does not let retention delete segments that have
//!   not expired (retention ignores forward steps while the broker runs);
//! - an unanswered transaction is still checked back within seconds after the clock steps back an
//!   hour (its half message now looks stored in the future), a commit through the check-back makes it
//!   visible once, and a rolled-back one never; a forward step only checks it sooner.
//!
//! Skipped, with the reason, where libfaketime is not installed (`scripts/setup-test-host.sh`
//! installs Debian's `faketime`).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;
mod fault_support;
mod tx_support;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use common::*;
use delay_support::*;
use fault_support::acked::Ledger;
use protocol::message::properties;
use protocol::response_code;

/// libfaketime's multi-threaded library, where Debian puts it for this machine's architecture.
fn libfaketime() -> Option<PathBuf> {
    let dir = std::fs::read_dir("/usr/lib").ok()?;
    dir.filter_map(Result::ok)
        .map(|e| e.path().join("faketime/libfaketimeMT.so.1"))
        .find(|p| p.is_file())
}

/// A broker whose wall clock is the real one plus the offset in `clock_file` ("+3600", "-15": seconds).
fn broker_with_clock(lib: &Path, clock_file: &Path, extra: &str) -> Broker {
    std::fs::write(clock_file, "+0").unwrap();
    Broker::builder()
        .extra(extra)
        .env("LD_PRELOAD", lib.to_str().unwrap())
        .env("FAKETIME_TIMESTAMP_FILE", clock_file.to_str().unwrap())
        // Re-read the offset at most once a second; the monotonic clock stays real.
        .env("FAKETIME_CACHE_DURATION", "1")
        .env("DONT_FAKE_MONOTONIC", "1")
        .start()
}

fn step_clock(clock_file: &Path, offset_s: i64) {
    std::fs::write(clock_file, format!("{offset_s:+}")).unwrap();
    // libfaketime caches the offset for a second.
    std::thread::sleep(Duration::from_millis(1500));
}

fn usable() -> Option<PathBuf> {
    let lib = libfaketime();
    if lib.is_none() {
        println!("SKIPPED: libfaketime not found (run scripts/setup-test-host.sh)");
    }
    lib
}

const DELAY_TOPIC: &str = "ClockDelay";
const TIMER_TOPIC: &str = "ClockTimer";
/// Delay level 3 is 10 s in the default table.
const LEVEL_10S: i32 = 3;
const DELAY_MS: i64 = 10_000;
const PER_KIND: usize = 10;

async fn send_delayed_and_timers(
    client: &remoting::Client,
    tag: &str,
    delay_level: i32,
    timer_ms: i64,
) {
    for i in 0..PER_KIND {
        let uniq = format!("{tag}-d{i}");
        let r = send(
            client,
            DELAY_TOPIC,
            0,
            uniq.as_bytes(),
            &delayed_props(delay_level, &uniq),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let uniq = format!("{tag}-t{i}");
        let props = properties::encode([
            ("TIMER_DELAY_MS", timer_ms.to_string().as_str()),
            ("UNIQ_KEY", uniq.as_str()),
        ]);
        let r = send(client, TIMER_TOPIC, 0, uniq.as_bytes(), &props).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    }
}

#[test]
fn delayed_and_timer_messages_follow_wall_clock_steps_and_none_is_lost() {
    let Some(lib) = usable() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    let broker = broker_with_clock(&lib, &clock, "");
    run_local(async {
        let client = connect(broker.addr()).await;
        // 1. Sent at +0, due 10 s later; the clock then steps back 15 s. Timers: due 25 s after the
        //    send in real time, and not one is delivered before its due time on the broker's clock.
        //    Delayed messages: now due more than their level's delay ahead, so due at once.
        let sent_at = now_ms();
        send_delayed_and_timers(&client, "back", LEVEL_10S, DELAY_MS).await;
        step_clock(&clock, -15);
        let stepped_at = now_ms();
        let seen = wait_records(&client, DELAY_TOPIC, 0, PER_KIND, Duration::from_secs(30)).await;
        assert_eq!(seen.len(), PER_KIND, "{DELAY_TOPIC}: every message arrives");
        let last = seen.iter().map(|(_, at)| at - stepped_at).max().unwrap();
        assert!(
            last < 5_000,
            "{DELAY_TOPIC}: {last} ms after a step back beyond the level's delay"
        );
        println!("{DELAY_TOPIC}: step back 15 s: all delivered {last} ms after the step");
        {
            let topic = TIMER_TOPIC;
            let seen = wait_records(&client, topic, 0, PER_KIND, Duration::from_secs(60)).await;
            assert_eq!(seen.len(), PER_KIND, "{topic}: every message arrives");
            for (rec, seen_at) in &seen {
                // The delivered copy's store time is the broker's (stepped) clock at delivery.
                assert!(
                    rec.store_timestamp >= sent_at + DELAY_MS,
                    "{topic}: delivered {} ms before its due time on the broker's clock",
                    sent_at + DELAY_MS - rec.store_timestamp
                );
                assert!(
                    *seen_at >= sent_at + DELAY_MS + 15_000 - 1_500,
                    "{topic}: seen {} ms after the send: the step back was not followed",
                    seen_at - sent_at
                );
            }
            println!(
                "{topic}: step back 15 s: delivered {} ms after the send (due 10 s on the unstepped clock)",
                seen.iter().map(|(_, at)| at - sent_at).max().unwrap()
            );
        }

        // 2. Sent on the stepped-back clock, due in 2 minutes; the clock steps forward an hour: the
        //    due time has passed on the broker's clock, so they arrive within seconds.
        let level_2m = 6;
        send_delayed_and_timers(&client, "fwd", level_2m, 120_000).await;
        let stepped_at = now_ms();
        step_clock(&clock, 3600);
        for topic in [DELAY_TOPIC, TIMER_TOPIC] {
            let seen = wait_records(&client, topic, 0, 2 * PER_KIND, Duration::from_secs(20)).await;
            assert_eq!(seen.len(), 2 * PER_KIND, "{topic}: every message arrives");
            let last = seen.iter().map(|(_, at)| at - stepped_at).max().unwrap();
            assert!(
                last < 10_000,
                "{topic}: {last} ms after a step past their due time"
            );
            println!("{topic}: step forward 1 h: all delivered {last} ms after the step");
        }
    });
    drop(broker);
}

/// Sends probes until one's store time shows the broker's clock `offset_s` off the real one
/// (libfaketime may keep the old offset for up to two seconds).
async fn wait_broker_clock(client: &remoting::Client, offset_s: i64) {
    const PROBE: &str = "ClockProbe";
    let start = std::time::Instant::now();
    loop {
        let before = now_ms();
        let r = send(client, PROBE, 0, b"probe", "").await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let at: i64 = r.ext("queueOffset").unwrap().parse().unwrap();
        let stored = pull_from(client, PROBE, 0, at).await;
        let off = stored.first().unwrap().store_timestamp - before;
        if (off - offset_s * 1000).abs() < 3_000 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the broker's clock is {off} ms off, not {offset_s} s"
        );
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn a_delayed_message_stored_with_the_clock_ahead_does_not_hold_back_its_level() {
    let Some(lib) = usable() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    let broker = broker_with_clock(&lib, &clock, "messageDelayLevel = \"1s 5s\"\n");
    let topic = "ClockAhead";
    // Level 2 (5 s): the first one is still pending when the broker sees the clock back (libfaketime
    // caches the offset for up to a second).
    let level = 2;
    run_local(async {
        let client = connect(broker.addr()).await;
        // Stored a minute ahead: its due time (store time + 5 s) is 65 s away once the clock is back.
        step_clock(&clock, 60);
        wait_broker_clock(&client, 60).await;
        let r = send(&client, topic, 0, b"ahead", &delayed_props(level, "ahead")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        step_clock(&clock, 0);
        wait_broker_clock(&client, 0).await;
        let sent_at = now_ms();
        let r = send(
            &client,
            topic,
            0,
            b"behind",
            &delayed_props(level, "behind"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let seen = wait_records(&client, topic, 0, 2, Duration::from_secs(20)).await;
        let keys: Vec<&str> = seen
            .iter()
            .filter_map(|(rec, _)| properties::get(&rec.properties, "UNIQ_KEY"))
            .collect();
        assert_eq!(keys, ["ahead", "behind"], "both delivered, in order");
        let last = seen.iter().map(|(_, at)| at - sent_at).max().unwrap();
        // The level's 5 s, a second to notice, and slack for a loaded machine.
        assert!(
            last < 8_000,
            "delivered {last} ms after the send of the second (level delay 5 s)"
        );
        assert!(
            last >= 4_500,
            "the second came {last} ms after its send: stored before the clock was back?"
        );
        println!("stored 60 s ahead, then one on time: both delivered {last} ms after the second");
    });
    drop(broker);
}

#[test]
fn a_forward_clock_step_does_not_let_retention_delete_unexpired_segments() {
    let Some(lib) = usable() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    let every_hour: Vec<String> = (0..24).map(|h| format!("{h:02}")).collect();
    let broker = broker_with_clock(
        &lib,
        &clock,
        &format!(
            "shardCount = 1\nfileReservedTime = 1\ndeleteWhen = \"{}\"\ndiskMaxUsedSpaceRatio = 99\n",
            every_hour.join(";")
        ),
    );
    let topic = "ClockRetention";
    run_local(async {
        let client = connect(broker.addr()).await;
        let ledger = Ledger::default();
        // About 3 segments of 4 MiB: retention may only ever delete whole, older segments.
        let body = vec![b'r'; 16 * 1024];
        for i in 0..800 {
            let mut b = body.clone();
            b.extend_from_slice(format!("-{i}").as_bytes());
            let r = send(&client, topic, 0, &b, "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            let offset = r.ext("queueOffset").unwrap().parse().unwrap();
            ledger.record(topic, 0, offset, b);
        }
        // Two hours ahead: every segment looks an hour past fileReservedTime. Retention runs every
        // 10 s; give it two passes.
        step_clock(&clock, 7200);
        glommio::timer::sleep(Duration::from_secs(22)).await;
        ledger
            .verify(&client)
            .await
            .assert_no_loss("after a forward step past fileReservedTime");
    });
    assert!(
        broker.log().contains("retention ignores the step"),
        "the broker did not notice the step:\n{}",
        broker.log()
    );
    drop(broker);
}

#[test]
fn transaction_check_back_follows_clock_steps_both_ways() {
    use tx_support::*;
    let Some(lib) = usable() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let clock = dir.path().join("clock");
    let broker = broker_with_clock(
        &lib,
        &clock,
        "transactionTimeOut = 4000\ntransactionCheckInterval = 4000\ntransactionCheckMax = 5\n",
    );
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer(&broker, &checks).await;
        // Never answered by the producer; the clock steps back an hour right after. Before, the check
        // waited for the wall clock to catch up (an hour); now it comes within the timeout or so.
        let (_, _) = prepare(&client, "B1").await;
        let (_, _) = prepare(&client, "B2").await;
        step_clock(&clock, -3600);
        let start = std::time::Instant::now();
        let got = wait_checks(&checks, "B1", 1, Duration::from_secs(20)).await;
        assert_eq!(
            got.len(),
            1,
            "B1 checked back within 20 s of a step back of 1 h"
        );
        let got2 = wait_checks(&checks, "B2", 1, Duration::from_secs(10)).await;
        assert_eq!(got2.len(), 1, "B2 checked back too");
        println!(
            "step back 1 h: checked back {} ms after the step",
            start.elapsed().as_millis()
        );
        let (phys, qo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "B1", phys, qo, COMMIT, true).await,
            response_code::SUCCESS
        );
        let (phys, qo) = check_offsets(&got2[0]);
        assert_eq!(
            end(&client, "B2", phys, qo, ROLLBACK, true).await,
            response_code::SUCCESS
        );

        // Prepared on the stepped-back clock, then the clock steps forward two hours: checked within
        // seconds (due on the broker's clock), committed through the check-back.
        let (_, _) = prepare(&client, "F1").await;
        step_clock(&clock, 3600);
        let got = wait_checks(&checks, "F1", 1, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 1, "F1 checked back after a forward step");
        let (phys, qo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "F1", phys, qo, COMMIT, true).await,
            response_code::SUCCESS
        );

        // Each committed one visible exactly once, the rolled-back one never; none checked again.
        glommio::timer::sleep(Duration::from_secs(5)).await;
        let mut seen = visible(&client).await;
        seen.sort();
        assert_eq!(seen, vec!["B1".to_owned(), "F1".to_owned()]);
        for uniq in ["B1", "B2", "F1"] {
            assert_eq!(checks.of(uniq).len(), 1, "{uniq} checked once");
        }
    });
    drop(broker);
}

//! Controller mode and POP: a master deposed while messages it popped are unacked stops reviving
//! (before 2026-12-07 its revive task kept trying, and failing, as a slave, every 5 s), and, master
//! again, reads its POP state again from the revive log it replicated: the check points the other
//! master wrote for its own pops come back too, so every popped and unacked message is delivered
//! again (before, it kept its check points of the earlier term only, and the other master's pops
//! were never revived).
//!
//! A controller (a child process of this test binary), an in-process name server, two brokers of
//! one shard each.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use client::pop::{self, PopOptions, PoppedMessage};
use common::{connect, now_ms, run_local, send, ControllerProc, TIMEOUT};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const TOPIC: &str = "PopDeposed";
const GROUP: &str = "pop-deposed";
const GROUP_NAME: &str = "broker-t";
/// Invisible time of the pops on the first master: due only once it is a slave again.
const A_INVISIBLE_MS: i64 = 18_000;
/// Invisible time of the pops on the second master: due once the first is master again.
const B_INVISIBLE_MS: i64 = 24_000;

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn pop_controller_helper_process() {
    common::serve_controller_if_asked();
}

fn options(invisible_ms: i64) -> PopOptions {
    PopOptions {
        invisible_time: Duration::from_millis(invisible_ms as u64),
        poll_time: Duration::from_millis(500),
        ..PopOptions::default()
    }
}

/// Sends each body, again while the broker does not take writes yet (just elected).
async fn send_bodies(client: &Client, bodies: &[&str]) {
    for b in bodies {
        let start = Instant::now();
        loop {
            let r = send(client, TOPIC, 0, b.as_bytes(), "").await;
            if r.code == response_code::SUCCESS {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{:?}", r.remark);
            glommio::timer::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Pops (without acking) until every body of `want` came, or `limit` passed; answers all popped.
async fn pop_until(
    client: &Client,
    o: &PopOptions,
    want: &BTreeSet<String>,
    limit: Duration,
) -> Vec<PoppedMessage> {
    let start = Instant::now();
    let mut out: Vec<PoppedMessage> = Vec::new();
    while !want.iter().all(|w| out.iter().any(|m| body(m) == *w)) && start.elapsed() < limit {
        match pop::pop(client, GROUP_NAME, GROUP, TOPIC, o, TIMEOUT).await {
            Ok(r) if r.code == response_code::SUCCESS => out.extend(r.messages),
            Ok(r) if r.code == response_code::POLLING_TIMEOUT => {}
            // Not serving POP yet (still a slave for a moment): ask again.
            _ => glommio::timer::sleep(Duration::from_millis(200)).await,
        }
    }
    out
}

/// The group's consumer offset (pop position) on queue 0.
async fn position(client: &Client) -> Option<i64> {
    let req = RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", "0");
    let r = client.invoke(req, TIMEOUT).await.ok()?;
    (r.code == response_code::SUCCESS).then_some(())?;
    r.ext("offset")?.parse().ok()
}

fn body(m: &PoppedMessage) -> String {
    String::from_utf8_lossy(&m.body).into_owned()
}

fn bodies(popped: &[PoppedMessage]) -> BTreeSet<String> {
    popped.iter().map(body).collect()
}

#[test]
fn a_master_again_redelivers_what_either_master_popped_and_nobody_acked() {
    let controller = ControllerProc::start("pop_controller_helper_process");
    let (a, a_addr, b, b_addr) = controller.start_pair(GROUP_NAME, "shardCount = 1\n");

    // Popped on a, not acked.
    let (popped_on_a, a_due) = run_local(async {
        let client = connect(a.addr()).await;
        send_bodies(&client, &["a-0", "a-1"]).await;
        let want = BTreeSet::from(["a-0".to_owned(), "a-1".to_owned()]);
        let got = pop_until(
            &client,
            &options(A_INVISIBLE_MS),
            &want,
            Duration::from_secs(5),
        )
        .await;
        (bodies(&got), now_ms() + A_INVISIBLE_MS)
    });
    assert_eq!(
        popped_on_a,
        BTreeSet::from(["a-0".to_owned(), "a-1".to_owned()])
    );
    // b copies the topic and the offsets (its first copy is 3 s after it follows a).
    std::thread::sleep(Duration::from_secs(4));

    // a deposed: paused past the heartbeat timeout, b elected; b pops more, not acked.
    assert!(common::send_signal(a.pid(), libc::SIGSTOP));
    controller.wait_for(GROUP_NAME, &[&a, &b], "b to be master", |(m, _)| {
        *m == b_addr
    });
    let popped_on_b = run_local(async {
        let client = connect(b.addr()).await;
        send_bodies(&client, &["b-0", "b-1"]).await;
        let want = BTreeSet::from(["b-0".to_owned(), "b-1".to_owned()]);
        let got = pop_until(
            &client,
            &options(B_INVISIBLE_MS),
            &want,
            Duration::from_secs(10),
        )
        .await;
        bodies(&got)
    });
    assert!(
        popped_on_b.contains("b-0") && popped_on_b.contains("b-1"),
        "popped on b: {popped_on_b:?}"
    );
    assert!(common::send_signal(a.pid(), libc::SIGCONT));
    controller.wait_for(
        GROUP_NAME,
        &[&a, &b],
        "a back in the SyncStateSet",
        |(m, s)| *m == b_addr && s.len() == 2,
    );
    // b's pop position on the queue stays past its pops (a copy of the consumer offsets that b,
    // still a slave, asked the paused a for must not be installed when a answers after the
    // failover).
    std::thread::sleep(Duration::from_secs(1));
    let b_position = run_local(async { position(&connect(b.addr()).await).await });
    assert_eq!(b_position, Some(4), "b's pop position after its pops");
    assert!(
        now_ms() < a_due - 1000,
        "the failover took past a's invisible time"
    );
    // a's check points fall due while it is a slave (b revives them), and a copies b's offsets
    // (its first copy is 3 s after it follows b).
    let copied = now_ms() + 5000;
    while now_ms() < (a_due + 1500).max(copied) {
        std::thread::sleep(Duration::from_millis(200));
    }

    // a master again: what a popped and what b popped, all unacked, come back from a.
    assert!(common::send_signal(b.pid(), libc::SIGSTOP));
    controller.wait_for(GROUP_NAME, &[&a, &b], "a to be master again", |(m, _)| {
        *m == a_addr
    });
    let want: BTreeSet<String> = popped_on_a.union(&popped_on_b).cloned().collect();
    let again = run_local(async {
        let client = connect(a.addr()).await;
        pop_until(
            &client,
            &options(60_000),
            &want,
            Duration::from_millis((B_INVISIBLE_MS + 25_000) as u64),
        )
        .await
    });
    assert!(common::send_signal(b.pid(), libc::SIGCONT));
    let got = bodies(&again);
    let missing: Vec<&String> = want.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "popped, never acked, not delivered again by a: {missing:?} (a delivered {got:?})\n{}",
        a.log()
    );
    // Each after its invisible time, through the retry topic: a's pop positions are past them.
    let early: Vec<String> = again
        .iter()
        .filter(|m| m.reconsume_times == 0)
        .map(body)
        .collect();
    assert!(
        early.is_empty(),
        "delivered again by a as new messages (its pop position was behind b's pops): {early:?}"
    );
    let failed = a.log().matches("failed, retrying later").count();
    assert_eq!(failed, 0, "a, a slave, tried to revive {failed} times");
}

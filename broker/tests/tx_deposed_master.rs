//! Controller mode and transactions: a master deposed while a transaction is open stops checking it
//! (a slave's CommitLog is its master's copy; renewed half messages the deposed master kept appending
//! there made replication cut them again and again, so it never came back into the SyncStateSet:
//! chaos seed 7 of 2026-12-07 with the transaction producer), and, master again, reads the
//! resolutions the other master made while it was a slave (it checked them again before).
//!
//! A controller (a child process of this test binary), an in-process name server, two brokers;
//! checks every 300 ms, never answered, so each check appends a renewed copy.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod tx_support;

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::{run_local, ControllerProc};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;
use tx_support::*;

const GROUP_NAME: &str = "broker-t";

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn tx_controller_helper_process() {
    common::serve_controller_if_asked();
}

/// The half queue's max offset on `addr`, or None when it does not answer.
fn half_max(addr: SocketAddr) -> Option<i64> {
    run_local(async move {
        let c = Client::connect(addr, Duration::from_secs(1)).await.ok()?;
        let req = RemotingCommand::request(request_code::GET_MAX_OFFSET)
            .with_ext("topic", "RMQ_SYS_TRANS_HALF_TOPIC")
            .with_ext("queueId", "0");
        let r = c.invoke(req, Duration::from_secs(5)).await.ok()?;
        (r.code == response_code::SUCCESS).then_some(())?;
        r.ext("offset")?.parse().ok()
    })
}

#[test]
fn a_deposed_master_stops_checking_and_reads_the_other_masters_resolutions() {
    let controller = ControllerProc::start("tx_controller_helper_process");
    let (a, a_addr, b, b_addr) = controller.start_pair(
        GROUP_NAME,
        "transactionTimeOut = 300\ntransactionCheckInterval = 300\ntransactionCheckMax = 100000\n",
    );

    // An open transaction on a, checked (and renewed) every 300 ms.
    let (phys, qo) = run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer_at(a.addr(), &checks).await;
        let at = prepare(&client, "T1").await;
        let got = wait_checks(&checks, "T1", 2, Duration::from_secs(10)).await;
        assert!(got.len() >= 2, "T1 checked on a");
        at
    });

    // a deposed: paused past the heartbeat timeout, b elected; a comes back as b's slave.
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

    // b rolls T1 back (its check names the current copy; the first half message's offset works too).
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer_at(b.addr(), &checks).await;
        assert_eq!(
            end(&client, "T1", phys, qo, ROLLBACK, false).await,
            response_code::SUCCESS
        );
    });
    // Nothing appends to the half queue any more: a's copy must come to equal b's and stay so.
    let start = Instant::now();
    let mut equal_since: Option<Instant> = None;
    let mut last = (None, None);
    while equal_since.is_none_or(|t| t.elapsed() < Duration::from_secs(2)) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "a's half queue never stayed equal to b's for 2 s (last a {:?}, b {:?}):\n{}",
            last.0,
            last.1,
            a.log()
        );
        last = (half_max(a.addr()), half_max(b.addr()));
        if last.0.is_some() && last.0 == last.1 {
            equal_since.get_or_insert_with(Instant::now);
        } else {
            equal_since = None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    controller.wait_for(
        GROUP_NAME,
        &[&a, &b],
        "a still in the SyncStateSet",
        |(m, s)| *m == b_addr && s.len() == 2,
    );

    // a master again: it knows b's rollback, so T1 is never checked again.
    assert!(common::send_signal(b.pid(), libc::SIGSTOP));
    controller.wait_for(GROUP_NAME, &[&a, &b], "a to be master again", |(m, _)| {
        *m == a_addr
    });
    run_local(async {
        let checks = Rc::new(Checks::default());
        let _client = producer_at(a.addr(), &checks).await;
        glommio::timer::sleep(Duration::from_secs(3)).await;
        assert!(
            checks.of("T1").is_empty(),
            "a checked T1, rolled back by b, once master again"
        );
    });
    assert!(common::send_signal(b.pid(), libc::SIGCONT));
    assert!(
        a.log().contains("master again: transactions: 1 resolved"),
        "a read the op queue again:\n{}",
        a.log()
    );
}

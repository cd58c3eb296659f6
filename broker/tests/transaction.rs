//! Transactional messages end to end against the broker binary, through the raw protocol: half messages
//! stay invisible, commit makes one visible once, rollback never, an unanswered transaction is checked
//! back (CHECK_TRANSACTION_STATE to the producer's connection) and rolled back after the last check, and
//! all of it survives a SIGKILL.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod tx_support;

use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use protocol::message::record::decode_view;
use protocol::response_code;
use tx_support::*;

#[test]
fn commit_rollback_check_back_and_restart() {
    let mut broker = Broker::start(
        "flushDiskType = \"SYNC_FLUSH\"\ntransactionTimeOut = 600\n\
         transactionCheckInterval = 800\ntransactionCheckMax = 2\n",
    );
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer(&broker, &checks).await;
        // Commit: visible once, even when the commit is repeated.
        let (phys, qo) = prepare(&client, "U1").await;
        assert!(
            visible(&client).await.is_empty(),
            "a half message is not visible"
        );
        assert_eq!(
            end(&client, "U1", phys, qo, COMMIT, false).await,
            response_code::SUCCESS
        );
        assert_eq!(
            end(&client, "U1", phys, qo, COMMIT, false).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1"]);
        let committed = pull_all(&client, TOPIC, 0).await;
        assert_eq!(&committed[0].body[..], b"body of U1");
        assert_eq!(committed[0].prepared_transaction_offset, phys);
        // Rollback: never visible, and a commit after it changes nothing.
        let (phys2, qo2) = prepare(&client, "U2").await;
        assert_eq!(
            end(&client, "U2", phys2, qo2, ROLLBACK, false).await,
            response_code::SUCCESS
        );
        assert_eq!(
            end(&client, "U2", phys2, qo2, COMMIT, false).await,
            response_code::SUCCESS
        );
        // Bad offsets and a foreign group are refused.
        assert_ne!(
            end(&client, "X", phys2 + 1, 0, COMMIT, false).await,
            response_code::SUCCESS
        );
        // Unknown, then commit on the check-back (answering with the offsets the check named).
        let (phys3, qo3) = prepare(&client, "U3").await;
        assert_eq!(
            end(&client, "U3", phys3, qo3, 0, false).await,
            response_code::SUCCESS
        );
        let got = wait_checks(&checks, "U3", 1, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 1, "U3 checked back once within 10 s");
        let shown = decode_view(&got[0].body, true).expect("the check body is a message");
        assert_eq!((shown.topic, shown.queue_id), (TOPIC, 0));
        assert_eq!(shown.body, b"body of U3");
        let (cphys, cqo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "U3", cphys, cqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // Never answered: checked transactionCheckMax (2) times, then rolled back.
        prepare(&client, "U4").await;
        let got = wait_checks(&checks, "U4", 2, Duration::from_secs(15)).await;
        assert_eq!(got.len(), 2);
        glommio::timer::sleep(Duration::from_millis(2500)).await;
        assert_eq!(checks.of("U4").len(), 2, "no check after the maximum");
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // A late commit of a rolled-back transaction changes nothing.
        let (lphys, lqo) = check_offsets(&got[1]);
        assert_eq!(
            end(&client, "U4", lphys, lqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // Left open across a SIGKILL.
        prepare(&client, "U5").await;
    });
    assert!(broker
        .log()
        .contains("unresolved after 2 checks: rolled back"));
    broker.kill9();
    broker.restart();
    // The port answers once any shard listens: wait for the half queue's shard to report.
    let start = Instant::now();
    while !broker.log().contains("transactions: 4 resolved") && start.elapsed() < TIMEOUT {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        broker.log().contains("transactions: 4 resolved"),
        "the op queue is read back at start:\n{}",
        broker.log()
    );
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer(&broker, &checks).await;
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        let got = wait_checks(&checks, "U5", 1, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 1, "U5 checked back after the restart");
        let (cphys, cqo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "U5", cphys, cqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3", "U5"]);
        // Nothing resolved is checked again.
        glommio::timer::sleep(Duration::from_millis(2000)).await;
        for uniq in ["U1", "U2", "U3", "U4"] {
            assert!(
                checks.of(uniq).is_empty(),
                "{uniq} was checked after the restart"
            );
        }
    });
    broker.kill9();
}

#[test]
fn a_commit_through_another_shard_broker_reaches_the_half_messages_shard() {
    // A producer answers a check-back on the connection that asked, which may be another
    // shard-broker's than the one holding the half message: the commit must still find it.
    let broker = Broker::start("");
    let checks = Rc::new(Checks::default());
    let shard1 = std::net::SocketAddr::from(([127, 0, 0, 1], shard_broker_port(broker.port, 1)));
    run_local(async {
        let on_shard1 = producer_at(shard1, &checks).await;
        let on_shard0 = producer(&broker, &checks).await;
        let (phys, queue_offset) = prepare(&on_shard1, "tx-cross").await;
        assert_eq!(storage_shard(phys), 1, "the half lives on shard-broker 1");
        assert_eq!(
            end(&on_shard0, "tx-cross", phys, queue_offset, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&on_shard1).await, vec!["tx-cross".to_owned()]);
        assert!(visible(&on_shard0).await.is_empty());
    });
}

/// The shard a physical offset names (bits 48..62).
fn storage_shard(phys: i64) -> i64 {
    (phys >> 48) & 0x7fff
}

//! HA with a SYNC_MASTER: no slave means SLAVE_NOT_AVAILABLE at once; with a slave (found through the
//! name server), every acknowledged message survives a SIGKILL of the master at a random moment and is
//! read back from the slave byte-identical; a master killed before its own flush comes back with every
//! acknowledged message and its slave resumes (a slave never holds bytes the master can lose).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::*;
use ha_common::*;
use protocol::response_code;

#[test]
fn sync_master_without_slave_answers_slave_not_available() {
    let master = Broker::start(&master_extra("SYNC_MASTER", "ASYNC_FLUSH"));
    run_local(async {
        let c = connect(master.addr()).await;
        let start = Instant::now();
        let r = send(&c, "HaNoSlave", 0, b"hello", "").await;
        assert_eq!(r.code, response_code::SLAVE_NOT_AVAILABLE, "{:?}", r.remark);
        // With the send result, as RocketMQ answers (clients read the header on this code).
        assert_eq!(r.ext("queueOffset"), Some("0"));
        assert_eq!(r.ext("msgId").map(str::len), Some(32));
        // At once, not after syncFlushTimeout (5 s).
        assert!(start.elapsed() < Duration::from_secs(2));
        // The message is stored all the same (as RocketMQ does).
        let recs = pull_all(&c, "HaNoSlave", 0).await;
        assert_eq!(recs.len(), 1);
        assert_eq!(&recs[0].body[..], b"hello");
    });
}

#[test]
fn acknowledged_messages_survive_master_sigkill() {
    let ns = start_namesrv_in_process();
    let mut master = Broker::start(&format!(
        "{}namesrvAddr = \"{ns}\"\n",
        master_extra("SYNC_MASTER", "SYNC_FLUSH")
    ));
    // The slave has no haMasterAddress: it learns the master's HA address from the name server.
    let slave = Broker::start(&slave_extra(None, Some(ns)));
    let topic = "HaSyncTopic";
    let (acked, other_codes) = run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(30)).await;
        send_until_success(master.addr(), topic, Duration::from_secs(20)).await;
        // SIGKILL the master at a random moment while 4 producers send.
        let pid = master.pid();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let delay = Duration::from_millis(300 + u64::from(nanos % 1500));
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            send_signal(pid, libc::SIGKILL);
        });
        let result = send_load(master.addr(), topic, 4, 4, 100_000, 300).await;
        killer.join().unwrap();
        result
    });
    master.kill9();
    eprintln!("{} sends acknowledged before the SIGKILL", acked.len());
    assert!(
        acked.len() > 10,
        "too few acknowledged sends before the kill: {}",
        acked.len()
    );
    assert!(
        other_codes.is_empty(),
        "unexpected answers while the slave was connected: {other_codes:?}"
    );
    // Every acknowledged message is on the slave, byte-identical, at the same offsets.
    run_local(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut on_slave: HashMap<(i32, i64), protocol::message::record::MessageRecord> =
                HashMap::new();
            for q in 0..4 {
                let client = connect(slave.addr()).await;
                for rec in pull_all(&client, topic, q).await {
                    on_slave.insert((q, rec.queue_offset), rec);
                }
            }
            let missing: Vec<&Acked> = acked
                .iter()
                .filter(|a| !on_slave.contains_key(&(a.queue_id, a.queue_offset)))
                .collect();
            if missing.is_empty() {
                for a in &acked {
                    let rec = &on_slave[&(a.queue_id, a.queue_offset)];
                    assert_eq!(&rec.body[..], &a.body[..], "body of {a:?}");
                    assert_eq!(rec.physical_offset, a.physical_offset);
                    assert_eq!(rec.topic, topic);
                }
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {} acknowledged messages missing on the slave, e.g. {:?}\nslave log:\n{}",
                missing.len(),
                acked.len(),
                missing.first().map(|a| (a.queue_id, a.queue_offset)),
                slave.log()
            );
            glommio::timer::sleep(Duration::from_millis(500)).await;
        }
    });
}

/// The master flushes only when asked (ASYNC_FLUSH with an interval and page threshold never reached),
/// so before the fix its slave received bytes the master had only in memory; a SIGKILL then lost them on
/// the master, which came back with a shorter log and refused the slave for good (every SYNC send
/// answered SLAVE_NOT_AVAILABLE). Now a master sends only durable bytes: what a slave acknowledged is on
/// the master's disk too, and the pair resumes after the restart.
#[test]
fn master_killed_before_its_flush_keeps_acknowledged_messages_and_its_slave() {
    let lazy_flush = "flushIntervalCommitLog = 600000\nflushCommitLogLeastPages = 100000\n";
    let mut master = Broker::start(&format!(
        "{}{lazy_flush}",
        master_extra("SYNC_MASTER", "ASYNC_FLUSH")
    ));
    let slave = Broker::start(&slave_extra(Some(&master), None));
    let topic = "HaLazyFlush";
    let (acked, other_codes) = run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(30)).await;
        send_until_success(master.addr(), topic, Duration::from_secs(20)).await;
        send_load(master.addr(), topic, 4, 4, 50, 300).await
    });
    assert!(
        other_codes.is_empty(),
        "unexpected answers while the slave was connected: {other_codes:?}"
    );
    assert_eq!(acked.len(), 200, "every send acknowledged");
    master.kill9();
    master.restart();
    run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(30)).await;
        send_until_success(master.addr(), topic, Duration::from_secs(20)).await;
        // Every acknowledged message is on the restarted master, at its offsets.
        let c = connect(master.addr()).await;
        let mut on_master = HashMap::new();
        for q in 0..4 {
            for rec in pull_all(&c, topic, q).await {
                on_master.insert((q, rec.queue_offset), rec);
            }
        }
        for a in &acked {
            let rec = on_master
                .get(&(a.queue_id, a.queue_offset))
                .unwrap_or_else(|| panic!("acknowledged {a:?} missing on the restarted master"));
            assert_eq!(&rec.body[..], &a.body[..], "body of {a:?}");
            assert_eq!(rec.physical_offset, a.physical_offset);
        }
        // And the slave's log is the master's again.
        wait_caught_up(master.addr(), slave.addr(), 2, Duration::from_secs(30)).await;
        for q in 0..4 {
            assert_eq!(
                pull_raw_all(master.addr(), topic, q).await,
                pull_raw_all(slave.addr(), topic, q).await,
                "queue {q} differs between master and slave"
            );
        }
    });
    assert!(
        !slave.log().contains("refused replication"),
        "the master refused its slave:\n{}",
        slave.log()
    );
}

//! Disks that fail mid-write, through the storage crate's fail points (`FAILPOINTS`, a test-only
//! build with the `failpoints` feature): EIO on a CommitLog fdatasync, EIO on a CommitLog write, a
//! sync that stalls for seconds, and EIO on reads of an old segment. The broker runs as a process
//! with two shards (each a broker of its own); the fault hits one shard. Each case checks the
//! answers (never SUCCESS for data that failed to write or sync), that everything else keeps being
//! served, the read-only state and its reason in GET_BROKER_RUNTIME_INFO and the log, and after a
//! restart without the fault that every acknowledged message is read back. And with SYNC_FLUSH a
//! consumer never sees a record before its sync completed (a SIGKILL would take it back and the next
//! record would take its queue offset), while a long-polling pull gets it as soon as it is synced.
//!
//! Run: `cargo test -p broker --features failpoints --test fault_disk_io`.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const TOPIC: &str = "DiskIo";
/// syncFlushTimeout of the brokers here: a stalled sync shows within a second.
const SYNC_TIMEOUT_MS: u64 = 1000;

fn shard_addr(broker: &Broker, shard: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], shard_broker_port(broker.port, shard)))
}

fn body(tag: &str, i: usize, len: usize) -> Vec<u8> {
    let mut b = format!("{tag}-{i}-").into_bytes();
    b.resize(len, b'a' + (i % 26) as u8);
    b
}

/// Sends one message; records it in `ledger` when acknowledged. The answer code and how long it took.
async fn send_one(client: &Client, ledger: &Ledger, queue: i32, body: Vec<u8>) -> (i32, Duration) {
    let began = Instant::now();
    let r = client
        .invoke(
            send_request(TOPIC, queue, &body, ""),
            Duration::from_millis(SYNC_TIMEOUT_MS * 5 + 5000),
        )
        .await
        .unwrap_or_else(|e| panic!("send not answered after {:?}: {e}", began.elapsed()));
    if r.code == response_code::SUCCESS {
        let offset = r
            .ext("queueOffset")
            .and_then(|o| o.parse().ok())
            .expect("queueOffset");
        ledger.record(TOPIC, queue, offset, body);
    }
    (r.code, began.elapsed())
}

fn start(failpoints: &str) -> Broker {
    start_with(failpoints, "")
}

fn start_with(failpoints: &str, extra: &str) -> Broker {
    let broker = Broker::builder()
        .extra(&format!(
            "flushDiskType = \"SYNC_FLUSH\"\nsyncFlushTimeout = {SYNC_TIMEOUT_MS}\n{extra}"
        ))
        .env("FAILPOINTS", failpoints)
        .start();
    assert!(
        broker
            .log()
            .contains("fail points configured from FAILPOINTS"),
        "not a failpoints build?\n{}",
        broker.log()
    );
    broker
}

async fn read_only(addr: SocketAddr) -> (String, String) {
    let info = runtime_info(addr).await;
    (
        info.get("storeReadOnly").cloned().unwrap_or_default(),
        info.get("storeReadOnlyReason").cloned().unwrap_or_default(),
    )
}

/// The `rocketmq_store_read_only` sample of `shard` from the broker's /metrics.
fn read_only_metric(metrics_port: u16, shard: usize) -> Option<String> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    conn.read_to_string(&mut text).ok()?;
    let label = format!("shard=\"{shard}\"");
    text.lines()
        .find(|l| l.starts_with("rocketmq_store_read_only{") && l.contains(&label))
        .and_then(|l| l.rsplit(' ').next())
        .map(str::to_owned)
}

/// Restarts the stopped broker without fail points and checks both shards' acknowledged messages
/// and that both take sends again.
fn restart_and_verify(broker: &mut Broker, ledgers: &[Ledger; 2]) {
    broker.set_env("FAILPOINTS", None);
    broker.restart();
    let addrs = [shard_addr(broker, 0), shard_addr(broker, 1)];
    run_local(async {
        for (shard, ledger) in ledgers.iter().enumerate() {
            let c = connect(addrs[shard]).await;
            if ledger.len() > 0 {
                ledger
                    .verify(&c)
                    .await
                    .assert_no_loss(&format!("shard {shard} after the restart"));
            }
            let (code, _) = send_one(&c, &Ledger::default(), 0, body("after", 0, 100)).await;
            assert_eq!(
                code,
                response_code::SUCCESS,
                "shard {shard} takes sends again"
            );
            assert_eq!(read_only(addrs[shard]).await.0, "false");
        }
    });
}

/// fsyncgate: after one failed fdatasync the shard refuses writes for the rest of the process's
/// life, although every later sync would succeed; the other shard, reads and admin keep working; a
/// graceful stop leaves the abort marker, and the restart recovers everything acknowledged.
#[test]
fn failed_fdatasync_makes_the_shard_read_only_until_restart_and_loses_nothing_acknowledged() {
    let metrics_port = free_port();
    let mut broker = start_with(
        "commitlog_fdatasync@0=40*off->1*return->off",
        &format!("metricsPort = {metrics_port}"),
    );
    assert_eq!(read_only_metric(metrics_port, 0).as_deref(), Some("0"));
    let (a0, a1) = (shard_addr(&broker, 0), shard_addr(&broker, 1));
    let ledgers = [Ledger::default(), Ledger::default()];
    run_local(async {
        let c0 = connect(a0).await;
        let c1 = connect(a1).await;
        let mut first_error = None;
        for i in 0..400 {
            let (code, _) = send_one(&c0, &ledgers[0], (i % 4) as i32, body("s0", i, 300)).await;
            if code != response_code::SUCCESS {
                first_error = Some(code);
                break;
            }
        }
        assert_eq!(
            first_error,
            Some(response_code::SYSTEM_ERROR),
            "the send whose sync failed is answered SYSTEM_ERROR"
        );
        let acked = ledgers[0].len();
        assert!(acked >= 30, "only {acked} sends before the fault");
        // Every later sync would succeed (the fail point is off again), and a write failure is
        // retried every second: for 3 s nothing may be acknowledged.
        let until = Instant::now() + Duration::from_secs(3);
        let mut refused = 0;
        while Instant::now() < until {
            let (code, took) = send_one(&c0, &ledgers[0], 0, body("late", refused, 300)).await;
            assert_eq!(
                code,
                response_code::SERVICE_NOT_AVAILABLE,
                "read-only answer"
            );
            assert!(
                took < Duration::from_millis(500),
                "refused at once: {took:?}"
            );
            refused += 1;
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            ledgers[0].len(),
            acked,
            "nothing acknowledged after the failed sync"
        );
        // The other shard, reads of the acknowledged data and admin requests keep working.
        for i in 0..40 {
            let (code, _) = send_one(&c1, &ledgers[1], (i % 4) as i32, body("s1", i, 300)).await;
            assert_eq!(code, response_code::SUCCESS, "shard 1 unaffected");
        }
        ledgers[0]
            .verify(&c0)
            .await
            .assert_no_loss("shard 0 while read-only");
        let topics = c0
            .invoke(
                RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(topics.code, response_code::SUCCESS);
        let (flag, reason) = read_only(a0).await;
        assert_eq!(flag, "true");
        assert!(
            reason.contains("fdatasync failed") && reason.contains("until the broker restarts"),
            "{reason}"
        );
        assert_eq!(read_only(a1).await.0, "false");
        assert_eq!(read_only_metric(metrics_port, 0).as_deref(), Some("1"));
        assert_eq!(read_only_metric(metrics_port, 1).as_deref(), Some("0"));
        println!("shard 0: {acked} acknowledged, then {refused} refused; reason: {reason}");
    });
    let log = broker.log();
    assert!(log.contains("CommitLog fdatasync failed"), "{log}");
    broker.stop();
    let log = broker.log();
    assert!(log.contains("not a clean shutdown"), "{log}");
    restart_and_verify(&mut broker, &ledgers);
}

/// A failed CommitLog write (EIO, four times in a row) fails the waiting send, refuses sends while it
/// lasts, and sends succeed again once a rewrite of the unsynced data succeeds; nothing
/// acknowledged is lost across a SIGKILL.
#[test]
fn failed_writes_refuse_sends_until_a_rewrite_succeeds_and_lose_nothing_acknowledged() {
    let mut broker = start("commitlog_write@1=40*off->4*return->off");
    let (a0, a1) = (shard_addr(&broker, 0), shard_addr(&broker, 1));
    let ledgers = [Ledger::default(), Ledger::default()];
    run_local(async {
        let c0 = connect(a0).await;
        let c1 = connect(a1).await;
        let mut first_error = None;
        for i in 0..400 {
            let (code, _) = send_one(&c1, &ledgers[1], (i % 4) as i32, body("w1", i, 500)).await;
            if code != response_code::SUCCESS {
                first_error = Some(code);
                break;
            }
        }
        assert_eq!(first_error, Some(response_code::SYSTEM_ERROR));
        let (flag, reason) = read_only(a1).await;
        assert_eq!(flag, "true");
        assert!(reason.contains("CommitLog write failed"), "{reason}");
        let began = Instant::now();
        let mut refused = 0;
        let mut i = 0;
        loop {
            assert!(
                began.elapsed() < Duration::from_secs(15),
                "shard 1 never took writes again"
            );
            // Shard 0 is not affected meanwhile.
            let (code, _) = send_one(&c0, &ledgers[0], (i % 4) as i32, body("w0", i, 500)).await;
            assert_eq!(code, response_code::SUCCESS);
            let (code, _) = send_one(&c1, &ledgers[1], (i % 4) as i32, body("w1b", i, 500)).await;
            i += 1;
            if code == response_code::SUCCESS {
                break;
            }
            assert_eq!(code, response_code::SERVICE_NOT_AVAILABLE);
            refused += 1;
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "shard 1 refused {refused} sends for {:?}, then took writes again",
            began.elapsed()
        );
        assert!(refused > 0, "the failed writes never showed as read-only");
        assert_eq!(read_only(a1).await.0, "false");
        for i in 0..20 {
            let (code, _) = send_one(&c1, &ledgers[1], (i % 4) as i32, body("w1c", i, 500)).await;
            assert_eq!(code, response_code::SUCCESS);
        }
    });
    assert!(broker.log().contains("CommitLog writes work again"));
    broker.kill9();
    restart_and_verify(&mut broker, &ledgers);
}

/// A sync that takes 3 s: SYNC_FLUSH sends on that shard are answered FLUSH_DISK_TIMEOUT after
/// syncFlushTimeout (never SUCCESS before their sync), while the same shard keeps answering pulls
/// and admin requests and the other shard keeps taking sends at normal speed; afterwards sends
/// succeed again and nothing acknowledged is lost across a SIGKILL.
#[test]
fn stalled_sync_answers_flush_disk_timeout_while_everything_else_is_served() {
    let mut broker = start("commitlog_stall@0=40*off->1*return(3000)->off");
    let (a0, a1) = (shard_addr(&broker, 0), shard_addr(&broker, 1));
    let ledgers = [Ledger::default(), Ledger::default()];
    run_local(async {
        let c0 = connect(a0).await;
        let probe0 = Rc::new(connect(a0).await);
        let c1 = Rc::new(connect(a1).await);
        // Probes every 50 ms until told to stop: (when, slowest of pull/admin on shard 0 and a
        // send on shard 1).
        let done = Rc::new(RefCell::new(false));
        let probes: Rc<RefCell<Vec<(Instant, Duration)>>> = Rc::default();
        let prober = {
            let (done, probes, probe0, c1, l1) = (
                done.clone(),
                probes.clone(),
                probe0.clone(),
                c1.clone(),
                ledgers[1].clone(),
            );
            glommio::spawn_local(async move {
                let mut i = 0;
                while !*done.borrow() {
                    let began = Instant::now();
                    let p = pull(&probe0, TOPIC, 0, 0).await;
                    assert!(
                        p.code == response_code::SUCCESS || p.code == response_code::PULL_NOT_FOUND,
                        "pull answered {}",
                        p.code
                    );
                    let t = probe0
                        .invoke(
                            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
                            TIMEOUT,
                        )
                        .await
                        .unwrap();
                    assert_eq!(t.code, response_code::SUCCESS);
                    let (code, _) = send_one(&c1, &l1, (i % 4) as i32, body("p1", i, 200)).await;
                    assert_eq!(code, response_code::SUCCESS, "shard 1 send");
                    i += 1;
                    probes.borrow_mut().push((began, began.elapsed()));
                    glommio::timer::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let mut timeouts = Vec::new();
        let mut stall_began = None;
        let began = Instant::now();
        for i in 0.. {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "no stall or no recovery"
            );
            let sent_at = Instant::now();
            let (code, took) = send_one(&c0, &ledgers[0], (i % 4) as i32, body("t0", i, 300)).await;
            match code {
                response_code::SUCCESS if stall_began.is_some() => break,
                response_code::SUCCESS => {}
                response_code::FLUSH_DISK_TIMEOUT => {
                    stall_began.get_or_insert(sent_at);
                    timeouts.push(took);
                }
                other => panic!("unexpected answer {other} during a stalled sync"),
            }
        }
        let stall_ended = Instant::now();
        *done.borrow_mut() = true;
        prober.await;
        let stall_began = stall_began.unwrap();
        println!(
            "FLUSH_DISK_TIMEOUT answers after {timeouts:?}; SUCCESS again {:?} after the first",
            stall_ended - stall_began
        );
        for t in &timeouts {
            assert!(
                *t >= Duration::from_millis(SYNC_TIMEOUT_MS - 50)
                    && *t < Duration::from_millis(SYNC_TIMEOUT_MS + 1500),
                "timeout answered after {t:?}"
            );
        }
        let during: Vec<Duration> = probes
            .borrow()
            .iter()
            .filter(|(at, _)| *at >= stall_began && *at < stall_ended)
            .map(|(_, took)| *took)
            .collect();
        let slowest = during.iter().max().copied().unwrap_or_default();
        println!(
            "{} probes during the stall, slowest {slowest:?}",
            during.len()
        );
        assert!(during.len() >= 5, "too few probes during the stall");
        assert!(
            slowest < Duration::from_millis(1500),
            "shard 0 or 1 stalled with the sync: {slowest:?}"
        );
    });
    broker.kill9();
    restart_and_verify(&mut broker, &ledgers);
}

/// EIO on every read of shard 0's first CommitLog segment: pulls that need it are answered with an
/// error (no crash, no wrong data), pulls of the newer segment, sends and admin requests work, the
/// store stays writable; without the fault everything is read back.
#[test]
fn eio_reading_an_old_segment_fails_only_the_pulls_that_need_it() {
    let mut broker = Broker::start("");
    let a0 = shard_addr(&broker, 0);
    let ledgers = [Ledger::default(), Ledger::default()];
    // 80 x 64 KiB: past the first 4 MiB segment.
    run_local(async {
        let c0 = connect(a0).await;
        for i in 0..80 {
            let (code, _) = send_one(&c0, &ledgers[0], 0, body("r0", i, 64 * 1024)).await;
            assert_eq!(code, response_code::SUCCESS);
        }
    });
    broker.stop();
    broker.set_env(
        "FAILPOINTS",
        Some("segment_read=return(shard-0/commitlog/00000000000000000000)"),
    );
    broker.restart();
    assert!(broker.log().contains("fail points configured"));
    run_local(async {
        let c0 = connect(a0).await;
        let acks = ledgers[0].snapshot();
        let mut failed = Vec::new();
        let mut served = Vec::new();
        for a in &acks {
            let r = pull(&c0, TOPIC, 0, a.offset).await;
            match r.code {
                response_code::SUCCESS => {
                    let first = decode_records(&r.body).into_iter().next().unwrap();
                    assert_eq!(first.queue_offset, a.offset);
                    assert_eq!(&first.body[..], &a.body[..], "right data at {}", a.offset);
                    served.push(a.offset);
                }
                response_code::SYSTEM_ERROR => {
                    let remark = r.remark.clone().unwrap_or_default();
                    assert!(remark.contains("os error 5"), "{remark}");
                    failed.push(a.offset);
                }
                other => panic!("pull at {} answered {other}", a.offset),
            }
        }
        println!(
            "pulls failing with EIO: offsets {:?}..{:?}; served: {:?}..{:?}",
            failed.first(),
            failed.last(),
            served.first(),
            served.last()
        );
        assert_eq!(failed.first(), Some(&0), "the old segment's reads fail");
        assert!(!served.is_empty(), "the newer segment is still read");
        assert!(
            failed.iter().max() < served.iter().min(),
            "only the old segment fails"
        );
        let (code, _) = send_one(&c0, &ledgers[0], 1, body("r0b", 0, 1000)).await;
        assert_eq!(
            code,
            response_code::SUCCESS,
            "a failing read makes no read-only store"
        );
        assert_eq!(read_only(a0).await.0, "false");
    });
    broker.stop();
    restart_and_verify(&mut broker, &ledgers);
}

#[test]
fn consumers_see_a_record_only_once_its_sync_completed() {
    const TOPIC_VIS: &str = "DurableOnly";
    let broker = Broker::builder()
        .extra("flushDiskType = \"SYNC_FLUSH\"\nsyncFlushTimeout = 10000\n")
        .env("FAILPOINTS", "commitlog_stall@0=return(3000)")
        .start();
    assert!(
        broker
            .log()
            .contains("fail points configured from FAILPOINTS"),
        "not a failpoints build?\n{}",
        broker.log()
    );
    let addr = shard_addr(&broker, 0);
    run_local(async {
        // Every sync of shard 0 now takes 3 s more: the send waits for it.
        let sender = glommio::spawn_local(async move {
            let c = connect(addr).await;
            let r = send(&c, TOPIC_VIS, 0, b"not yet durable", "").await;
            (r.code, Instant::now())
        });
        glommio::timer::sleep(Duration::from_millis(700)).await;
        let c = connect(addr).await;
        let early = pull(&c, TOPIC_VIS, 0, 0).await;
        assert_eq!(
            early.code,
            response_code::PULL_NOT_FOUND,
            "a pull during the sync got the record before it was durable ({:?})",
            early.remark
        );
        // A long-polling pull parked now is answered when the sync completes, not at its timeout.
        let parked = glommio::spawn_local(async move {
            let c = connect(addr).await;
            let r = c
                .invoke(
                    pull_request("test_consumer", TOPIC_VIS, 0, 0, 15_000, None),
                    Duration::from_secs(30),
                )
                .await
                .expect("long poll answered");
            (r, Instant::now())
        });
        let (code, synced_at) = sender.await;
        assert_eq!(code, response_code::SUCCESS);
        let (r, answered_at) = parked.await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let recs = decode_records(&r.body);
        assert_eq!(recs.len(), 1);
        assert_eq!(&recs[0].body[..], b"not yet durable");
        let late = answered_at.saturating_duration_since(synced_at);
        println!("long poll answered {late:?} after the send's sync");
        assert!(
            late < Duration::from_secs(2),
            "long poll answered {late:?} after the sync"
        );
    });
    drop(broker);
}

//! Fault injection between a SYNC_MASTER and its slave: the slave replicates through a proxy that
//! stalls, cuts and refuses the HA link, and the slave is SIGKILLed and restarted. Sends get error
//! answers (FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE) in bounded time instead of hanging, succeed
//! again once the link is back, and every acknowledged message is on the master and on the slave.
//! Over a slow link (the proxy passes 1 MB/s), a SYNC_MASTER acknowledges no faster than the link
//! carries, answers the rest with slave errors in bounded time, and loses nothing.
//! Skipped, with the reason printed, when the broker under test has no HA (runtime info without
//! `haSlaveConnections`). `FAULT_BROKER_BIN` runs it against another build of the broker.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use fault_support::proxy::{FaultProxy, Mode};
use protocol::response_code;

const TOPIC: &str = "HaFault";
/// syncFlushTimeout of the master: how long a send waits for the slave's ack.
const SYNC_TIMEOUT_MS: u64 = 2000;
/// Longest acceptable wait for any answer.
const ANSWER_LIMIT: Duration = Duration::from_millis(SYNC_TIMEOUT_MS + 3000);

async fn slave_connections(master: SocketAddr) -> Option<i64> {
    info_i64(&runtime_info(master).await, "haSlaveConnections")
}

/// One send with a hard limit: (code, how long).
async fn send_once(
    client: &remoting::Client,
    ledger: &Ledger,
    queue: i32,
    body: Vec<u8>,
) -> (i32, Duration) {
    let began = Instant::now();
    let r = client
        .invoke(
            send_request(TOPIC, queue, &body, ""),
            ANSWER_LIMIT + Duration::from_secs(5),
        )
        .await
        .unwrap_or_else(|e| panic!("send not answered after {:?} (hang?): {e}", began.elapsed()));
    if r.code == response_code::SUCCESS {
        let offset = r
            .ext("queueOffset")
            .and_then(|o| o.parse().ok())
            .expect("queueOffset");
        ledger.record(TOPIC, queue, offset, body);
    }
    (r.code, began.elapsed())
}

/// Sends until one succeeds (the link is back); panics after `limit`.
async fn send_until_success(
    client: &remoting::Client,
    ledger: &Ledger,
    tag: &str,
    limit: Duration,
) -> Duration {
    let start = Instant::now();
    for i in 0.. {
        let (code, took) =
            send_once(client, ledger, i % 4, format!("{tag}-{i}").into_bytes()).await;
        assert!(took < ANSWER_LIMIT, "{tag}: a send took {took:?}");
        if code == response_code::SUCCESS {
            break;
        }
        assert!(
            start.elapsed() < limit,
            "{tag}: sends did not succeed again within {limit:?} (last code {code})"
        );
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
    start.elapsed()
}

/// `n` sends that must all fail with a slave error, each answered in time.
async fn expect_slave_errors(
    client: &remoting::Client,
    ledger: &Ledger,
    tag: &str,
    n: usize,
) -> Vec<i32> {
    let mut codes = Vec::new();
    for i in 0..n {
        let (code, took) = send_once(
            client,
            ledger,
            (i % 4) as i32,
            format!("{tag}-{i}").into_bytes(),
        )
        .await;
        assert!(took < ANSWER_LIMIT, "{tag}: a send took {took:?}");
        codes.push(code);
    }
    println!("{tag}: answers {codes:?}");
    assert!(
        codes.iter().all(|c| [
            response_code::FLUSH_SLAVE_TIMEOUT,
            response_code::SLAVE_NOT_AVAILABLE
        ]
        .contains(c)),
        "{tag}: expected slave errors, got {codes:?}"
    );
    codes
}

/// A SYNC_MASTER (SYNC_FLUSH) and a slave replicating through a fault proxy, both with `extra`; None
/// (printed) when the broker under test has no HA.
fn start_pair(extra: &str) -> Option<(Broker, FaultProxy, Broker)> {
    let master = Broker::builder()
        .bin(fault_broker_bin())
        .extra(&format!(
            "{extra}brokerRole = \"SYNC_MASTER\"\nflushDiskType = \"SYNC_FLUSH\"\nsyncFlushTimeout = {SYNC_TIMEOUT_MS}\n"
        ))
        .start();
    let has_ha = run_local(async { slave_connections(master.addr()).await.is_some() });
    if !has_ha {
        println!(
            "SKIPPED HA fault test: this broker reports no haSlaveConnections (HA not built in)"
        );
        return None;
    }
    let proxy = FaultProxy::start(master.ha_addr());
    let slave = Broker::builder()
        .bin(fault_broker_bin())
        .extra(&format!(
            "{extra}brokerRole = \"SLAVE\"\nbrokerId = 1\nslaveReadEnable = true\nhaMasterAddress = \"{}\"\n",
            proxy.addr()
        ))
        .start();
    Some((master, proxy, slave))
}

#[test]
fn ha_link_stalled_cut_and_slave_killed_sends_answer_errors_then_resume_without_loss() {
    let Some((master, proxy, mut slave)) = start_pair("") else {
        return;
    };
    let ledger = Ledger::default();
    run_local(async {
        let client = connect(master.addr()).await;
        let took = send_until_success(&client, &ledger, "connect", Duration::from_secs(30)).await;
        println!("slave connected through the proxy after {took:?}");
        for i in 0..40 {
            let (code, _) =
                send_once(&client, &ledger, i % 4, format!("before-{i}").into_bytes()).await;
            assert_eq!(code, response_code::SUCCESS);
        }

        // 1. Stall: the slave stays connected but acknowledges nothing.
        proxy.set_mode(Mode::Stall);
        expect_slave_errors(&client, &ledger, "stalled", 3).await;
        // 2. Cut and refuse: the master loses its slave.
        proxy.set_mode(Mode::Refuse);
        proxy.cut_all();
        glommio::timer::sleep(Duration::from_millis(500)).await;
        expect_slave_errors(&client, &ledger, "cut", 3).await;
        // 3. Link back: the slave reconnects, catches up, sends succeed.
        proxy.set_mode(Mode::Pass);
        let took = send_until_success(&client, &ledger, "relinked", Duration::from_secs(60)).await;
        println!("sends succeed {took:?} after the link came back");
        for i in 0..40 {
            let (code, _) = send_once(
                &client,
                &ledger,
                i % 4,
                format!("after-link-{i}").into_bytes(),
            )
            .await;
            assert_eq!(code, response_code::SUCCESS);
        }
    });

    // 4. Slave SIGKILLed: slave errors; restarted: sends succeed again.
    slave.kill9();
    run_local(async {
        let client = connect(master.addr()).await;
        glommio::timer::sleep(Duration::from_millis(500)).await;
        expect_slave_errors(&client, &ledger, "slave-killed", 3).await;
    });
    slave.restart();
    run_local(async {
        let client = connect(master.addr()).await;
        let took =
            send_until_success(&client, &ledger, "slave-restarted", Duration::from_secs(60)).await;
        println!("sends succeed {took:?} after the slave restarted");
        for i in 0..40 {
            let (code, _) =
                send_once(&client, &ledger, i % 4, format!("end-{i}").into_bytes()).await;
            assert_eq!(code, response_code::SUCCESS);
        }
        let on_master = connect(master.addr()).await;
        ledger
            .verify(&on_master)
            .await
            .assert_no_loss("HA faults, on the master");
        // Every acknowledged message reached the slave (SYNC_MASTER acknowledged only after its ack).
        let on_slave = connect(slave.addr()).await;
        ledger
            .verify(&on_slave)
            .await
            .assert_no_loss("HA faults, on the slave");
    });
    assert!(
        !master.log().contains("panicked"),
        "master panicked:\n{}",
        master.log()
    );
    assert!(
        !slave.log().contains("panicked"),
        "slave panicked:\n{}",
        slave.log()
    );
}

#[test]
fn slow_ha_link_acknowledges_no_faster_than_it_carries_and_loses_nothing() {
    const RATE: u64 = 1_000_000;
    const BODY: usize = 16 * 1024;
    let Some((master, proxy, slave)) = start_pair("shardCount = 1\n") else {
        return;
    };
    let ledger = std::rc::Rc::new(Ledger::default());
    run_local(async {
        let client = connect(master.addr()).await;
        send_until_success(&client, &ledger, "connect", Duration::from_secs(30)).await;
        proxy.set_mode(Mode::Bandwidth(RATE));
        // Four producers of 16 KiB messages for 8 s: far more than 1 MB/s offered.
        let began = Instant::now();
        let window = Duration::from_secs(8);
        let mut tasks = Vec::new();
        for t in 0..4 {
            let ledger = ledger.clone();
            let addr = master.addr();
            tasks.push(glommio::spawn_local(async move {
                let client = connect(addr).await;
                let (mut acked, mut codes) = (0u64, Vec::new());
                let mut i = 0;
                while began.elapsed() < window {
                    let body = format!("slow-{t}-{i}-")
                        .into_bytes()
                        .into_iter()
                        .chain(std::iter::repeat_n(b's', BODY))
                        .collect::<Vec<u8>>();
                    let (code, took) = send_once(&client, &ledger, t, body).await;
                    assert!(took < ANSWER_LIMIT, "a send took {took:?}");
                    if code == response_code::SUCCESS {
                        acked += BODY as u64;
                    } else {
                        codes.push(code);
                    }
                    i += 1;
                }
                (acked, codes)
            }));
        }
        let (mut acked, mut codes) = (0u64, Vec::new());
        for task in tasks {
            let (a, c) = task.await;
            acked += a;
            codes.extend(c);
        }
        let elapsed = began.elapsed().as_secs_f64();
        println!(
            "1 MB/s HA link: {:.2} MB/s of bodies acknowledged over {elapsed:.1} s, {} other answers",
            acked as f64 / elapsed / 1e6,
            codes.len()
        );
        assert!(
            codes.iter().all(|c| [
                response_code::FLUSH_SLAVE_TIMEOUT,
                response_code::SLAVE_NOT_AVAILABLE
            ]
            .contains(c)),
            "expected only slave errors besides SEND_OK, got {codes:?}"
        );
        // What was acknowledged crossed the link: no more than it carries (plus what sat in socket
        // buffers when the limit was set), and the link was used.
        let carried = RATE as f64 * elapsed + 2.0 * 1024.0 * 1024.0;
        assert!(
            (acked as f64) <= carried,
            "{acked} bytes acknowledged over {elapsed:.1} s through a {RATE} B/s link"
        );
        assert!(
            acked > RATE,
            "almost nothing acknowledged over the slow link: {acked} bytes"
        );
        proxy.set_mode(Mode::Pass);
        send_until_success(&client, &ledger, "fast-again", Duration::from_secs(60)).await;
        ledger
            .verify(&connect(master.addr()).await)
            .await
            .assert_no_loss("slow HA link, on the master");
        ledger
            .verify(&connect(slave.addr()).await)
            .await
            .assert_no_loss("slow HA link, on the slave");
    });
    drop(proxy);
}

#[test]
fn delayed_ha_link_makes_each_acknowledgement_wait_for_the_slave_and_loses_nothing() {
    const DELAY: Duration = Duration::from_millis(80);
    let Some((master, proxy, slave)) = start_pair("shardCount = 1\n") else {
        return;
    };
    let ledger = Ledger::default();
    run_local(async {
        let client = connect(master.addr()).await;
        send_until_success(&client, &ledger, "connect", Duration::from_secs(30)).await;
        proxy.set_mode(Mode::Delay(DELAY));
        let mut fastest = Duration::MAX;
        for i in 0..20 {
            let (code, took) =
                send_once(&client, &ledger, 0, format!("delayed-{i}").into_bytes()).await;
            assert_eq!(
                code,
                response_code::SUCCESS,
                "send {i} through a delayed HA link"
            );
            fastest = fastest.min(took);
        }
        println!("HA link delayed {DELAY:?} each way: fastest acknowledged send {fastest:?}");
        // The data reaches the slave one delay later and its ack comes back one more: no SEND_OK
        // can come before the slave had the message.
        assert!(
            fastest >= DELAY,
            "acknowledged in {fastest:?}, before the slave could have it"
        );
        proxy.set_mode(Mode::Pass);
        ledger
            .verify(&connect(master.addr()).await)
            .await
            .assert_no_loss("delayed HA link, on the master");
        ledger
            .verify(&connect(slave.addr()).await)
            .await
            .assert_no_loss("delayed HA link, on the slave");
    });
    drop(proxy);
}

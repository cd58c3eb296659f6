//! Fault injection between clients and the broker: connections reset mid-send (also after a torn
//! frame), delayed, and stalled through a proxy while producers keep sending. Clients see errors or
//! timeouts, never a hang; the broker stays healthy for everyone else; every acknowledged message
//! reads back (count and bytes), also after a restart.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use fault_support::proxy::{FaultProxy, Mode};
use protocol::{request_code, response_code, RemotingCommand};

const TOPIC: &str = "CutMidSend";
/// Each send's hard limit; a send not answered by then counts as a timeout.
const SEND_LIMIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Counts {
    sent: Cell<u64>,
    acked: Cell<u64>,
    errors: Cell<u64>,
    timeouts: Cell<u64>,
    /// Longest wait for any send's outcome (answer, error or timeout).
    slowest: Cell<Duration>,
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// A producer that sends through `via` until `stop`, reconnecting after every failure.
async fn producer(
    via: SocketAddr,
    id: usize,
    ledger: Ledger,
    counts: Rc<Counts>,
    stop: Rc<Cell<bool>>,
) {
    let mut client: Option<remoting::Client> = None;
    let mut i = 0usize;
    while !stop.get() {
        let c = match client.as_ref().filter(|c| !c.is_closed()) {
            Some(c) => c.clone(),
            None => match remoting::Client::connect(via, Duration::from_secs(1)).await {
                Ok(c) => {
                    client = Some(c.clone());
                    c
                }
                Err(_) => {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let queue = ((id + i) % 4) as i32;
        // Up to 48 KiB, so a reset often lands in the middle of a frame.
        let body = format!("p{id}-m{i}-{}", "c".repeat(i * 4099 % (48 << 10))).into_bytes();
        i += 1;
        bump(&counts.sent);
        let began = Instant::now();
        let outcome = c
            .invoke(send_request(TOPIC, queue, &body, ""), SEND_LIMIT)
            .await;
        counts
            .slowest
            .set(counts.slowest.get().max(began.elapsed()));
        match outcome {
            Ok(r) if r.code == response_code::SUCCESS => {
                let offset = r
                    .ext("queueOffset")
                    .and_then(|o| o.parse().ok())
                    .expect("queueOffset");
                ledger.record(TOPIC, queue, offset, body);
                bump(&counts.acked);
            }
            Ok(r) => panic!(
                "broker answered code {} ({:?}) to a well-formed send",
                r.code, r.remark
            ),
            Err(e) => {
                if e.to_string().contains("timed out") || began.elapsed() >= SEND_LIMIT {
                    bump(&counts.timeouts);
                } else {
                    bump(&counts.errors);
                }
                // A connection that failed a request is not trusted again.
                c.close();
                client = None;
            }
        }
    }
}

/// The broker answers on a direct connection, quickly.
async fn assert_healthy(broker: SocketAddr, ledger: &Ledger, what: &str) {
    let began = Instant::now();
    let client = connect(broker).await;
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG),
            TIMEOUT,
        )
        .await
        .expect("broker answers directly");
    assert_eq!(r.code, response_code::SUCCESS);
    let body = format!("direct-{what}").into_bytes();
    let r = send(&client, TOPIC, 0, &body, "").await;
    assert_eq!(
        r.code,
        response_code::SUCCESS,
        "{what}: direct send {:?}",
        r.remark
    );
    ledger.record(
        TOPIC,
        0,
        r.ext("queueOffset")
            .and_then(|o| o.parse().ok())
            .expect("offset"),
        body,
    );
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{what}: broker slow to answer: {:?}",
        began.elapsed()
    );
}

#[test]
fn cut_delayed_and_stalled_client_connections_lose_no_acknowledged_message() {
    // The test writes ~100 MB: with the default diskMaxUsedSpaceRatio (75) a host disk fuller than 75%
    // makes retention delete the oldest segments (as RocketMQ does), which is not what this test is about.
    let mut broker = Broker::start("diskMaxUsedSpaceRatio = 100");
    let proxy = FaultProxy::start(broker.addr());
    let ledger = Ledger::default();
    let counts = Rc::new(Counts::default());
    run_local(async {
        let stop = Rc::new(Cell::new(false));
        let producers: Vec<_> = (0..4)
            .map(|id| {
                glommio::spawn_local(producer(
                    proxy.addr(),
                    id,
                    ledger.clone(),
                    counts.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        let sleep = |ms| glommio::timer::sleep(Duration::from_millis(ms));
        let phase = |name: &str| {
            println!(
                "{name}: sent {} acked {} errors {} timeouts {}",
                counts.sent.get(),
                counts.acked.get(),
                counts.errors.get(),
                counts.timeouts.get()
            )
        };
        sleep(800).await;
        let acked_warm = counts.acked.get();
        assert!(
            acked_warm > 10,
            "too few sends before the faults: {acked_warm}"
        );

        // 1. Resets, each after a few KiB more of client bytes: frames torn mid-header or mid-body.
        for cut_after in [3u64, 700, 9_000, 30_000] {
            proxy.cut_all_after(cut_after);
            sleep(250).await;
        }
        phase("torn frames");
        // 2. Plain resets of every open connection, several times.
        for _ in 0..5 {
            proxy.cut_all();
            sleep(150).await;
        }
        phase("resets");
        assert!(
            counts.errors.get() + counts.timeouts.get() > 0,
            "the cuts caused no client error"
        );
        assert_healthy(broker.addr(), &ledger, "after cuts").await;

        // 3. Delay: everything slower, still answered.
        proxy.set_mode(Mode::Delay(Duration::from_millis(30)));
        let before = counts.acked.get();
        sleep(1000).await;
        assert!(
            counts.acked.get() > before,
            "no send acknowledged through a delayed link"
        );
        phase("delay");

        // 4. Stall: the clients time out (no hang), the broker keeps serving direct clients.
        proxy.set_mode(Mode::Stall);
        sleep(300).await;
        let timeouts_before = counts.timeouts.get();
        assert_healthy(broker.addr(), &ledger, "during stall").await;
        sleep(SEND_LIMIT.as_millis() as u64 + 700).await;
        assert!(
            counts.timeouts.get() > timeouts_before,
            "stalled sends did not time out"
        );
        phase("stall");
        proxy.cut_all();

        // 5. Recovery: sends succeed again through the proxy.
        proxy.set_mode(Mode::Pass);
        let before = counts.acked.get();
        sleep(800).await;
        assert!(
            counts.acked.get() > before,
            "sends did not resume after the faults"
        );
        stop.set(true);
        for p in producers {
            p.await;
        }
        phase("end");
        assert!(
            counts.slowest.get() < SEND_LIMIT + Duration::from_secs(1),
            "a send hung for {:?}",
            counts.slowest.get()
        );
        assert_healthy(broker.addr(), &ledger, "at end").await;
        let client = connect(broker.addr()).await;
        ledger.verify(&client).await.assert_no_loss("client cuts");
    });
    let log = broker.log();
    assert!(!log.contains("panicked"), "broker panicked:\n{log}");
    assert!(
        broker.stop().success(),
        "graceful stop after the faults:\n{}",
        broker.log()
    );
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        ledger
            .verify(&client)
            .await
            .assert_no_loss("client cuts, after restart");
    });
}

//! Fault injection between broker and name server: a stalled link (proxy holding every byte) does not
//! slow the broker's sends and the broker re-registers once it ends; a name server killed with SIGKILL
//! and started again empty gets the broker's registration back while clients keep sending to the routes
//! they know. Every case checks that no acknowledged message is lost (count and bytes).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use fault_support::acked::Ledger;
use fault_support::proxy::{FaultProxy, Mode};
use fault_support::routes::{route_brokers, route_code, wait_route};
use protocol::{request_code, response_code, RemotingCommand};

/// Registration period of the test brokers (RocketMQ's 30 s would make the tests slow).
const REGISTER_PERIOD_MS: u64 = 1000;

#[test]
#[ignore = "not a test: the name-server process the fault tests start and SIGKILL"]
fn namesrv_helper_process() {
    namesrv_helper_main();
}

fn start_namesrv(dir: &std::path::Path) -> NamesrvProcess {
    NamesrvProcess::start("namesrv_helper_process", dir.join("namesrv.log"))
}

/// Sends `n` messages of `topic` round robin over 4 queues; each must succeed within `limit`.
async fn send_acked(
    client: &remoting::Client,
    ledger: &Ledger,
    topic: &str,
    n: usize,
    tag: &str,
    limit: Duration,
) -> Duration {
    let mut slowest = Duration::ZERO;
    for i in 0..n {
        let queue = (i % 4) as i32;
        let body = format!("{tag}-{i}-{}", "b".repeat(i * 37 % 2000)).into_bytes();
        let began = Instant::now();
        let r = client
            .invoke(send_request(topic, queue, &body, ""), limit)
            .await
            .unwrap_or_else(|e| panic!("send {tag}/{i} not answered within {limit:?}: {e}"));
        assert_eq!(
            r.code,
            response_code::SUCCESS,
            "send {tag}/{i}: {:?}",
            r.remark
        );
        slowest = slowest.max(began.elapsed());
        let offset = r
            .ext("queueOffset")
            .and_then(|o| o.parse().ok())
            .expect("queueOffset");
        ledger.record(topic, queue, offset, body);
    }
    slowest
}

#[test]
fn stalled_namesrv_link_does_not_stop_sends_and_broker_reregisters_after() {
    let dir = tempfile::tempdir().unwrap();
    let ns = start_namesrv(dir.path());
    let proxy = FaultProxy::start(ns.addr);
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{}\"\nregisterNameServerPeriod = {REGISTER_PERIOD_MS}",
        proxy.addr()
    ));
    run_local(async {
        wait_route(ns.addr, "TBW102", Duration::from_secs(20)).await;
        let client = connect(broker.addr()).await;
        let ledger = Ledger::default();
        send_acked(&client, &ledger, "Known", 40, "before", TIMEOUT).await;
        wait_route(ns.addr, "Known", Duration::from_secs(20)).await;

        // Stall for longer than the broker's registration timeout (6 s).
        proxy.set_mode(Mode::Stall);
        let stall_began = Instant::now();
        let mut slowest = Duration::ZERO;
        let mut rounds = 0;
        while stall_began.elapsed() < Duration::from_secs(8) {
            slowest =
                slowest.max(send_acked(&client, &ledger, "Known", 20, "stalled", TIMEOUT).await);
            // A new topic makes the broker try to register at once, into the stalled link.
            slowest = slowest.max(
                send_acked(
                    &client,
                    &ledger,
                    "BornInStall",
                    4,
                    &format!("new{rounds}"),
                    TIMEOUT,
                )
                .await,
            );
            rounds += 1;
            glommio::timer::sleep(Duration::from_millis(200)).await;
        }
        println!("stall: {rounds} rounds of sends, slowest send {slowest:?}");
        assert!(
            slowest < Duration::from_secs(2),
            "a send took {slowest:?} while the name-server link stalled"
        );
        // The stall really held the registration back.
        assert_eq!(
            route_code(ns.addr, "BornInStall").await,
            response_code::TOPIC_NOT_EXIST,
            "the name server learnt a topic through a stalled link"
        );

        // The stall ends the way real ones do: the held connections are reset, nothing they held
        // arrives, and the broker must connect and register again.
        proxy.cut_all();
        proxy.set_mode(Mode::Pass);
        let took = wait_route(ns.addr, "BornInStall", Duration::from_secs(30)).await;
        println!("re-registered {took:?} after the stall ended");
        send_acked(&client, &ledger, "Known", 20, "after", TIMEOUT).await;

        ledger.verify(&client).await.assert_no_loss("namesrv stall");
    });
    drop(broker);
}

#[test]
fn a_connection_with_a_lost_registration_stays_open_until_a_new_one_carries_every_broker() {
    // The name server drops the brokers last registered on a connection that closes. A broker that
    // closed the connection of a timed-out registration at once left the routes of the brokers last
    // registered on it missing until its next round (30 s by default).
    let dir = tempfile::tempdir().unwrap();
    let ns = start_namesrv(dir.path());
    let proxy = FaultProxy::start(ns.addr);
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{}\"\nregisterNameServerPeriod = 4000\nregisterBrokerTimeoutMills = 1500",
        proxy.addr()
    ));
    run_local(async {
        wait_route(ns.addr, "TBW102", Duration::from_secs(20)).await;
        let all = route_brokers(ns.addr, "TBW102").await;
        let before = proxy.accepted();
        proxy.set_mode(Mode::DiscardOlderThan(before));
        let mut missing = Vec::new();
        let lossy = Instant::now();
        while lossy.elapsed() < Duration::from_secs(12) {
            let served = route_brokers(ns.addr, "TBW102").await;
            if served != all {
                missing.push((lossy.elapsed(), served));
            }
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        let log = broker.log();
        assert!(
            log.contains("its connection is replaced"),
            "no registration timed out:\n{log}"
        );
        assert!(
            proxy.accepted() > before,
            "the broker made no new connection"
        );
        assert!(
            missing.is_empty(),
            "the route to {all:?} changed ({missing:?}) after {before} connection(s) went dead:\n{log}"
        );
        println!(
            "{} connection(s) through the proxy after the first went dead; route served throughout",
            proxy.accepted()
        );
    });
    drop(broker);
}

#[test]
fn namesrv_sigkill_and_restart_broker_reregisters_and_clients_keep_sending() {
    let dir = tempfile::tempdir().unwrap();
    let mut ns = start_namesrv(dir.path());
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{}\"\nregisterNameServerPeriod = {REGISTER_PERIOD_MS}",
        ns.addr
    ));
    let topic = "KeepsSending";
    run_local(async {
        wait_route(ns.addr, "TBW102", Duration::from_secs(20)).await;
        let direct = connect(broker.addr()).await;
        // Create the topic so the name server has its route before the client asks.
        let create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
            .with_ext("topic", topic)
            .with_ext("defaultTopic", "TBW102")
            .with_ext("readQueueNums", "4")
            .with_ext("writeQueueNums", "4")
            .with_ext("perm", "6")
            .with_ext("topicFilterType", "SINGLE_TAG");
        assert_eq!(
            direct.invoke(create, TIMEOUT).await.unwrap().code,
            response_code::SUCCESS
        );
        wait_route(ns.addr, topic, Duration::from_secs(20)).await;

        // A real client that learnt the route from the name server.
        let producer = Rc::new(client::Producer::new(
            client::NameServer::new(vec![ns.addr], Duration::from_secs(2)),
            client::ProducerConfig {
                group: "fault_pg".into(),
                ..client::ProducerConfig::default()
            },
        ));
        // One ledger per shard-broker (`broker-t-<shard>`): the same queue id is a queue of each.
        let ledgers = [Ledger::default(), Ledger::default()];
        let ledger_of = |ledgers: &[Ledger; 2], broker: &str| {
            let shard: usize = broker.rsplit('-').next().unwrap().parse().unwrap();
            ledgers[shard].clone()
        };
        let acked = |ledgers: &[Ledger; 2]| ledgers.iter().map(Ledger::len).sum::<usize>();
        let send_some = |n: usize, tag: &'static str| {
            let (producer, ledgers) = (producer.clone(), ledgers.clone());
            async move {
                let mut failed = 0;
                for i in 0..n {
                    let body = format!("{tag}-{i}-{}", "k".repeat(i * 53 % 3000)).into_bytes();
                    match producer
                        .send(&client::Message::new(topic, body.clone()))
                        .await
                    {
                        Ok(r) => ledger_of(&ledgers, &r.queue.broker_name).record(
                            topic,
                            r.queue.queue_id,
                            r.queue_offset,
                            body,
                        ),
                        Err(e) => {
                            eprintln!("send {tag}/{i} failed: {e}");
                            failed += 1;
                        }
                    }
                }
                failed
            }
        };
        assert_eq!(send_some(50, "before").await, 0);

        ns.kill9();
        let acked_before = acked(&ledgers);
        assert_eq!(
            send_some(100, "namesrv-down").await,
            0,
            "sends to a known route failed while the name server was down"
        );
        // Registration attempts against the dead name server must not disturb the broker.
        glommio::timer::sleep(Duration::from_millis(2 * REGISTER_PERIOD_MS)).await;
        assert_eq!(send_some(50, "namesrv-down-2").await, 0);
        assert_eq!(acked(&ledgers), acked_before + 150);

        ns.restart();
        let took = wait_route(ns.addr, topic, Duration::from_secs(30)).await;
        println!("broker re-registered with the restarted name server after {took:?}");
        // A client that never saw the route finds it again.
        let fresh = client::Producer::new(
            client::NameServer::new(vec![ns.addr], Duration::from_secs(2)),
            client::ProducerConfig {
                group: "fault_pg2".into(),
                instance: 7,
                ..client::ProducerConfig::default()
            },
        );
        let body = b"fresh-client".to_vec();
        let r = fresh
            .send(&client::Message::new(topic, body.clone()))
            .await
            .expect("fresh client sends");
        ledger_of(&ledgers, &r.queue.broker_name).record(
            topic,
            r.queue.queue_id,
            r.queue_offset,
            body,
        );
        assert_eq!(send_some(50, "after").await, 0);

        for (shard, ledger) in ledgers.iter().enumerate() {
            let port = shard_broker_port(broker.port, shard as u16);
            let client = connect(std::net::SocketAddr::from(([127, 0, 0, 1], port))).await;
            ledger
                .verify(&client)
                .await
                .assert_no_loss(&format!("namesrv SIGKILL + restart, shard-broker {shard}"));
        }
    });
    drop(broker);
}

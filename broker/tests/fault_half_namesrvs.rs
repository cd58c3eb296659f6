//! Half the name servers gone: a broker registered with two name servers keeps registering with the
//! one it can reach while the other is SIGKILLed, then while the first is partitioned (a proxy that
//! holds every byte) and the second returns with an empty table, and after the partition heals.
//! Routes stay served throughout by a reachable name server; a client given both name servers finds
//! routes of topics created during the faults; no acknowledged message is lost.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod fault_support;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use fault_support::acked::Ledger;
use fault_support::proxy::{FaultProxy, Mode};
use fault_support::routes::{route_code, wait_route};
use protocol::{request_code, response_code, RemotingCommand};

/// Registration period of the test broker (RocketMQ's 30 s would make the test slow).
const REGISTER_PERIOD_MS: u64 = 1000;
/// How long a name server may take to learn a topic: a few periods plus one registration timeout
/// spent on the unreachable one.
const LEARN_LIMIT: Duration = Duration::from_secs(20);

#[test]
#[ignore = "not a test: the name-server process the fault tests start and SIGKILL"]
fn namesrv_helper_process() {
    namesrv_helper_main();
}

async fn create_topic(client: &remoting::Client, topic: &str) {
    let create = RemotingCommand::request(request_code::UPDATE_AND_CREATE_TOPIC)
        .with_ext("topic", topic)
        .with_ext("defaultTopic", "TBW102")
        .with_ext("readQueueNums", "4")
        .with_ext("writeQueueNums", "4")
        .with_ext("perm", "6")
        .with_ext("topicFilterType", "SINGLE_TAG");
    let r = client.invoke(create, TIMEOUT).await.unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
}

/// A producer that knows only the name servers (both), as users configure `namesrvAddr`.
fn producer(namesrvs: Vec<SocketAddr>, instance: u32) -> client::Producer {
    client::Producer::new(
        client::NameServer::new(namesrvs, Duration::from_secs(2)),
        client::ProducerConfig {
            group: "half_namesrv_pg".into(),
            instance,
            ..client::ProducerConfig::default()
        },
    )
}

/// Sends `n` messages of `topic` through `producer`, recording each acknowledged one in the
/// ledger of the shard-broker that stored it; every send must succeed.
async fn send_all(
    producer: &client::Producer,
    ledgers: &[Ledger; 2],
    topic: &str,
    n: usize,
    tag: &str,
) {
    for i in 0..n {
        let body = format!("{tag}-{i}-{}", "h".repeat(i * 41 % 1500)).into_bytes();
        let r = producer
            .send(&client::Message::new(topic, body.clone()))
            .await
            .unwrap_or_else(|e| panic!("send {tag}/{i} to {topic}: {e}"));
        let shard: usize = r
            .queue
            .broker_name
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        ledgers[shard].record(topic, r.queue.queue_id, r.queue_offset, body);
    }
}

#[test]
fn broker_keeps_registering_with_the_reachable_half_and_routes_stay_served() {
    let dir = tempfile::tempdir().unwrap();
    let ns_a = NamesrvProcess::start("namesrv_helper_process", dir.path().join("namesrv-a.log"));
    let mut ns_b =
        NamesrvProcess::start("namesrv_helper_process", dir.path().join("namesrv-b.log"));
    // The broker reaches A through a proxy the test can partition.
    let proxy_a = FaultProxy::start(ns_a.addr);
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{};{}\"\nregisterNameServerPeriod = {REGISTER_PERIOD_MS}",
        proxy_a.addr(),
        ns_b.addr
    ));
    let both = vec![proxy_a.addr(), ns_b.addr];
    run_local(async {
        let admin = connect(broker.addr()).await;
        let ledgers = [Ledger::default(), Ledger::default()];
        create_topic(&admin, "HalfBefore").await;
        wait_route(ns_a.addr, "HalfBefore", LEARN_LIMIT).await;
        wait_route(ns_b.addr, "HalfBefore", LEARN_LIMIT).await;
        send_all(
            &producer(both.clone(), 1),
            &ledgers,
            "HalfBefore",
            40,
            "before",
        )
        .await;

        // 1. B is SIGKILLed: A keeps learning new topics, a client given both finds them.
        ns_b.kill9();
        create_topic(&admin, "BornWithBDead").await;
        let took = wait_route(ns_a.addr, "BornWithBDead", LEARN_LIMIT).await;
        println!("A learnt a topic {took:?} after it was created, B dead");
        send_all(
            &producer(both.clone(), 2),
            &ledgers,
            "BornWithBDead",
            40,
            "b-dead",
        )
        .await;

        // 2. A is partitioned and B returns empty: the broker registers everything with B although
        //    every registration with A hangs until its timeout.
        proxy_a.set_mode(Mode::Stall);
        ns_b.restart();
        assert_eq!(
            route_code(ns_b.addr, "HalfBefore").await,
            response_code::TOPIC_NOT_EXIST,
            "B came back with an empty table"
        );
        let took = wait_route(ns_b.addr, "HalfBefore", LEARN_LIMIT).await;
        println!(
            "the empty B got the broker's routes back {took:?} after it started, A partitioned"
        );
        wait_route(ns_b.addr, "BornWithBDead", LEARN_LIMIT).await;
        create_topic(&admin, "BornInPartition").await;
        wait_route(ns_b.addr, "BornInPartition", LEARN_LIMIT).await;
        // A client that knows only the routes B serves (A's link hangs) sends to the new topic.
        send_all(
            &producer(vec![ns_b.addr], 3),
            &ledgers,
            "BornInPartition",
            40,
            "partition",
        )
        .await;
        assert_eq!(
            route_code(ns_a.addr, "BornInPartition").await,
            response_code::TOPIC_NOT_EXIST,
            "A learnt a topic through a partitioned link"
        );

        // 3. The partition heals (held connections are reset, as real ones are): A catches up.
        proxy_a.cut_all();
        proxy_a.set_mode(Mode::Pass);
        let took = wait_route(ns_a.addr, "BornInPartition", LEARN_LIMIT).await;
        println!("A learnt the partition's topic {took:?} after the partition healed");
        send_all(
            &producer(both.clone(), 4),
            &ledgers,
            "BornInPartition",
            20,
            "healed",
        )
        .await;

        for (shard, ledger) in ledgers.iter().enumerate() {
            let port = shard_broker_port(broker.port, shard as u16);
            let client = connect(SocketAddr::from(([127, 0, 0, 1], port))).await;
            ledger
                .verify(&client)
                .await
                .assert_no_loss(&format!("half the name servers, shard-broker {shard}"));
        }
    });
    drop(broker);
}

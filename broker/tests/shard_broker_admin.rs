//! Operators name a broker by the name in its config: Apache RocketMQ 4.9.8's `mqadmin wipeWritePerm
//! -b broker-t` / `addWritePerm` against a process of two shard-brokers (`broker-t-0`, `broker-t-1`)
//! change the routes of both, and of no other process (`broker-tb` starts with the same letters); a
//! name that matches nothing answers 0, and shard-broker names of two processes are refused with
//! their names. Apache 5.5.0's mqadmin (the same request) drains and restores them too, where its
//! kit installs. Skips (with a message) when Apache's mqadmin is unavailable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use mqadmin_kit::{line_with, ready_kit, Admin, MQADMIN_4, MQADMIN_5};
use protocol::body::{TopicList, TopicRouteData};
use protocol::{request_code, response_code, RemotingCommand};

/// Longest the whole test may run.
const TEST_LIMIT: Duration = Duration::from_secs(600);

const TOPIC: &str = "ShardAdminTopic";
const PROCESS: [&str; 2] = ["broker-t-0", "broker-t-1"];
const OTHER: [&str; 2] = ["broker-tb-0", "broker-tb-1"];

async fn invoke_ns(ns: SocketAddr, req: RemotingCommand) -> RemotingCommand {
    let client = remoting::Client::connect(ns, TIMEOUT).await.unwrap();
    client.invoke(req, TIMEOUT).await.unwrap()
}

async fn route(ns: SocketAddr, topic: &str) -> Option<TopicRouteData> {
    let req =
        RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    let r = invoke_ns(ns, req).await;
    (r.code == response_code::SUCCESS).then(|| protocol::body::from_json(&r.body).unwrap())
}

/// Every topic's queue data per broker name: (topic, broker name, perm).
async fn all_perms(ns: SocketAddr) -> Vec<(String, String, i32)> {
    let req = RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    let list: TopicList = protocol::body::from_json(&invoke_ns(ns, req).await.body).unwrap();
    let mut out = Vec::new();
    for topic in list.topic_list {
        if let Some(data) = route(ns, &topic).await {
            for qd in data.queue_datas {
                out.push((topic.clone(), qd.broker_name, qd.perm));
            }
        }
    }
    out
}

/// The perm of `broker`'s queues of `topic` in the name server's route.
fn perm_of(perms: &[(String, String, i32)], topic: &str, broker: &str) -> Option<i32> {
    perms
        .iter()
        .find(|(t, b, _)| t == topic && b == broker)
        .map(|(_, _, p)| *p)
}

/// How many topic routes hold queue data of one of `brokers`.
fn routes_of(perms: &[(String, String, i32)], brokers: &[&str]) -> usize {
    perms
        .iter()
        .filter(|(_, b, _)| brokers.contains(&b.as_str()))
        .count()
}

/// Waits until the route of `topic` names `brokers` brokers.
async fn wait_route(ns: SocketAddr, topic: &str, brokers: usize) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if route(ns, topic)
            .await
            .is_some_and(|d| d.broker_datas.len() == brokers)
        {
            return;
        }
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
    panic!("the route of {topic} never named {brokers} brokers");
}

/// A test broker named `name` (the [`test_config`] otherwise), registering with `ns`.
fn broker_named(name: &'static str, ns: SocketAddr, extra: &'static str) -> Broker {
    Broker::builder()
        .config_file("broker.toml", move |port, dir| {
            test_config(
                port,
                &dir.join("store"),
                &format!("namesrvAddr = \"{ns}\"\n{extra}"),
            )
            .replace(
                "brokerName = \"broker-t\"",
                &format!("brokerName = \"{name}\""),
            )
        })
        .start()
}

#[test]
fn write_perm_by_process_name_reaches_every_shard_broker_of_that_process_only() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let started = Instant::now();
    let ns = start_namesrv_in_process();
    let _process = broker_named("broker-t", ns, "");
    let _other = broker_named("broker-tb", ns, "");
    let admin = Admin { kit, ns };
    run_local(async {
        wait_route(ns, "TBW102", 4).await;
        let out = admin.run(&[
            "updateTopic",
            "-c",
            "TestCluster",
            "-t",
            TOPIC,
            "-r",
            "2",
            "-w",
            "2",
        ]);
        assert!(out.contains("create topic to"), "updateTopic: {out}");
        wait_route(ns, TOPIC, 4).await;
        let before = all_perms(ns).await;
        let expected = routes_of(&before, &PROCESS);
        assert!(
            expected >= 4,
            "topics of broker-t's shard-brokers: {before:?}"
        );
        for broker in PROCESS.iter().chain(&OTHER) {
            assert_eq!(perm_of(&before, TOPIC, broker), Some(6), "{broker}");
        }

        // The process's name drains both of its shard-brokers, and nothing of broker-tb.
        let out = admin.run(&["wipeWritePerm", "-b", "broker-t"]);
        let line = line_with(&out, &["wipe write perm of broker[broker-t]", "OK"]).expect(&out);
        assert!(line.ends_with(&format!("OK, {expected}")), "{line}");
        let wiped = all_perms(ns).await;
        for broker in PROCESS {
            assert_eq!(perm_of(&wiped, TOPIC, broker), Some(4), "{broker} drained");
        }
        for broker in OTHER {
            assert_eq!(
                perm_of(&wiped, TOPIC, broker),
                Some(6),
                "{broker} untouched"
            );
        }
        assert!(
            wiped
                .iter()
                .filter(|(_, b, _)| PROCESS.contains(&b.as_str()))
                .all(|(_, _, p)| p & 2 == 0),
            "every route of broker-t-* read-only: {wiped:?}"
        );

        // Names that match no process: nothing changes.
        for name in ["nobody", "broker", "broker-t-"] {
            let out = admin.run(&["wipeWritePerm", "-b", name]);
            let line = line_with(&out, &["wipe write perm of broker[", "OK"]).expect(&out);
            assert!(line.ends_with("OK, 0"), "{name}: {line}");
        }
        let out = admin.run(&["wipeWritePerm", "-b", "broker-tb-1"]);
        let line = line_with(&out, &["broker[broker-tb-1]", "OK"]).expect(&out);
        assert!(
            !line.ends_with("OK, 0"),
            "one shard-broker by its own name: {line}"
        );

        // addWritePerm by the process's name restores both.
        let out = admin.run(&["addWritePerm", "-b", "broker-t"]);
        let line = line_with(&out, &["add write perm of broker[broker-t]", "OK"]).expect(&out);
        assert!(line.ends_with(&format!("OK, {expected}")), "{line}");
        let added = all_perms(ns).await;
        for broker in PROCESS {
            assert_eq!(perm_of(&added, TOPIC, broker), Some(6), "{broker} restored");
        }
        assert_eq!(perm_of(&added, TOPIC, "broker-tb-1"), Some(4));
    });

    // Apache 5.5.0's mqadmin sends the same request: the same answer.
    if let Some(kit5) = ready_kit(MQADMIN_5) {
        let admin5 = Admin { kit: kit5, ns };
        run_local(async {
            let expected = routes_of(&all_perms(ns).await, &PROCESS);
            let out = admin5.run(&["wipeWritePerm", "-b", "broker-t"]);
            let line = line_with(&out, &["wipe write perm of broker[broker-t]", "OK"]).expect(&out);
            assert!(line.ends_with(&format!("OK, {expected}")), "5.5.0: {line}");
            let wiped = all_perms(ns).await;
            for broker in PROCESS {
                assert_eq!(perm_of(&wiped, TOPIC, broker), Some(4), "5.5.0: {broker}");
            }
            let out = admin5.run(&["addWritePerm", "-b", "broker-t"]);
            let line = line_with(&out, &["add write perm of broker[broker-t]", "OK"]).expect(&out);
            assert!(line.ends_with(&format!("OK, {expected}")), "5.5.0: {line}");
            let added = all_perms(ns).await;
            for broker in PROCESS {
                assert_eq!(perm_of(&added, TOPIC, broker), Some(6), "5.5.0: {broker}");
            }
        });
    }

    // A one-shard process named broker-t-5 makes "broker-t" ambiguous: refused with the names.
    let _single = broker_named("broker-t-5", ns, "shardCount = 1\n");
    run_local(async {
        wait_route(ns, "TBW102", 5).await;
        let out = admin.run(&["wipeWritePerm", "-b", "broker-t"]);
        assert!(out.contains("Failed"), "ambiguous name: {out}");
        assert!(
            out.contains("broker-t-0") && out.contains("broker-t-5"),
            "the names in the refusal: {out}"
        );
        let after = all_perms(ns).await;
        for broker in PROCESS {
            assert_eq!(perm_of(&after, TOPIC, broker), Some(6), "{broker}");
        }
    });
    assert!(
        started.elapsed() < TEST_LIMIT,
        "took {:?}",
        started.elapsed()
    );
}

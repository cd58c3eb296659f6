//! Our client's producer heartbeats its group, as Apache's client does: a `client::Producer` that
//! sent one message is listed by `producerConnection -g -t`, ours and Apache's 4.9.8 mqadmin (from
//! Maven Central through tests/apache/; that part is skipped, with a message, when Maven or Java
//! cannot provide it), against a real cluster of two shard-brokers started by
//! `deploy/local-cluster.sh`. Once the producer is gone the brokers drop it.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{run_local, run_with_timeout, LocalCluster};

const TOPIC: &str = "HeartbeatTopic";
const PRODUCER_GROUP: &str = "HeartbeatProducers";
const TIMEOUT: Duration = Duration::from_secs(10);

/// A producer of PRODUCER_GROUP on a thread of its own that sends one message and stays alive
/// until dropped; its client id.
struct LiveProducer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    client_id: String,
}

impl LiveProducer {
    fn start(namesrv: String) -> LiveProducer {
        let stop = Arc::new(AtomicBool::new(false));
        let (sent, was_sent) = std::sync::mpsc::channel();
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            run_local(async move {
                let producer = client::Producer::new(
                    client::NameServer::from_list(&namesrv, TIMEOUT).unwrap(),
                    client::ProducerConfig {
                        group: PRODUCER_GROUP.into(),
                        send_timeout: TIMEOUT,
                        connect_timeout: TIMEOUT,
                        ..client::ProducerConfig::default()
                    },
                );
                let result = producer
                    .send(&client::Message::new(TOPIC, &b"hello"[..]))
                    .await;
                sent.send(result.map(|_| producer.client_id().to_owned()))
                    .unwrap();
                while !stopping.load(Ordering::Relaxed) {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                }
            })
        });
        let client_id = was_sent
            .recv_timeout(TIMEOUT * 2)
            .expect("the producer answers")
            .expect("the send succeeds");
        LiveProducer {
            stop,
            thread: Some(thread),
            client_id,
        }
    }
}

impl Drop for LiveProducer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Apache's mqadmin of `set` (tests/apache/), or None (said loudly) when it cannot be set up.
fn apache_mqadmin(set: &str) -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apache");
    let mut setup = Command::new(dir.join("setup.sh"));
    setup.arg(set);
    let out = run_with_timeout(setup, Duration::from_secs(300));
    if !out.status.success() {
        println!(
            "SKIPPED: Apache's mqadmin {set} is unavailable (tests/apache/setup.sh {set}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(dir.join("mqadmin.sh"))
}

#[test]
fn producer_connection_lists_our_producer() {
    let cluster = LocalCluster::up_with_routing("single-node", "direct");
    let ns = cluster.namesrv_addr();
    let (success, out, err) = cluster.mqadmin(&[
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        TOPIC,
        "-r",
        "2",
        "-w",
        "2",
    ]);
    assert!(success, "updateTopic: {err}\n{out}");
    wait_for("the topic's route", Duration::from_secs(60), || {
        let (success, out, _) = cluster.mqadmin(&["topicRoute", "-t", TOPIC, "--json"]);
        success && out.contains("broker-a-0") && out.contains("broker-a-1")
    });

    let producer = LiveProducer::start(ns.clone());
    let listed = |id: &str| {
        let (success, out, _) =
            cluster.mqadmin(&["producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC]);
        success && out.lines().any(|l| l.split_whitespace().nth(1) == Some(id))
    };
    // The heartbeat leaves when the route is first fetched: no 30 s wait.
    wait_for(
        "our producerConnection lists the producer",
        Duration::from_secs(10),
        || listed(&producer.client_id),
    );
    let json = cluster.mqadmin_json(&["producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC]);
    let row = &json["connections"][0];
    assert_eq!(row["clientId"], producer.client_id.as_str(), "{json}");
    assert_eq!(row["language"], "JAVA", "{json}");

    if let Some(mqadmin) = apache_mqadmin("rocketmq-4.9.8") {
        let first_ns = ns.split(';').next().unwrap().to_owned();
        let mut cmd = Command::new(mqadmin);
        cmd.args([
            "rocketmq-4.9.8",
            "producerConnection",
            "-g",
            PRODUCER_GROUP,
            "-t",
            TOPIC,
            "-n",
            &first_ns,
        ]);
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        println!("Apache 4.9.8 producerConnection:\n{text}");
        // Apache's line: `0001  <clientId>  <addr>  JAVA  V4_9_8` (our version ordinal).
        assert!(
            text.lines().any(
                |l| l.split_whitespace().nth(1) == Some(producer.client_id.as_str())
                    && l.contains("JAVA")
            ),
            "Apache's producerConnection does not list {}: {text}\n{}",
            producer.client_id,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // Gone with its connections: the brokers forget it.
    let id = producer.client_id.clone();
    drop(producer);
    wait_for(
        "the producer leaves producerConnection",
        Duration::from_secs(30),
        || !listed(&id),
    );
}

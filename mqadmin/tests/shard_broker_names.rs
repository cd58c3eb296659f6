//! Our mqadmin with the broker name an operator has in the config (`broker-a`, a process of two
//! shard-brokers `broker-a-0` and `broker-a-1`, started by `deploy/local-cluster.sh`): wipeWritePerm
//! / addWritePerm change both and print their names; `-b broker-a` of brokerStatus, getBrokerConfig
//! and updateBrokerConfig stands for both shard-brokers; a key that needs a restart is marked
//! pending; a name no broker has is refused with a clear message.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::LocalCluster;

const TOPIC: &str = "NamedTopic";

/// `mqadmin args` must succeed; its stdout.
fn ok(cluster: &LocalCluster, args: &[&str]) -> String {
    let (success, out, err) = cluster.mqadmin(args);
    assert!(success, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

/// Each (broker name, perm) of the topic's route on the first name server.
fn route_perms(cluster: &LocalCluster) -> Vec<(String, i64)> {
    let ns = cluster.namesrv_addr();
    let first = ns.split(';').next().unwrap().to_owned();
    let route = cluster.mqadmin_json(&["topicRoute", "-n", &first, "-t", TOPIC]);
    let mut perms: Vec<(String, i64)> = route["queueDatas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["brokerName"].as_str().unwrap().to_owned(),
                q["perm"].as_i64().unwrap(),
            )
        })
        .collect();
    perms.sort();
    perms
}

#[test]
fn a_process_name_stands_for_its_shard_brokers() {
    let started = Instant::now();
    let cluster = LocalCluster::up_with_routing("single-node", "direct");
    let addr0 = cluster.broker_addr(0);
    let addr1 = {
        let (host, port) = addr0.rsplit_once(':').unwrap();
        format!("{host}:{}", port.parse::<u16>().unwrap() + 4)
    };
    ok(
        &cluster,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            TOPIC,
            "-r",
            "2",
            "-w",
            "2",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while route_perms(&cluster).len() < 2 {
        assert!(Instant::now() < deadline, "route of both shard-brokers");
        std::thread::sleep(Duration::from_millis(200));
    }

    // wipeWritePerm / addWritePerm by the process's name: both shard-brokers, named in the output.
    let out = ok(&cluster, &["wipeWritePerm", "-b", "broker-a"]);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("wipe write perm of broker[broker-a] in name server["))
        .collect();
    assert_eq!(lines.len(), 2, "one line per name server: {out}");
    for line in lines {
        assert!(
            line.ends_with("(shard-brokers: broker-a-0,broker-a-1)"),
            "{line}"
        );
    }
    assert_eq!(
        route_perms(&cluster),
        [("broker-a-0".into(), 4), ("broker-a-1".into(), 4)]
    );
    let json = cluster.mqadmin_json(&["addWritePerm", "-b", "broker-a"]);
    assert_eq!(
        json["namesrvs"][0]["shardBrokers"],
        serde_json::json!(["broker-a-0", "broker-a-1"]),
        "{json}"
    );
    assert_eq!(
        route_perms(&cluster),
        [("broker-a-0".into(), 6), ("broker-a-1".into(), 6)]
    );

    // brokerStatus / getBrokerConfig -b NAME: every shard-broker of the process.
    let status = cluster.mqadmin_json(&["brokerStatus", "-b", "broker-a"]);
    for (addr, shard) in [(&addr0, "0"), (&addr1, "1")] {
        assert_eq!(status[addr]["shardId"], shard, "{status}");
        assert_eq!(status[addr]["processBrokerName"], "broker-a", "{status}");
    }
    let one = cluster.mqadmin_json(&["brokerStatus", "-b", "broker-a-1"]);
    assert_eq!(one.as_object().map(|o| o.len()), Some(1), "{one}");
    assert_eq!(one[&addr1]["shardId"], "1", "{one}");

    // updateBrokerConfig -b NAME: the broker says what applied and what waits for a restart.
    let out = ok(
        &cluster,
        &[
            "updateBrokerConfig",
            "-b",
            "broker-a",
            "-k",
            "defaultTopicQueueNums",
            "-v",
            "3",
        ],
    );
    assert!(
        out.contains(&format!("update broker config success, {addr0}\n"))
            && out.contains("takes effect after restart: defaultTopicQueueNums (in force: 4)"),
        "{out}"
    );
    let config = ok(&cluster, &["getBrokerConfig", "-b", "broker-a"]);
    for addr in [&addr0, &addr1] {
        assert!(
            config.contains(&format!("============{addr}============")),
            "{config}"
        );
    }
    let marked = config
        .lines()
        .filter(|l| {
            l.starts_with("defaultTopicQueueNums ") && l.ends_with("=  4  (pending restart: 3)")
        })
        .count();
    assert_eq!(marked, 2, "{config}");
    let json = cluster.mqadmin_json(&["getBrokerConfig", "-b", &addr1]);
    assert_eq!(json[&addr1]["pendingRestart"]["defaultTopicQueueNums"], "3");
    assert_eq!(json[&addr1]["defaultTopicQueueNums"], "4");
    // Back to the value in force: nothing pending.
    ok(
        &cluster,
        &[
            "updateBrokerConfig",
            "-b",
            &addr1,
            "-k",
            "defaultTopicQueueNums",
            "-v",
            "4",
        ],
    );
    let config = ok(&cluster, &["getBrokerConfig", "-b", &addr0]);
    assert!(!config.contains("pending restart"), "{config}");

    // Names no broker has: refused, saying so.
    for name in ["broker", "broker-b"] {
        let (success, _, err) = cluster.mqadmin(&["brokerStatus", "-b", name]);
        assert!(
            !success && err.contains(&format!("no broker named {name}")),
            "{name}: {err}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(600),
        "took {:?}",
        started.elapsed()
    );
}

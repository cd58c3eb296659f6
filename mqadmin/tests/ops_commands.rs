//! The operators' commands added beside the first set, run as the `mqadmin` binary against a real
//! cluster of two shard-brokers (`broker-a-0`, `broker-a-1`, one process) started by
//! `deploy/local-cluster.sh`: topicClusterList, updateTopicPerm (then the route's perm),
//! allocateMQ, checkMsgSendRT and sendMsgStatus (their successful sends), printMsgByQueue (the
//! messages sent, counted by tag), getConsumerConfig, skipAccumulatedMessage (the lag to 0),
//! updateTopicList, exportMetadata / exportConfigs / exportMetrics (their files parsed and read),
//! cleanBrokerMetadata's refusals. Each check reads what the command printed or wrote.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{commit_offsets, LocalCluster};
use serde_json::Value;

const TOPIC: &str = "OpsTopic";
const TYPED: &str = "OpsTypedTopic";
const PRINT_TOPIC: &str = "OpsPrintTopic";
const LIST_TOPIC: &str = "OpsListTopic";
const GROUP: &str = "OpsGroup";
const CLUSTER: &str = "DefaultCluster";

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `mqadmin args` must succeed; its stdout.
fn ok(cluster: &LocalCluster, args: &[&str]) -> String {
    let (success, out, err) = cluster.mqadmin(args);
    assert!(success, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

/// (broker name, perm, read queues) of each queue data of a topic's route.
fn route_queues(cluster: &LocalCluster, topic: &str) -> Vec<(String, i64, i64)> {
    let (success, out, _) = cluster.mqadmin(&["topicRoute", "-t", topic, "--json"]);
    if !success {
        return Vec::new();
    }
    let route: Value = serde_json::from_str(&out).unwrap();
    let mut queues: Vec<(String, i64, i64)> = route["queueDatas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["brokerName"].as_str().unwrap().to_owned(),
                q["perm"].as_i64().unwrap(),
                q["readQueueNums"].as_i64().unwrap(),
            )
        })
        .collect();
    queues.sort();
    queues
}

fn perms(cluster: &LocalCluster, topic: &str) -> Vec<i64> {
    route_queues(cluster, topic).iter().map(|q| q.1).collect()
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// The sum of `diffTotal` consumerProgress prints for GROUP on TOPIC.
fn lag(cluster: &LocalCluster) -> i64 {
    let progress = cluster.mqadmin_json(&["consumerProgress", "-g", GROUP, "-t", TOPIC]);
    progress["diffTotal"].as_i64().unwrap()
}

#[test]
fn operator_commands_against_shard_brokers() {
    let test_start = Instant::now();
    let cluster = LocalCluster::up_with_routing("single-node", "direct");
    let addr0 = cluster.broker_addr(0);
    let export_dir = tempfile::tempdir().unwrap();
    let dir = |name: &str| export_dir.path().join(name).display().to_string();

    for (topic, attrs) in [
        (TOPIC, None),
        (PRINT_TOPIC, None),
        (TYPED, Some("+message.type=FIFO")),
    ] {
        let mut args = vec![
            "updateTopic",
            "-c",
            CLUSTER,
            "-t",
            topic,
            "-r",
            "2",
            "-w",
            "2",
        ];
        if let Some(a) = attrs {
            args.extend(["-a", a]);
        }
        ok(&cluster, &args);
    }
    for topic in [TOPIC, PRINT_TOPIC, TYPED] {
        wait_for(
            "routes of both shard-brokers",
            Duration::from_secs(60),
            || route_queues(&cluster, topic).len() == 2,
        );
    }

    // topicClusterList: the cluster, one line.
    let out = ok(&cluster, &["topicClusterList", "-t", TOPIC]);
    assert_eq!(out.trim(), CLUSTER, "{out}");

    // updateTopicPerm: the cluster read-only, then broker-a-0 back to read-write.
    let out = ok(
        &cluster,
        &["updateTopicPerm", "-c", CLUSTER, "-t", TOPIC, "-p", "4"],
    );
    assert_eq!(
        out.lines()
            .filter(
                |l| l.starts_with("update topic perm from 6 to 4 in ") && l.ends_with(" success.")
            )
            .count(),
        2,
        "{out}"
    );
    wait_for("perm 4 in the route", Duration::from_secs(60), || {
        perms(&cluster, TOPIC) == [4, 4]
    });
    let out = ok(
        &cluster,
        &["updateTopicPerm", "-b", &addr0, "-t", TOPIC, "-p", "6"],
    );
    assert!(
        out.contains(&format!(
            "update topic perm from 4 to 6 in {addr0} success."
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "TopicConfig [topicName=OpsTopic, readQueueNums=2, writeQueueNums=2, perm=RW-"
        ),
        "{out}"
    );
    // The topic table is the process's: a change through one shard-broker reaches both.
    wait_for("perm 6 again", Duration::from_secs(60), || {
        perms(&cluster, TOPIC) == [6, 6]
    });
    let out = ok(
        &cluster,
        &["updateTopicPerm", "-b", &addr0, "-t", TOPIC, "-p", "6"],
    );
    assert!(out.contains("new perm equals to the old one!"), "{out}");
    let (success, _, err) =
        cluster.mqadmin(&["updateTopicPerm", "-c", CLUSTER, "-t", TOPIC, "-p", "5"]);
    assert!(!success && err.contains("perm 5"), "{err}");

    // allocateMQ: two clients share the 4 queues, 2 each, none twice.
    let out = ok(
        &cluster,
        &["allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"],
    );
    let allocation: Value = serde_json::from_str(out.trim()).unwrap();
    let mut all = Vec::new();
    for ip in ["10.0.0.1", "10.0.0.2"] {
        let queues = allocation["result"][ip].as_array().unwrap();
        assert_eq!(queues.len(), 2, "{out}");
        for q in queues {
            assert_eq!(q["topic"], TOPIC);
            all.push((
                q["brokerName"].as_str().unwrap().to_owned(),
                q["queueId"].as_i64().unwrap(),
            ));
        }
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 4, "{out}");

    // checkMsgSendRT: 8 sends over the 4 queues (2 each), all successful.
    let out = ok(
        &cluster,
        &["checkMsgSendRT", "-t", TOPIC, "-a", "8", "-s", "64"],
    );
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("broker-a-")).collect();
    assert_eq!(rows.len(), 8, "{out}");
    assert!(
        rows.iter()
            .all(|r| r.split_whitespace().nth(2) == Some("true")),
        "{out}"
    );
    assert!(
        out.lines().next().unwrap().starts_with("#Broker Name"),
        "{out}"
    );
    assert!(out.lines().last().unwrap().starts_with("Avg RT: "), "{out}");
    let json = cluster.mqadmin_json(&["checkMsgSendRT", "-t", TYPED, "-a", "3"]);
    assert_eq!(json["successCount"], 3, "{json}");

    // sendMsgStatus: timed sends to broker-a-0's own topic.
    let out = ok(
        &cluster,
        &["sendMsgStatus", "-b", "broker-a-0", "-c", "5", "-s", "20"],
    );
    let sends: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("rt=") && l.contains("SendResult=SendResult [sendStatus=SEND_OK"))
        .collect();
    assert_eq!(sends.len(), 5, "{out}");
    assert!(
        sends.iter().all(|l| l.contains("brokerName=broker-a-0")),
        "{out}"
    );

    // printMsgByQueue: 3 TagA and 2 TagB messages in broker-a-0's queue 0.
    for (i, tag) in ["TagA", "TagB", "TagA", "TagB", "TagA"].iter().enumerate() {
        let body = format!("print-{i}");
        ok(
            &cluster,
            &[
                "sendMessage",
                "-t",
                PRINT_TOPIC,
                "-p",
                &body,
                "-c",
                tag,
                "-b",
                "broker-a-0",
                "-i",
                "0",
            ],
        );
    }
    let out = ok(
        &cluster,
        &[
            "printMsgByQueue",
            "-t",
            PRINT_TOPIC,
            "-a",
            "broker-a-0",
            "-i",
            "0",
            "-p",
            "true",
            "-d",
            "true",
            "-f",
            "true",
        ],
    );
    for i in 0..5 {
        assert!(
            out.lines()
                .any(|l| l.starts_with("MSGID: ") && l.ends_with(&format!("BODY: print-{i}"))),
            "print-{i}: {out}"
        );
    }
    let tags: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("Tag: "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        tags,
        [
            vec!["Tag:", "TagA", "Count:", "3"],
            vec!["Tag:", "TagB", "Count:", "2"]
        ],
        "{out}"
    );
    let only_b = cluster.mqadmin_json(&[
        "printMsgByQueue",
        "-t",
        PRINT_TOPIC,
        "-a",
        "broker-a-0",
        "-i",
        "0",
        "-s",
        "TagB",
    ]);
    let bodies: Vec<&str> = only_b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["print-1", "print-3"], "{only_b}");

    // getConsumerConfig: the group's settings from each shard-broker.
    ok(
        &cluster,
        &["updateSubGroup", "-c", CLUSTER, "-g", GROUP, "-r", "5"],
    );
    let out = ok(&cluster, &["getConsumerConfig", "-g", GROUP]);
    for broker in ["broker-a-0", "broker-a-1"] {
        assert!(
            out.contains(&format!(
                "============================={CLUSTER}:{broker}============================="
            )),
            "{out}"
        );
    }
    let field = |name: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split("=  ").nth(1).unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(field("groupName"), [GROUP, GROUP], "{out}");
    assert_eq!(field("retryMaxTimes"), ["5", "5"], "{out}");
    assert!(ok(&cluster, &["getConsumerConfig", "-g", "NoSuchOpsGroup"])
        .trim()
        .is_empty());

    // skipAccumulatedMessage: the 8 messages of TOPIC (2 a queue) were backlog; then none.
    let queues: Vec<(client::MessageQueue, i64)> = ["broker-a-0", "broker-a-1"]
        .iter()
        .flat_map(|b| {
            (0..2).map(|q| {
                (
                    client::MessageQueue {
                        topic: TOPIC.into(),
                        broker_name: (*b).into(),
                        queue_id: q,
                    },
                    0,
                )
            })
        })
        .collect();
    commit_offsets(&cluster.namesrv_addr(), GROUP, &queues);
    assert_eq!(lag(&cluster), 8);
    let out = ok(
        &cluster,
        &["skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC],
    );
    assert!(out.starts_with("#brokerName"), "{out}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(rows.iter().all(|r| r.get(2) == Some(&"2")), "{out}");
    assert_eq!(lag(&cluster), 0);

    // updateTopicList: a new topic with 3 queues on both shard-brokers.
    let list = export_dir.path().join("topics.json");
    std::fs::write(
        &list,
        format!(
            r#"[{{"topicName":"{LIST_TOPIC}","readQueueNums":3,"writeQueueNums":3,"perm":6}}]"#
        ),
    )
    .unwrap();
    let out = ok(
        &cluster,
        &[
            "updateTopicList",
            "-c",
            CLUSTER,
            "-f",
            list.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("submit batch of topic config to ")
                && l.ends_with("please check the result later."))
            .count(),
        2,
        "{out}"
    );
    wait_for("the listed topic's route", Duration::from_secs(60), || {
        route_queues(&cluster, LIST_TOPIC)
            .iter()
            .map(|q| q.2)
            .collect::<Vec<_>>()
            == [3, 3]
    });

    // A perm change keeps the topic's attributes (checked in the export below).
    ok(
        &cluster,
        &["updateTopicPerm", "-c", CLUSTER, "-t", TYPED, "-p", "6"],
    );

    // The group's retry topic: left out of exports unless -s.
    let retry = format!("%RETRY%{GROUP}");
    ok(
        &cluster,
        &[
            "updateTopic",
            "-c",
            CLUSTER,
            "-t",
            &retry,
            "-r",
            "1",
            "-w",
            "1",
        ],
    );

    // exportMetadata -c: topics with their attributes (queues summed over the shard-brokers), the
    // group, and its offsets (at the end of each queue after the skip).
    let out = ok(
        &cluster,
        &["exportMetadata", "-c", CLUSTER, "-f", &dir("cluster")],
    );
    let path = export_dir.path().join("cluster/metadata.json");
    assert!(
        out.contains(&format!("export {} success", path.display())),
        "{out}"
    );
    let meta = read_json(&path);
    let typed = &meta["topicConfigTable"][TYPED];
    assert_eq!(typed["attributes"]["message.type"], "FIFO", "{meta}");
    assert_eq!(typed["readQueueNums"], 4, "{meta}");
    assert_eq!(
        meta["topicConfigTable"][LIST_TOPIC]["writeQueueNums"], 6,
        "{meta}"
    );
    assert!(meta["topicConfigTable"].get("TBW102").is_none(), "{meta}");
    assert!(
        meta["topicConfigTable"].get("broker-a-0").is_none(),
        "{meta}"
    );
    assert!(meta["topicConfigTable"].get(&retry).is_none(), "{meta}");
    assert_eq!(
        meta["subscriptionGroupTable"][GROUP]["groupName"], GROUP,
        "{meta}"
    );
    assert_eq!(
        meta["subscriptionGroupTable"][GROUP]["retryMaxTimes"], 5,
        "{meta}"
    );
    assert!(meta["subscriptionGroupTable"]
        .get("TOOLS_CONSUMER")
        .is_none());
    for broker in ["broker-a-0", "broker-a-1"] {
        let offsets = &meta["consumerOffsetTable"][broker][format!("{TOPIC}@{GROUP}")];
        assert_eq!(offsets["0"], 2, "{broker}: {meta}");
        assert_eq!(offsets["1"], 2, "{broker}: {meta}");
    }
    assert!(meta["exportTime"].as_i64().unwrap() > 0);

    // exportMetadata -b: only topics (with -s the retry topic too), only groups.
    ok(
        &cluster,
        &["exportMetadata", "-b", &addr0, "-t", "-s", "-f", &dir("b")],
    );
    let topics = read_json(&export_dir.path().join("b/topic.json"));
    assert_eq!(
        topics["topicConfigTable"][TOPIC]["readQueueNums"], 2,
        "{topics}"
    );
    assert!(topics["topicConfigTable"].get(&retry).is_some(), "{topics}");
    ok(
        &cluster,
        &["exportMetadata", "-b", &addr0, "-g", "-f", &dir("b")],
    );
    let groups = read_json(&export_dir.path().join("b/subscriptionGroup.json"));
    assert_eq!(
        groups["subscriptionGroupTable"][GROUP]["retryMaxTimes"], 5,
        "{groups}"
    );

    // exportConfigs: Apache's broker keys and the cluster's scale, and every config beside them.
    ok(
        &cluster,
        &["exportConfigs", "-c", CLUSTER, "-f", &dir("configs")],
    );
    let configs = read_json(&export_dir.path().join("configs/configs.json"));
    let brokers = configs["brokerConfigs"].as_object().unwrap();
    assert!(!brokers.is_empty(), "{configs}");
    for config in brokers.values() {
        assert_eq!(config["brokerClusterName"], CLUSTER, "{configs}");
        assert!(config["flushDiskType"].is_string(), "{configs}");
        assert!(config["brokerName"].is_string(), "{configs}");
        assert!(
            config.as_object().unwrap().len() <= 16,
            "only Apache's keys: {configs}"
        );
    }
    assert_eq!(configs["clusterScale"]["namesrvSize"], 2, "{configs}");
    assert_eq!(configs["clusterScale"]["masterBrokerSize"], 2, "{configs}");
    assert_eq!(configs["clusterScale"]["slaveBrokerSize"], 0, "{configs}");
    assert_eq!(
        configs["brokerConfigsByAddr"][&addr0]["brokerClusterName"], CLUSTER,
        "{configs}"
    );
    assert_eq!(
        configs["namesrvConfigs"].as_object().unwrap().len(),
        2,
        "{configs}"
    );

    // exportMetrics: a report per shard-broker with its topics and groups counted.
    ok(
        &cluster,
        &["exportMetrics", "-c", CLUSTER, "-f", &dir("metrics")],
    );
    let metrics = read_json(&export_dir.path().join("metrics/metrics.json"));
    for broker in ["broker-a-0", "broker-a-1"] {
        let quota = &metrics["evaluateReport"][broker]["runtimeQuota"];
        assert!(quota["topicSize"].as_i64().unwrap() >= 4, "{metrics}");
        assert!(quota["groupSize"].as_i64().unwrap() >= 1, "{metrics}");
    }
    assert!(
        metrics["totalData"]["totalTps"]["totalNormalInTps"].is_number(),
        "{metrics}"
    );

    // cleanBrokerMetadata: refused before any request without a cluster (unless -l) or with bad
    // ids; a controller that is not there is an error.
    let (success, _, err) = cluster.mqadmin(&[
        "cleanBrokerMetadata",
        "-a",
        "127.0.0.1:1",
        "-bn",
        "broker-a",
    ]);
    assert!(
        !success && err.contains("clusterName option can not be empty"),
        "{err}"
    );
    let (success, _, err) = cluster.mqadmin(&[
        "cleanBrokerMetadata",
        "-a",
        "127.0.0.1:1",
        "-bn",
        "broker-a",
        "-c",
        CLUSTER,
        "-b",
        "1;x",
    ]);
    assert!(
        !success && err.contains("brokerControllerIdsToClean"),
        "{err}"
    );

    println!("operator commands checked in {:?}", test_start.elapsed());
}

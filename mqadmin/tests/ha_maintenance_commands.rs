//! Our mqadmin's HA and maintenance commands as the `mqadmin` binary against a real 2m-2s-async
//! cluster (deploy/local-cluster.sh, each broker one name over two shards): haStatus on masters and
//! slaves (one line per shard stream), getBrokerEpoch (refused outside controller mode),
//! resetMasterFlushOffset, queryCq, updateSubGroupList, cleanExpiredCQ, deleteExpiredCommitLog,
//! cleanUnusedTopic, exportPopRecord and setConsumeMode (refused with the broker's reason), each
//! checked by the lines or the JSON it prints.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::LocalCluster;

const TOPIC: &str = "HaMaintTopic";
const CLUSTER: &str = "DefaultCluster";

fn ok(cluster: &LocalCluster, args: &[&str]) -> String {
    let (success, out, err) = cluster.mqadmin(args);
    assert!(success, "mqadmin {args:?} failed: {err}\n{out}");
    out
}

#[test]
fn ha_and_maintenance_commands_on_a_two_master_two_slave_cluster() {
    let cluster = LocalCluster::up("2m-2s-async");
    let master = cluster.broker_addr(0);
    let slave = cluster.broker_addr(1);
    ok(
        &cluster,
        &[
            "updateTopic",
            "-c",
            CLUSTER,
            "-t",
            TOPIC,
            "-r",
            "2",
            "-w",
            "2",
        ],
    );
    for (body, tag) in [("b0", "TagA"), ("b1", "TagB"), ("b2", "TagA")] {
        ok(
            &cluster,
            &[
                "sendMessage",
                "-t",
                TOPIC,
                "-p",
                body,
                "-c",
                tag,
                "-b",
                "broker-a",
                "-i",
                "0",
            ],
        );
    }

    // haStatus of broker-a's master: both shard streams' slaves, in sync once caught up.
    let deadline = Instant::now() + Duration::from_secs(60);
    let info = loop {
        let v = cluster.mqadmin_json(&["haStatus", "-b", &master]);
        let info = v[0]["haRuntimeInfo"].clone();
        let conns = info["haConnectionInfo"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if conns.len() == 2 && conns.iter().all(|c| c["diff"] == 0) {
            break info;
        }
        assert!(Instant::now() < deadline, "slaves not caught up: {v}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(info["master"], true);
    assert_eq!(info["inSyncSlaveNums"], 2);
    let out = ok(&cluster, &["haStatus", "-b", &master]);
    assert!(out.contains(&format!("#MasterAddr\t{master}")), "{out}");
    assert!(
        out.contains("#SlaveNum\t2") && out.contains("#InSyncSlaveNum\t2"),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(" OK ")).count(),
        2,
        "{out}"
    );
    let out = ok(&cluster, &["haStatus", "-c", CLUSTER]);
    assert_eq!(
        out.matches("#SlaveNum\t2").count(),
        2,
        "both masters: {out}"
    );

    // The slave: its master and the flush offset an admin set.
    let out = ok(
        &cluster,
        &["resetMasterFlushOffset", "-b", &slave, "-o", "99"],
    );
    assert_eq!(out.trim(), "reset master flush offset to 99 success");
    let out = ok(&cluster, &["haStatus", "-b", &slave]);
    for needle in [
        "#MasterAddr\t127.0.0.1:",
        "#CommitLogMaxOffset\t",
        "#LastReadTime\t",
        "#MasterFlushOffset\t99",
    ] {
        assert!(out.contains(needle), "no {needle:?}: {out}");
    }
    let (success, _, err) = cluster.mqadmin(&["haStatus", "-b", &slave, "-i", "3"]);
    assert!(!success && err.contains("watch"), "-i is refused: {err}");

    let (success, _, err) = cluster.mqadmin(&["getBrokerEpoch", "-b", "broker-a"]);
    assert!(
        !success && err.contains("this request only for controllerMode"),
        "getBrokerEpoch outside controller mode: {err}"
    );

    // queryCq: the three units of broker-a's queue 0.
    let out = ok(
        &cluster,
        &["queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-b", &master],
    );
    assert!(out.contains("max: 3, min: 0"), "{out}");
    assert_eq!(
        out.matches("ConsumeQueueData{physicOffset=").count(),
        3,
        "{out}"
    );
    assert!(out.contains("idx: 2"), "{out}");
    let v = cluster.mqadmin_json(&[
        "queryCq", "-t", TOPIC, "-q", "0", "-i", "1", "-c", "1", "-b", &master,
    ]);
    assert_eq!(
        v["body"]["queueData"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );

    // updateSubGroupList on every master of the cluster.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("groups.json");
    std::fs::write(
        &file,
        r#"[{"groupName":"BulkG1","retryMaxTimes":4},{"groupName":"BulkG2"}]"#,
    )
    .unwrap();
    let out = ok(
        &cluster,
        &[
            "updateSubGroupList",
            "-c",
            CLUSTER,
            "-f",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.matches("submit batch of subscription group config to")
            .count(),
        2,
        "{out}"
    );
    let (success, _, err) =
        cluster.mqadmin(&["updateSubGroupList", "-b", &master, "-f", "/no/such/file"]);
    assert!(!success && err.contains("/no/such/file"), "{err}");
    std::fs::write(&file, r#"[{"groupName":"bad name"}]"#).unwrap();
    let (success, _, err) = cluster.mqadmin(&[
        "updateSubGroupList",
        "-b",
        &master,
        "-f",
        file.to_str().unwrap(),
    ]);
    assert!(!success && err.contains("illegal characters"), "{err}");

    for cmd in [
        "cleanExpiredCQ",
        "deleteExpiredCommitLog",
        "cleanUnusedTopic",
    ] {
        assert_eq!(ok(&cluster, &[cmd, "-b", &master]).trim(), "success");
        assert_eq!(ok(&cluster, &[cmd, "-c", CLUSTER]).trim(), "success");
        let v = cluster.mqadmin_json(&[cmd]);
        assert_eq!(
            v.as_array().map(Vec::len),
            Some(4),
            "every broker of every cluster: {v}"
        );
    }

    let out = ok(&cluster, &["exportPopRecord", "-b", &master]);
    assert_eq!(
        out.trim(),
        format!("Export broker records, brokerName=broker-a, brokerAddr={master}, dryRun=false")
    );
    let (success, _, err) = cluster.mqadmin(&[
        "setConsumeMode",
        "-b",
        &master,
        "-t",
        TOPIC,
        "-g",
        "BulkG1",
        "-m",
        "POP",
    ]);
    assert!(!success && err.contains("QUERY_ASSIGNMENT"), "{err}");
}

//! Apache RocketMQ 4.9.8's own `mqadmin` (from Maven Central through tests/apache/; skipped, with a
//! message, when Maven or Java cannot provide it) and ours, side by side on one cluster of two
//! shard-brokers started by `deploy/local-cluster.sh`, for the operators' commands both have:
//! topicClusterList, getConsumerConfig, checkMsgSendRT, sendMsgStatus, printMsgByQueue and
//! skipAccumulatedMessage print the same figures.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{run_with_timeout, LocalCluster};

const SET: &str = "rocketmq-4.9.8";
const TOPIC: &str = "ApacheOpsTopic";
const GROUP: &str = "ApacheOpsGroup";
const CLUSTER: &str = "DefaultCluster";

/// Apache's mqadmin launcher, or None (said loudly) when it cannot be set up.
fn apache_mqadmin() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apache");
    let mut setup = Command::new(dir.join("setup.sh"));
    setup.arg(SET);
    let out = run_with_timeout(setup, Duration::from_secs(300));
    if !out.status.success() {
        println!(
            "SKIPPED: Apache's mqadmin {SET} is unavailable (tests/apache/setup.sh {SET}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(dir.join("mqadmin.sh"))
}

struct Both<'a> {
    cluster: &'a LocalCluster,
    apache: PathBuf,
    namesrv: String,
}

impl Both<'_> {
    /// (ours, Apache's) stdout of one command.
    fn run(&self, args: &[&str]) -> (String, String) {
        let (ok, ours, err) = self.cluster.mqadmin(args);
        assert!(ok, "our mqadmin {args:?}: {err}\n{ours}");
        println!("---- {args:?} ours:\n{ours}");
        (ours, self.apache_only(args))
    }

    /// Apache's stdout of a command ours runs differently.
    fn apache_only(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(&self.apache);
        cmd.arg(SET).args(args).args(["-n", &self.namesrv]);
        let out = run_with_timeout(cmd, Duration::from_secs(120));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        println!(
            "---- {args:?} Apache's:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Lines starting with `prefix`.
fn count(text: &str, prefix: &str) -> usize {
    text.lines().filter(|l| l.starts_with(prefix)).count()
}

/// `field = value` lines of getConsumerConfig, as (field, value), sorted.
fn config_fields(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once("=  "))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    out.sort();
    out
}

#[test]
fn apache_and_our_mqadmin_agree() {
    let Some(apache) = apache_mqadmin() else {
        return;
    };
    let cluster = LocalCluster::up_with_routing("single-node", "direct");
    let namesrv = cluster.namesrv_addr().split(';').next().unwrap().to_owned();
    let both = Both {
        cluster: &cluster,
        apache,
        namesrv,
    };
    let (ok, out, err) = cluster.mqadmin(&[
        "updateTopic",
        "-c",
        CLUSTER,
        "-t",
        TOPIC,
        "-r",
        "2",
        "-w",
        "2",
    ]);
    assert!(ok, "{err}\n{out}");
    let (ok, out, err) =
        cluster.mqadmin(&["updateSubGroup", "-c", CLUSTER, "-g", GROUP, "-r", "3"]);
    assert!(ok, "{err}\n{out}");
    wait_for("the route", Duration::from_secs(60), || {
        let (ok, out, _) = cluster.mqadmin(&["topicRoute", "-t", TOPIC, "--json"]);
        ok && out.contains("broker-a-0") && out.contains("broker-a-1")
    });

    let (ours, theirs) = both.run(&["topicClusterList", "-t", TOPIC]);
    assert_eq!(ours.trim(), CLUSTER);
    assert_eq!(theirs.trim(), CLUSTER);

    // Apache 4.9.8 prints the fields its SubscriptionGroupConfig has; ours prints those too.
    let (ours, theirs) = both.run(&["getConsumerConfig", "-g", GROUP]);
    for block in ["broker-a-0", "broker-a-1"] {
        let title =
            format!("============================={CLUSTER}:{block}=============================");
        assert!(ours.contains(&title) && theirs.contains(&title), "{title}");
    }
    let ours_fields = config_fields(&ours);
    let theirs_fields = config_fields(&theirs);
    assert!(
        theirs_fields.contains(&("retryMaxTimes".into(), "3".into())),
        "{theirs}"
    );
    for field in &theirs_fields {
        assert!(
            ours_fields.contains(field),
            "{field:?} missing from ours: {ours}"
        );
    }

    // 4 sends each (one per queue), all successful in both.
    let (ours, theirs) = both.run(&["checkMsgSendRT", "-t", TOPIC, "-a", "4"]);
    for text in [&ours, &theirs] {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("broker-a-"))
            .collect();
        assert_eq!(rows.len(), 4, "{text}");
        assert!(
            rows.iter()
                .all(|r| r.split_whitespace().nth(2) == Some("true")),
            "{text}"
        );
        assert_eq!(count(text, "Avg RT: "), 1, "{text}");
    }

    let (ours, theirs) = both.run(&["sendMsgStatus", "-b", "broker-a-0", "-c", "3"]);
    for text in [&ours, &theirs] {
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("rt=")
                    && l.contains("sendStatus=SEND_OK")
                    && l.contains("brokerName=broker-a-0"))
                .count(),
            3,
            "{text}"
        );
    }

    // Queue 0 of broker-a-0 got 2 of the 8 sends (4 from each tool).
    let (ours, theirs) = both.run(&[
        "printMsgByQueue",
        "-t",
        TOPIC,
        "-a",
        "broker-a-0",
        "-i",
        "0",
        "-p",
        "true",
    ]);
    assert_eq!(count(&ours, "MSGID: "), 2, "{ours}");
    assert_eq!(count(&theirs, "MSGID: "), 2, "{theirs}");

    // Both skip to the end of every queue: 2 messages in each of the 4.
    let (ours, theirs) = both.run(&["skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC]);
    for text in [&ours, &theirs] {
        let rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| l.starts_with("broker-a-"))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 4, "{text}");
        assert!(rows.iter().all(|r| r.get(2) == Some(&"2")), "{text}");
    }
    let progress = cluster.mqadmin_json(&["consumerProgress", "-g", GROUP, "-t", TOPIC]);
    assert_eq!(progress["diffTotal"], 0, "{progress}");

    // Apache's exports against our brokers: user topics only (GET_SYSTEM_TOPIC_LIST_FROM_BROKER
    // names the rest), queue counts summed over the shard-brokers, the group; the configs file
    // with the keys Apache 4.9.8 reads from every master's GET_BROKER_CONFIG.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let theirs = both.apache_only(&["exportMetadata", "-c", CLUSTER, "-f", path]);
    assert!(theirs.contains("success"), "{theirs}");
    let metadata = read_json(&dir.path().join("metadata.json"));
    let topics = metadata["topicConfigTable"].as_object().unwrap();
    assert_eq!(topics[TOPIC]["writeQueueNums"], 4, "{metadata}");
    for system in [
        "broker-a-0",
        "broker-a-1",
        CLUSTER,
        "SCHEDULE_TOPIC_XXXX",
        "TBW102",
    ] {
        assert!(
            !topics.contains_key(system),
            "{system} exported: {metadata}"
        );
    }
    assert!(
        metadata["subscriptionGroupTable"].get(GROUP).is_some(),
        "{metadata}"
    );
    let theirs = both.apache_only(&["exportConfigs", "-c", CLUSTER, "-f", path]);
    assert!(theirs.contains("success"), "{theirs}");
    let configs = read_json(&dir.path().join("configs.json"));
    let brokers = configs["brokerConfigs"].as_object().unwrap();
    assert!(!brokers.is_empty(), "{configs}");
    for (_, props) in brokers {
        for key in [
            "brokerClusterName",
            "maxMessageSize",
            "useTLS",
            "filterServerNums",
        ] {
            assert!(props.get(key).is_some(), "{key} missing: {configs}");
        }
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

//! End to end on a real cluster started by `deploy/local-cluster.sh` (real namesrv and broker
//! processes): a client produces and consumes across both broker groups, `mqadmin` shows the route,
//! offsets and consumer lag, messages are found by id / key / offset, offsets reset, groups update,
//! the topic is deleted, and each broker's /metrics endpoint moves under the load.
//!
//! Layout: `LOCAL_CLUSTER_LAYOUT` (default 2m-2s-sync; 2m-noslave also works).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use client::{
    BrokerConnections, Message, NameServer, Producer, ProducerConfig, PullConsumer, SendResult,
};
use common::{
    commit_offsets, http_get, layout_brokers, metric_sum, pull_to_end, run_local, LocalCluster,
};
use serde_json::Value;

const TOPIC: &str = "OpsTopic";
const GROUP: &str = "OpsGroup";
const MESSAGES: usize = 64;

fn layout() -> String {
    std::env::var("LOCAL_CLUSTER_LAYOUT").unwrap_or_else(|_| "2m-2s-sync".into())
}

fn produce(namesrv: &str) -> Vec<(String, SendResult)> {
    run_local(async {
        let ns = NameServer::from_list(namesrv, Duration::from_secs(10)).unwrap();
        let producer = Producer::new(
            ns,
            ProducerConfig {
                send_timeout: Duration::from_secs(10),
                ..ProducerConfig::default()
            },
        );
        let mut sent = Vec::new();
        for i in 0..MESSAGES {
            let body = format!("ops message {i}");
            let msg = Message::new(TOPIC, body.clone().into_bytes())
                .with_keys(&format!("ops-key-{i}"))
                .with_tags("TagA");
            let result = producer
                .send(&msg)
                .await
                .unwrap_or_else(|e| panic!("send {i}: {e}"));
            sent.push((body, result));
        }
        sent
    })
}

/// Pulls every queue from 0 to its end; returns bodies and each queue's next offset.
fn consume_all(namesrv: &str) -> (Vec<String>, BTreeMap<(String, i32), i64>) {
    let mut bodies = Vec::new();
    let mut ends = BTreeMap::new();
    for (queue, end, found) in pull_to_end(namesrv, GROUP, TOPIC) {
        bodies.extend(found);
        ends.insert((queue.broker_name, queue.queue_id), end);
    }
    (bodies, ends)
}

fn commit(namesrv: &str, offsets: &BTreeMap<(String, i32), i64>) {
    let offsets: Vec<(client::MessageQueue, i64)> = offsets
        .iter()
        .map(|((broker, queue_id), offset)| {
            let queue = client::MessageQueue {
                topic: TOPIC.into(),
                broker_name: broker.clone(),
                queue_id: *queue_id,
            };
            (queue, *offset)
        })
        .collect();
    commit_offsets(namesrv, GROUP, &offsets);
}

fn rows(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
}

fn scrape(cluster: &LocalCluster, n: usize) -> String {
    let (status, body) = http_get(&cluster.metrics_addr(n), "/metrics");
    assert!(status.contains("200"), "{status}");
    body
}

#[test]
fn local_cluster_mqadmin_and_metrics() {
    let layout = layout();
    let cluster = LocalCluster::up(&layout);
    let brokers = layout_brokers(&layout);
    let index_of = |name: &str| brokers.iter().position(|(b, _)| *b == name).unwrap();
    let (a, b) = (index_of("broker-a"), index_of("broker-b"));
    let status = cluster.status();
    assert_eq!(
        status.matches(" running ").count(),
        brokers.len() + 2,
        "{status}"
    );
    let ns = cluster.namesrv_addr();

    // updateTopic on every master of the cluster, then the route names both groups.
    let created = cluster.mqadmin_json(&[
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        TOPIC,
        "-r",
        "4",
        "-w",
        "4",
    ]);
    assert_eq!(rows(&created, "brokers").len(), 2, "{created}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let route = loop {
        let (ok, out, _) = cluster.mqadmin(&["topicRoute", "-t", TOPIC, "--json"]);
        if ok {
            let v: Value = serde_json::from_str(&out).unwrap();
            if rows(&v, "queueDatas").len() == 2 {
                break v;
            }
        }
        assert!(
            Instant::now() < deadline,
            "topic route never showed both broker groups"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let mut seen = BTreeMap::new();
    for bd in rows(&route, "brokerDatas") {
        let name = bd["brokerName"].as_str().unwrap().to_owned();
        seen.insert(name, bd["brokerAddrs"].clone());
    }
    assert_eq!(
        seen["broker-a"]["0"],
        Value::String(cluster.broker_addr(a)),
        "{route}"
    );
    assert_eq!(
        seen["broker-b"]["0"],
        Value::String(cluster.broker_addr(b)),
        "{route}"
    );
    for (i, (name, master)) in brokers.iter().enumerate() {
        if !master {
            // A slave registers under its group's name with brokerId 1.
            let group = name.trim_end_matches("-s");
            assert_eq!(
                seen[group]["1"],
                Value::String(cluster.broker_addr(i)),
                "{route}"
            );
        }
    }
    for qd in rows(&route, "queueDatas") {
        assert_eq!(
            (qd["readQueueNums"].as_i64(), qd["writeQueueNums"].as_i64()),
            (Some(4), Some(4)),
            "{qd}"
        );
    }
    let (ok, table, _) = cluster.mqadmin(&["topicRoute", "-t", TOPIC]);
    assert!(
        ok && table.starts_with("#Broker Name") && table.contains(&cluster.broker_addr(a)),
        "{table}"
    );

    let before_a = scrape(&cluster, a);

    // A real client produces over both groups.
    let sent = produce(&ns);
    let mut per_queue: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for (_, r) in &sent {
        *per_queue
            .entry((r.queue.broker_name.clone(), r.queue.queue_id))
            .or_default() += 1;
    }
    let per_group = |g: &str| {
        per_queue
            .iter()
            .filter(|((b, _), _)| b == g)
            .map(|(_, n)| *n)
            .sum::<i64>()
    };
    assert!(
        per_group("broker-a") > 0 && per_group("broker-b") > 0,
        "{per_queue:?}"
    );

    // topicStatus: max offsets per queue are what was sent there.
    let status = cluster.mqadmin_json(&["topicStatus", "-t", TOPIC]);
    let queues = rows(&status, "queues");
    assert_eq!(queues.len(), 8, "{status}");
    for q in &queues {
        let key = (
            q["brokerName"].as_str().unwrap().to_owned(),
            q["queueId"].as_i64().unwrap() as i32,
        );
        assert_eq!(
            q["maxOffset"].as_i64(),
            Some(per_queue.get(&key).copied().unwrap_or(0)),
            "{q}"
        );
        assert_eq!(q["minOffset"].as_i64(), Some(0), "{q}");
    }

    // Consume everything from both groups; commit all but two messages of broker-b queue 0.
    let (bodies, ends) = consume_all(&ns);
    let got: BTreeSet<String> = bodies.iter().cloned().collect();
    let want: BTreeSet<String> = sent.iter().map(|(body, _)| body.clone()).collect();
    assert_eq!(bodies.len(), MESSAGES);
    assert_eq!(got, want);
    let mut committed = ends.clone();
    let b0 = ("broker-b".to_owned(), 0);
    let held_back = committed.get(&b0).copied().unwrap_or(0).min(2);
    if let Some(o) = committed.get_mut(&b0) {
        *o -= held_back;
    }
    commit(&ns, &committed);

    // consumerProgress: broker offset, consumer offset and lag per queue.
    let progress = cluster.mqadmin_json(&["consumerProgress", "-g", GROUP, "-t", TOPIC]);
    let prog_rows = rows(&progress, "queues");
    assert_eq!(prog_rows.len(), 8, "{progress}");
    for r in &prog_rows {
        let key = (
            r["brokerName"].as_str().unwrap().to_owned(),
            r["queueId"].as_i64().unwrap() as i32,
        );
        let max = per_queue.get(&key).copied().unwrap_or(0);
        assert_eq!(r["brokerOffset"].as_i64(), Some(max), "{r}");
        assert_eq!(
            r["consumerOffset"].as_i64(),
            committed.get(&key).copied(),
            "{r}"
        );
        assert_eq!(r["diff"].as_i64(), Some(max - committed[&key]), "{r}");
    }
    assert_eq!(
        progress["diffTotal"].as_i64(),
        Some(held_back),
        "{progress}"
    );
    let (ok, table, _) = cluster.mqadmin(&["consumerProgress", "-g", GROUP]);
    assert!(
        ok && table.contains(&format!("Diff Total: {held_back}")),
        "{table}"
    );

    // Metrics moved under the load, and the backlog is the held-back messages on broker-b.
    let after_a = scrape(&cluster, a);
    let put = |t: &str| metric_sum(t, "rocketmq_put_messages_total", &[]);
    assert_eq!(
        put(&after_a) - put(&before_a),
        per_group("broker-a") as f64,
        "{after_a}"
    );
    let lat = |t: &str| metric_sum(t, "rocketmq_put_latency_seconds_count", &[]);
    assert_eq!(lat(&after_a) - lat(&before_a), per_group("broker-a") as f64);
    assert!(
        metric_sum(
            &after_a,
            "rocketmq_put_latency_seconds_bucket",
            &["le=\"+Inf\""]
        ) >= per_group("broker-a") as f64
    );
    let pulled = |t: &str| metric_sum(t, "rocketmq_pull_messages_total", &[]);
    assert_eq!(
        pulled(&after_a) - pulled(&before_a),
        per_group("broker-a") as f64
    );
    // ASYNC_FLUSH flushes once flushCommitLogLeastPages pages are dirty or, for a load as small as
    // this one, at flushCommitLogThoroughInterval (10 s): the flush counters must move, but may
    // only do so up to that interval after the sends.
    let flushed = |t: &str| {
        metric_sum(t, "rocketmq_fdatasync_seconds_count", &[])
            > metric_sum(&before_a, "rocketmq_fdatasync_seconds_count", &[])
            && metric_sum(t, "rocketmq_group_commit_records_sum", &[])
                > metric_sum(&before_a, "rocketmq_group_commit_records_sum", &[])
    };
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut flushed_a = after_a.clone();
    while !flushed(&flushed_a) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        flushed_a = scrape(&cluster, a);
    }
    assert!(flushed(&flushed_a), "no flush within 25 s: {flushed_a}");
    assert!(
        metric_sum(&after_a, "rocketmq_connections_accepted_total", &[])
            > metric_sum(&before_a, "rocketmq_connections_accepted_total", &[])
    );
    assert!(
        metric_sum(&after_a, "rocketmq_store_commitlog_bytes", &[])
            > metric_sum(&before_a, "rocketmq_store_commitlog_bytes", &[])
    );
    assert!(metric_sum(&after_a, "rocketmq_store_disk_total_bytes", &[]) > 0.0);
    let backlog = &["topic=\"OpsTopic\"", "group=\"OpsGroup\""];
    assert_eq!(
        metric_sum(&after_a, "rocketmq_consumer_backlog_messages", backlog),
        0.0
    );
    let after_b = scrape(&cluster, b);
    assert_eq!(
        metric_sum(&after_b, "rocketmq_consumer_backlog_messages", backlog),
        held_back as f64,
        "{after_b}"
    );
    // The endpoint answers other paths with 404 and survives garbage and oversized requests.
    let (status404, _) = http_get(&cluster.metrics_addr(a), "/");
    assert!(status404.contains("404"), "{status404}");
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(cluster.metrics_addr(a)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = s.write_all(&vec![b'x'; 20_000]);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(
            rest.is_empty(),
            "an oversized head gets no answer, only a close"
        );
    }
    assert!(scrape(&cluster, a).contains("rocketmq_put_messages_total"));
    for family in [
        "rocketmq_pull_parked",
        "rocketmq_connections",
        "rocketmq_put_bytes_total",
        "rocketmq_group_commit_max_records",
        "rocketmq_fdatasync_max_seconds",
        "rocketmq_ha_slave_lag_bytes",
        "rocketmq_store_disk_used_ratio",
    ] {
        assert!(
            after_a.contains(&format!("# TYPE {family} ")),
            "{family} missing"
        );
    }

    // Replication (layouts with slaves): each master shard stream has its slave and the lag drains.
    if brokers.iter().any(|(_, master)| !master) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let m = scrape(&cluster, a);
            let slaves = metric_sum(&m, "rocketmq_ha_slaves", &[]);
            let lag = metric_sum(&m, "rocketmq_ha_slave_lag_bytes", &[]);
            if slaves == 2.0 && lag == 0.0 && m.contains("rocketmq_ha_slave_lag_bytes{") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replication never caught up: {m}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let slave = scrape(&cluster, index_of("broker-a-s"));
        assert_eq!(
            metric_sum(&slave, "rocketmq_ha_slave_connected", &[]),
            2.0,
            "{slave}"
        );
    }

    // Message lookups: by offsetMsgId, by client msgId (UNIQ_KEY) with the topic, by key, by offset.
    let (body, first) = &sent[5];
    let found = cluster.mqadmin_json(&["queryMsgById", "-i", &first.offset_msg_id]);
    assert_eq!(found[0]["body"].as_str(), Some(body.as_str()), "{found}");
    assert_eq!(found[0]["msgId"].as_str(), Some(first.msg_id.as_str()));
    let found = cluster.mqadmin_json(&["queryMsgById", "-t", TOPIC, "-i", &first.msg_id]);
    assert_eq!(
        found[0]["offsetMsgId"].as_str(),
        Some(first.offset_msg_id.as_str()),
        "{found}"
    );
    let found = cluster.mqadmin_json(&["queryMsgByKey", "-t", TOPIC, "-k", "ops-key-5"]);
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found[0]["body"].as_str(), Some(body.as_str()));
    let found = cluster.mqadmin_json(&[
        "queryMsgByOffset",
        "-t",
        TOPIC,
        "-b",
        &first.queue.broker_name,
        "-i",
        &first.queue.queue_id.to_string(),
        "-o",
        &first.queue_offset.to_string(),
    ]);
    assert_eq!(found[0]["body"].as_str(), Some(body.as_str()), "{found}");
    let (ok, _, err) = cluster.mqadmin(&[
        "queryMsgByOffset",
        "-t",
        TOPIC,
        "-b",
        "broker-a",
        "-i",
        "0",
        "-o",
        "100000",
    ]);
    assert!(!ok && err.contains("no message"), "{err}");

    // resetOffsetByTime to the beginning: the whole topic is backlog again.
    let reset = cluster.mqadmin_json(&["resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0"]);
    assert!(
        rows(&reset, "queues")
            .iter()
            .all(|q| q["newOffset"].as_i64() == Some(0)),
        "{reset}"
    );
    let progress = cluster.mqadmin_json(&["consumerProgress", "-g", GROUP, "-t", TOPIC]);
    assert_eq!(
        progress["diffTotal"].as_i64(),
        Some(MESSAGES as i64),
        "{progress}"
    );
    // The brokers' own stats (GET_TOPIC_STATS_INFO / GET_CONSUME_STATS) were used: store times are
    // there, and a reset without force never moves the group forward.
    let status = cluster.mqadmin_json(&["topicStatus", "-t", TOPIC]);
    assert!(
        rows(&status, "queues").iter().all(|q| {
            let (max, ts) = (q["maxOffset"].as_i64(), q["lastUpdateTimestamp"].as_i64());
            ts.is_some() && (max == Some(0)) == (ts == Some(0))
        }),
        "{status}"
    );
    let kept = cluster.mqadmin_json(&[
        "resetOffsetByTime",
        "-g",
        GROUP,
        "-t",
        TOPIC,
        "-s",
        "now",
        "-f",
        "false",
    ]);
    assert!(
        rows(&kept, "queues")
            .iter()
            .all(|q| q["newOffset"].as_i64() == Some(0) && q["oldOffset"].as_i64() == Some(0)),
        "{kept}"
    );
    let (ok, table, _) = cluster.mqadmin(&["consumerProgress", "-g", GROUP, "-t", TOPIC]);
    assert!(
        ok && table.contains(&format!("Consume Diff Total: {MESSAGES}")),
        "{table}"
    );
    // consumerProgress without -g: every group with a retry topic (a heartbeat creates it), its
    // clients (none online once the heartbeat's connection closed) and its total lag.
    run_local(async {
        let namesrv = NameServer::from_list(&ns, Duration::from_secs(10)).unwrap();
        let consumer = PullConsumer::new(
            GROUP,
            namesrv,
            BrokerConnections::new(1, Duration::from_secs(10)),
            Duration::from_secs(10),
        );
        consumer.heartbeat(TOPIC, "ops-client").await.unwrap();
    });
    let listed_at = Instant::now();
    loop {
        let groups = cluster.mqadmin_json(&["consumerProgress"]);
        if let Some(g) = rows(&groups, "groups")
            .into_iter()
            .find(|g| g["group"].as_str() == Some(GROUP))
        {
            assert_eq!(g["diffTotal"].as_i64(), Some(MESSAGES as i64), "{groups}");
            break;
        }
        // The retry topic reaches the name servers with the brokers' next registration.
        assert!(
            listed_at.elapsed() < Duration::from_secs(60),
            "{GROUP} not listed: {groups}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // updateSubGroup reaches every master and is persisted.
    let updated = cluster.mqadmin_json(&[
        "updateSubGroup",
        "-c",
        "DefaultCluster",
        "-g",
        "OpsSubGroup",
        "-r",
        "5",
    ]);
    assert_eq!(rows(&updated, "brokers").len(), 2);
    for master in ["broker-a", "broker-b"] {
        let file = cluster
            .dir
            .path()
            .join(format!("store/{master}/config/subscriptionGroup.json"));
        let groups: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            groups["subscriptionGroupTable"]["OpsSubGroup"]["retryMaxTimes"].as_i64(),
            Some(5),
            "{groups}"
        );
    }

    // clusterList / brokerStatus / topicList.
    let list = cluster.mqadmin_json(&["clusterList"]);
    let listed = rows(&list, "brokers");
    assert_eq!(listed.len(), brokers.len(), "{list}");
    let in_total: i64 = listed
        .iter()
        .filter_map(|r| r["inTotal"].as_str()?.parse::<i64>().ok())
        .sum();
    assert_eq!(in_total, MESSAGES as i64, "{list}");
    let status = cluster.mqadmin_json(&["brokerStatus", "-b", &cluster.broker_addr(a)]);
    assert_eq!(
        status[cluster.broker_addr(a)]["msgPutTotalTodayNow"].as_str(),
        Some(per_group("broker-a").to_string().as_str())
    );
    let topics = cluster.mqadmin_json(&["topicList"]);
    assert!(
        rows(&topics, "topicList").contains(&Value::String(TOPIC.into())),
        "{topics}"
    );

    // deleteTopic: gone from the brokers and from both name servers.
    cluster.mqadmin_json(&["deleteTopic", "-c", "DefaultCluster", "-t", TOPIC]);
    for one_ns in [
        format!("127.0.0.1:{}", cluster.port_base),
        format!("127.0.0.1:{}", cluster.port_base + 1),
    ] {
        let (ok, _, err) = cluster.mqadmin(&["topicRoute", "-n", &one_ns, "-t", TOPIC]);
        assert!(!ok && err.contains("TOPIC_NOT_EXIST"), "{one_ns}: {err}");
    }
    let (ok, _, err) = cluster.mqadmin(&["topicStatus", "-t", "NoSuchTopic"]);
    assert!(!ok && err.starts_with("mqadmin:"), "{err}");

    // down stops every process.
    let out = cluster.down();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = cluster.status();
    assert_eq!(
        status.matches(" stopped ").count(),
        brokers.len() + 2,
        "{status}"
    );
}

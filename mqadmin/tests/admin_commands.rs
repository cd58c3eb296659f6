//! The mqadmin commands for broker and name-server operations, run as the `mqadmin` binary against a
//! real single-node cluster of shard-brokers (`broker-a-0`, `broker-a-1`: one broker process with
//! two shards, each registered under its own name and address) started by `deploy/local-cluster.sh`:
//! broker config get/update, draining a broker (wipeWritePerm / addWritePerm), sendMessage then
//! printMsg / consumeMessage / queryMsgByUniqueKey, statsAll and brokerConsumeStats against what was
//! sent and committed, cloneGroupOffset, resetOffsetByTime of one queue, client connections and
//! consumerStatus through an online client that answers the broker, deleteSubGroup, the name
//! servers' KV config and config, clusterRT. Each check reads the figures printed.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{commit_offsets, pull_to_end, run_local, LocalCluster};
use protocol::body::{ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

const TOPIC: &str = "AdminTopic";
const GROUP: &str = "AdminGroup";
const CLONED: &str = "AdminGroupCopy";
const PRODUCER_GROUP: &str = "AdminProducers";
const CLIENT_ID: &str = "127.0.0.1@admin-commands-test";
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the online client answers GET_CONSUMER_RUNNING_INFO with (a Java client's
/// ConsumerRunningInfo, trimmed): it holds broker-a-0's queue 0.
const RUNNING_INFO: &str = r#"{"mqTable":{{"brokerName":"broker-a-0","queueId":0,"topic":"AdminTopic"}:{"commitOffset":2}},"properties":{"PROP_CLIENT_VERSION":"V4_9_4","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{"AdminTopic":{"pullRT":1.5,"pullTPS":2.0,"consumeRT":0.0,"consumeOKTPS":0.0,"consumeFailedTPS":0.0,"consumeFailedMsgs":0}},"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"AdminTopic"}]}"#;

/// Answers the broker's GET_CONSUMER_RUNNING_INFO with RUNNING_INFO; takes other pushes silently.
struct RunningInfoAnswer;

impl ServerRequestHandler for RunningInfoAnswer {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        (request.code == request_code::GET_CONSUMER_RUNNING_INFO).then(|| {
            RemotingCommand::response(response_code::SUCCESS, None)
                .with_body(bytes::Bytes::from_static(RUNNING_INFO.as_bytes()))
        })
    }
}

/// A client online as a producer of PRODUCER_GROUP and a consumer of GROUP (subscribing TOPIC), on
/// a thread of its own so it answers the broker while mqadmin runs; offline when dropped.
struct OnlineClient {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OnlineClient {
    fn start(addr: SocketAddr) -> OnlineClient {
        let stop = Arc::new(AtomicBool::new(false));
        let (online, is_online) = std::sync::mpsc::channel();
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            run_local(async move {
                let client =
                    Client::connect_with_handler(addr, TIMEOUT, Some(Rc::new(RunningInfoAnswer)))
                        .await
                        .unwrap();
                let data = HeartbeatData {
                    client_id: CLIENT_ID.into(),
                    producer_data_set: vec![ProducerData {
                        group_name: PRODUCER_GROUP.into(),
                    }],
                    consumer_data_set: vec![ConsumerData {
                        group_name: GROUP.into(),
                        subscription_data_set: vec![SubscriptionData {
                            topic: TOPIC.into(),
                            ..SubscriptionData::default()
                        }],
                        ..ConsumerData::default()
                    }],
                    ..HeartbeatData::default()
                };
                let r = client::broker_api::heartbeat(&client, &data, TIMEOUT).await;
                online.send(r.is_ok()).unwrap();
                while !stopping.load(Ordering::Relaxed) {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                }
            })
        });
        assert!(is_online.recv_timeout(TIMEOUT).expect("heartbeat answered"));
        OnlineClient {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for OnlineClient {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Pulls every queue of TOPIC to its end as GROUP (the broker counts the messages got) and commits
/// `commit(broker name, end)` for each queue; returns the messages pulled.
fn pull_and_commit(namesrv: &str, commit: impl Fn(&str, i64) -> i64) -> usize {
    let pulled = pull_to_end(namesrv, GROUP, TOPIC);
    let offsets: Vec<(client::MessageQueue, i64)> = pulled
        .iter()
        .map(|(q, end, _)| (q.clone(), commit(&q.broker_name, *end)))
        .collect();
    commit_offsets(namesrv, GROUP, &offsets);
    pulled.iter().map(|(_, _, bodies)| bodies.len()).sum()
}

/// GET_KV_CONFIG on one name server: the value, or None when the key is absent.
fn kv_value(namesrv: &str, namespace: &str, key: &str) -> Option<String> {
    run_local(async {
        let client = Client::connect(namesrv.parse().unwrap(), TIMEOUT)
            .await
            .unwrap();
        let req = RemotingCommand::request(request_code::GET_KV_CONFIG)
            .with_ext("namespace", namespace)
            .with_ext("key", key);
        let resp = client.invoke(req, TIMEOUT).await.unwrap();
        (resp.code == response_code::SUCCESS).then(|| resp.ext("value").unwrap_or("").to_owned())
    })
}

/// The words of a printed line.
fn fields(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The lines of `text` whose words start with `first`.
fn rows_of<'a>(text: &'a str, first: &[&str]) -> Vec<Vec<&'a str>> {
    text.lines()
        .map(fields)
        .filter(|f| f.len() >= first.len() && f[..first.len()] == *first)
        .collect()
}

/// `perm` of each broker name's queue data in TOPIC's route.
fn route_perms(cluster: &LocalCluster) -> Vec<(String, i64)> {
    let route = cluster.mqadmin_json(&["topicRoute", "-t", TOPIC]);
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

#[test]
fn admin_commands_against_shard_brokers() {
    let test_start = Instant::now();
    let cluster = LocalCluster::up_with_routing("single-node", "direct");
    let ns = cluster.namesrv_addr();
    let ns_list: Vec<String> = ns.split(';').map(str::to_owned).collect();
    let addr0 = cluster.broker_addr(0);
    // The second shard-broker of the process listens 4 ports up.
    let addr1 = {
        let (host, port) = addr0.rsplit_once(':').unwrap();
        format!("{host}:{}", port.parse::<u16>().unwrap() + 4)
    };

    // The topic on both shard-brokers, 2 queues each.
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
    wait_for(
        "route of both shard-brokers",
        Duration::from_secs(60),
        || {
            let (success, out, _) = cluster.mqadmin(&["topicRoute", "-t", TOPIC, "--json"]);
            success && out.contains("broker-a-0") && out.contains("broker-a-1")
        },
    );
    assert_eq!(
        route_perms(&cluster),
        [("broker-a-0".into(), 6), ("broker-a-1".into(), 6)]
    );

    // RocketMQ 5 topic attributes: set, shown by topicRoute, changed and deleted; a change the
    // broker refuses fails the command with its reason.
    let typed = "AdminTypedTopic";
    let out = ok(
        &cluster,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            typed,
            "-a",
            "+message.type=FIFO,+reserve.time=24",
        ],
    );
    assert!(
        out.contains("attributes={+message.type=FIFO, +reserve.time=24}"),
        "{out}"
    );
    let attributes = |want_reserve: bool| {
        wait_for(
            "the attributes in topicRoute",
            Duration::from_secs(60),
            || {
                let (success, out, _) = cluster.mqadmin(&["topicRoute", "-t", typed, "--json"]);
                let Ok(json) = serde_json::from_str::<serde_json::Value>(&out) else {
                    return false;
                };
                let shards = ["broker-a-0", "broker-a-1"];
                success
                    && shards.iter().all(|b| {
                        let a = &json["attributesByBroker"][b];
                        a["message.type"] == "FIFO" && a["reserve.time"].is_string() == want_reserve
                    })
            },
        )
    };
    attributes(true);
    let (success, out, err) = cluster.mqadmin(&[
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        typed,
        "-a",
        "+cleanup.policy=COMPACTION",
    ]);
    assert!(
        !success && format!("{out}{err}").contains("attempt to update an unchangeable attribute"),
        "{out}{err}"
    );
    let (success, _, err) = cluster.mqadmin(&[
        "updateTopic",
        "-c",
        "DefaultCluster",
        "-t",
        typed,
        "-a",
        "message.type=FIFO",
    ]);
    assert!(
        !success && err.contains("add/alter attribute format is wrong"),
        "{err}"
    );
    ok(
        &cluster,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            typed,
            "-a",
            "-reserve.time",
        ],
    );
    attributes(false);

    // ACL 2.0 users and ACLs with Apache's command names; `-c` reaches both shard-brokers of the one
    // process, where a repeat is done, not refused.
    let out = ok(
        &cluster,
        &[
            "createUser",
            "-c",
            "DefaultCluster",
            "-u",
            "alice",
            "-p",
            "secret",
        ],
    );
    assert!(
        out.contains(&format!("create user to {addr0} success.")),
        "{out}"
    );
    let users = cluster.mqadmin_json(&["getUser", "-b", &addr0, "-u", "alice"]);
    assert_eq!(users[0]["user"]["password"], "secret", "{users}");
    assert_eq!(users[0]["user"]["userType"], "Normal", "{users}");
    ok(
        &cluster,
        &["updateUser", "-b", &addr0, "-u", "alice", "-s", "disable"],
    );
    let listed = cluster.mqadmin_json(&["listUser", "-b", &addr0, "-f", "ali"]);
    assert_eq!(listed[0]["user"]["userStatus"], "disable", "{listed}");
    let out = ok(
        &cluster,
        &[
            "createAcl",
            "-c",
            "DefaultCluster",
            "-s",
            "User:alice",
            "-r",
            "Topic:orders*,Group:g1",
            "-a",
            "Pub,Sub",
            "-i",
            "10.0.0.0/8",
            "-d",
            "Allow",
        ],
    );
    assert!(out.contains("create acl to"), "{out}");
    let acl = ok(&cluster, &["getAcl", "-b", &addr1, "-s", "User:alice"]);
    assert!(
        acl.contains("Topic:orders*") && acl.contains("Group:g1") && acl.contains("10.0.0.0/8"),
        "{acl}"
    );
    let (success, out, err) = cluster.mqadmin(&[
        "createAcl",
        "-b",
        &addr0,
        "-s",
        "User:nobody",
        "-r",
        "*",
        "-a",
        "All",
        "-d",
        "Allow",
    ]);
    assert!(
        !success && format!("{out}{err}").contains("The subject of User:nobody is not exist."),
        "{out}{err}"
    );
    let out = ok(
        &cluster,
        &["copyUser", "-f", &addr0, "-t", &addr1, "-u", "alice"],
    );
    assert!(out.contains("copy user of alice from"), "{out}");
    ok(
        &cluster,
        &[
            "deleteAcl",
            "-c",
            "DefaultCluster",
            "-s",
            "User:alice",
            "-r",
            "Group:g1",
        ],
    );
    let acls = cluster.mqadmin_json(&["listAcl", "-b", &addr0]);
    let entries = &acls[0]["acl"]["policies"][0]["entries"];
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{acls}");
    ok(
        &cluster,
        &["deleteUser", "-c", "DefaultCluster", "-u", "alice"],
    );
    assert_eq!(
        cluster.mqadmin_json(&["listAcl", "-b", &addr0]),
        serde_json::json!([])
    );

    // getBrokerConfig / updateBrokerConfig: brokerPermission changes at run time and is shown.
    let config = ok(&cluster, &["getBrokerConfig", "-b", &addr0]);
    assert!(
        config.starts_with(&format!("============{addr0}============\n")),
        "{config}"
    );
    let value = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.split('=').next().map(str::trim) == Some(key))
            .and_then(|l| l.split_once("=  "))
            .map(|(_, v)| v.to_owned())
    };
    assert_eq!(value(&config, "brokerPermission").as_deref(), Some("6"));
    assert_eq!(
        value(&config, "brokerClusterName").as_deref(),
        Some("DefaultCluster")
    );
    let out = ok(
        &cluster,
        &[
            "updateBrokerConfig",
            "-b",
            &addr0,
            "-k",
            "brokerPermission",
            "-v",
            "4",
        ],
    );
    assert_eq!(
        out,
        format!(
            "update broker config success, {addr0}\n  applied: brokerPermission; on every \
             shard-broker of broker-a (broker-a-0 .. broker-a-1)\n"
        )
    );
    let by_cluster = ok(&cluster, &["getBrokerConfig", "-c", "DefaultCluster"]);
    for addr in [&addr0, &addr1] {
        assert!(
            by_cluster.contains(&format!("============Master: {addr}============")),
            "{by_cluster}"
        );
    }
    let json = cluster.mqadmin_json(&["getBrokerConfig", "-c", "DefaultCluster"]);
    // One process: both shard-brokers run with the new permission.
    for addr in [&addr0, &addr1] {
        assert_eq!(json[addr]["brokerPermission"], "4", "{json}");
    }
    let (success, _, err) = cluster.mqadmin(&[
        "updateBrokerConfig",
        "-b",
        &addr0,
        "-k",
        "noSuchKey",
        "-v",
        "1",
    ]);
    assert!(!success && err.contains("noSuchKey"), "{err}");
    let out = ok(
        &cluster,
        &[
            "updateBrokerConfig",
            "-c",
            "DefaultCluster",
            "-k",
            "brokerPermission",
            "-v",
            "6",
        ],
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("update broker config success, "))
            .count(),
        2,
        "{out}"
    );
    let json = cluster.mqadmin_json(&["getBrokerConfig", "-b", &addr1]);
    assert_eq!(json[&addr1]["brokerPermission"], "6", "{json}");
    wait_for("perm 6 registered again", Duration::from_secs(60), || {
        route_perms(&cluster).iter().all(|(_, p)| *p == 6)
    });

    // Draining: wipeWritePerm makes the shard-broker read-only (perm 4) in both name servers'
    // routes; addWritePerm gives it back.
    let out = ok(&cluster, &["wipeWritePerm", "-b", "broker-a-0"]);
    for n in &ns_list {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("name server[{n}]")))
            .unwrap_or_else(|| panic!("{n}: {out}"));
        assert!(
            line.starts_with("wipe write perm of broker[broker-a-0]"),
            "{line}"
        );
        let count: i64 = line.rsplit(", ").next().unwrap().parse().unwrap();
        assert!(count >= 1, "{line}");
    }
    for n in &ns_list {
        let route = cluster.mqadmin_json(&["topicRoute", "-n", n, "-t", TOPIC]);
        for q in route["queueDatas"].as_array().unwrap() {
            let want = if q["brokerName"] == "broker-a-0" {
                4
            } else {
                6
            };
            assert_eq!(q["perm"].as_i64(), Some(want), "{n}: {route}");
        }
    }
    let out = ok(&cluster, &["addWritePerm", "-b", "broker-a-0"]);
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("add write perm of broker[broker-a-0] in name server["))
            .count(),
        2,
        "{out}"
    );
    assert_eq!(
        route_perms(&cluster),
        [("broker-a-0".into(), 6), ("broker-a-1".into(), 6)]
    );

    // sendMessage: two messages to broker-a-0 queue 0, one to broker-a-1 queue 1.
    let mut sent = Vec::new();
    for (body, tag, broker, queue) in [
        ("admin-body-0", "TagX", "broker-a-0", "0"),
        ("admin-body-1", "TagY", "broker-a-0", "0"),
        ("admin-body-2", "TagX", "broker-a-1", "1"),
    ] {
        let out = ok(
            &cluster,
            &[
                "sendMessage",
                "-t",
                TOPIC,
                "-p",
                body,
                "-k",
                &format!("key-{body}"),
                "-c",
                tag,
                "-b",
                broker,
                "-i",
                queue,
            ],
        );
        let row = rows_of(&out, &[broker, queue, "SEND_OK"]);
        assert_eq!(row.len(), 1, "{out}");
        assert!(out.starts_with("#Broker Name"), "{out}");
        sent.push((body, row[0][3].to_owned()));
    }
    let (success, _, err) = cluster.mqadmin(&["sendMessage", "-t", TOPIC, "-p", "x", "-i", "0"]);
    assert!(!success, "-i without -b is refused: {err}");

    // printMsg: every message with its body; -s filters by tag.
    let out = ok(&cluster, &["printMsg", "-t", TOPIC]);
    let printed: Vec<&str> = out.lines().filter(|l| l.starts_with("MSGID: ")).collect();
    assert_eq!(printed.len(), 3, "{out}");
    for (body, msg_id) in &sent {
        assert!(
            printed
                .iter()
                .any(|l| l.starts_with(&format!("MSGID: {msg_id} "))
                    && l.ends_with(&format!("BODY: {body}"))),
            "{body}: {out}"
        );
    }
    assert!(
        out.contains("minOffset=0, maxOffset=2, MessageQueue [topic=AdminTopic, brokerName=broker-a-0, queueId=0]"),
        "{out}"
    );
    let out = ok(
        &cluster,
        &["printMsg", "-t", TOPIC, "-s", "TagY", "-d", "true"],
    );
    let bodies: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("MSGID: "))
        .filter_map(|l| l.rsplit("BODY: ").next())
        .collect();
    assert_eq!(bodies, ["admin-body-1"], "{out}");

    // consumeMessage: one queue from an offset, and a count limit over the topic.
    let out = ok(
        &cluster,
        &[
            "consumeMessage",
            "-t",
            TOPIC,
            "-b",
            "broker-a-0",
            "-i",
            "0",
            "-o",
            "1",
        ],
    );
    let bodies: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("MSGID: "))
        .filter_map(|l| l.rsplit("BODY: ").next())
        .collect();
    assert_eq!(bodies, ["admin-body-1"], "{out}");
    assert!(out.contains("Consume ok"), "{out}");
    let json = cluster.mqadmin_json(&["consumeMessage", "-t", TOPIC, "-c", "2"]);
    assert_eq!(json["messages"].as_array().map(Vec::len), Some(2), "{json}");

    // queryMsgByUniqueKey: the message by its client msgId.
    let (body2, id2) = &sent[2];
    let out = ok(&cluster, &["queryMsgByUniqueKey", "-t", TOPIC, "-i", id2]);
    assert!(
        out.contains(&format!("{:<20} {body2}", "Message Body:")),
        "{out}"
    );
    assert!(out.contains(&format!("{:<20} {TOPIC}", "Topic:")), "{out}");
    assert!(out.contains(&format!("{:<20} [TagX]", "Tags:")), "{out}");
    assert!(out.contains(&format!("{:<20} 1", "Queue ID:")), "{out}");

    // GROUP pulls everything, commits all of broker-a-0 and nothing of broker-a-1 (backlog 1).
    let pulled = pull_and_commit(
        &ns,
        |broker, end| {
            if broker == "broker-a-0" {
                end
            } else {
                0
            }
        },
    );
    assert_eq!(pulled, 3);

    // statsAll: 3 messages in, 3 out for GROUP, backlog 1.
    let stats = cluster.mqadmin_json(&["statsAll", "-t", TOPIC]);
    let row = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["group"] == GROUP)
        .cloned()
        .unwrap_or_else(|| panic!("{stats}"));
    assert_eq!(row["inMsg24Hour"].as_u64(), Some(3), "{stats}");
    assert_eq!(row["outMsg24Hour"].as_u64(), Some(3), "{stats}");
    assert_eq!(row["accumulation"].as_i64(), Some(1), "{stats}");
    let out = ok(&cluster, &["statsAll", "-t", TOPIC, "-a"]);
    let row = rows_of(&out, &[TOPIC, GROUP]);
    assert_eq!(row.len(), 1, "{out}");
    assert_eq!((row[0][2], row[0][5], row[0][6]), ("1", "3", "3"), "{out}");

    // brokerConsumeStats: broker-a-0 queue 0 fully consumed; broker-a-1 has the backlog.
    let out = ok(&cluster, &["brokerConsumeStats", "-b", &addr0]);
    let row = rows_of(&out, &[TOPIC, GROUP, "broker-a-0", "0"]);
    assert_eq!(row.len(), 1, "{out}");
    assert_eq!((row[0][4], row[0][5], row[0][6]), ("2", "2", "0"), "{out}");
    assert!(out.ends_with("\nDiff Total: 0\n"), "{out}");
    let json = cluster.mqadmin_json(&["brokerConsumeStats", "-b", &addr1]);
    assert_eq!(json["totalDiff"].as_i64(), Some(1), "{json}");

    // cloneGroupOffset: the copy has GROUP's committed offsets.
    let out = ok(
        &cluster,
        &["cloneGroupOffset", "-s", GROUP, "-d", CLONED, "-t", TOPIC],
    );
    assert!(out.starts_with("clone group offset success."), "{out}");
    let offsets = |group: &str| {
        let v = cluster.mqadmin_json(&["consumerProgress", "-g", group, "-t", TOPIC]);
        let mut rows: Vec<(String, i64, i64)> = v["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q["brokerName"].as_str().unwrap().to_owned(),
                    q["queueId"].as_i64().unwrap(),
                    q["consumerOffset"].as_i64().unwrap(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    let original = offsets(GROUP);
    assert!(
        original.contains(&("broker-a-0".into(), 0, 2)),
        "{original:?}"
    );
    assert_eq!(offsets(CLONED), original);

    // resetOffsetByTime of one queue to an offset.
    let out = ok(
        &cluster,
        &[
            "resetOffsetByTime",
            "-g",
            GROUP,
            "-t",
            TOPIC,
            "-s",
            "now",
            "-b",
            &addr0,
            "-q",
            "0",
            "-o",
            "1",
        ],
    );
    assert!(out.contains("reset consumer offset to 1"), "{out}");
    let now = offsets(GROUP);
    assert!(now.contains(&("broker-a-0".into(), 0, 1)), "{now:?}");
    assert_eq!(
        now.iter()
            .filter(|r| r.0 != "broker-a-0" || r.1 != 0)
            .collect::<Vec<_>>(),
        original
            .iter()
            .filter(|r| r.0 != "broker-a-0" || r.1 != 0)
            .collect::<Vec<_>>()
    );

    // An online client: producerConnection, consumerConnection, consumerStatus, consumerProgress -s.
    {
        let _client = OnlineClient::start(addr0.parse().unwrap());
        let out = ok(
            &cluster,
            &["producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC],
        );
        let line = out.lines().next().unwrap_or_default();
        assert_eq!(fields(line)[..2], ["0001", CLIENT_ID], "{out}");
        assert!(line.ends_with("V4_9_4"), "{out}");
        let out = ok(&cluster, &["consumerConnection", "-g", GROUP]);
        assert_eq!(rows_of(&out, &[CLIENT_ID]).len(), 1, "{out}");
        assert!(out.contains("Below is subscription:"), "{out}");
        assert_eq!(rows_of(&out, &[TOPIC, "*"]).len(), 1, "{out}");
        assert!(out.contains("MessageModel: CLUSTERING"), "{out}");
        let out = ok(&cluster, &["consumerStatus", "-g", GROUP, "-i", CLIENT_ID]);
        assert!(out.starts_with("#Consumer Properties#\n"), "{out}");
        assert_eq!(
            rows_of(&out, &["PROP_CLIENT_VERSION"]),
            [vec!["PROP_CLIENT_VERSION", ":", "V4_9_4"]],
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "001 Topic: {TOPIC:<40} ClassFilter: false    SubExpression: *"
            )),
            "{out}"
        );
        assert_eq!(
            rows_of(&out, &[TOPIC, "broker-a-0", "0", "2"]).len(),
            1,
            "{out}"
        );
        let out = ok(&cluster, &["consumerStatus", "-g", GROUP]);
        assert_eq!(rows_of(&out, &["1", CLIENT_ID, "V4_9_4"]).len(), 1, "{out}");
        assert!(out.contains("Rebalance OK"), "{out}");
        let out = ok(&cluster, &["consumerProgress", "-g", GROUP, "-s", "true"]);
        let holders: Vec<(String, String)> = rows_of(&out, &[TOPIC])
            .iter()
            .map(|f| (format!("{}/{}", f[1], f[2]), f[5].to_owned()))
            .collect();
        assert_eq!(holders.len(), 4, "{out}");
        for (queue, ip) in holders {
            let want = if queue == "broker-a-0/0" {
                "127.0.0.1"
            } else {
                "N/A"
            };
            assert_eq!(ip, want, "{queue}: {out}");
        }
    }

    // deleteSubGroup: created, then gone from the broker's subscription groups.
    ok(
        &cluster,
        &["updateSubGroup", "-b", &addr0, "-g", "AdminDoomed"],
    );
    let groups_file = cluster
        .dir
        .path()
        .join("store/broker-a/config/subscriptionGroup.json");
    let has_group =
        || std::fs::read_to_string(&groups_file).is_ok_and(|t| t.contains("\"AdminDoomed\""));
    wait_for("AdminDoomed persisted", Duration::from_secs(10), has_group);
    let out = ok(
        &cluster,
        &["deleteSubGroup", "-b", &addr0, "-g", "AdminDoomed"],
    );
    assert_eq!(
        out,
        format!("delete subscription group [AdminDoomed] from broker [{addr0}] success.\n")
    );
    wait_for("AdminDoomed deleted", Duration::from_secs(10), || {
        !has_group()
    });

    // KV config on every name server.
    let out = ok(
        &cluster,
        &[
            "updateKvConfig",
            "-s",
            "ADMIN_NS",
            "-k",
            "color",
            "-v",
            "blue",
        ],
    );
    assert_eq!(out, "create or update kv config to namespace success.\n");
    for n in &ns_list {
        assert_eq!(
            kv_value(n, "ADMIN_NS", "color").as_deref(),
            Some("blue"),
            "{n}"
        );
    }
    let out = ok(
        &cluster,
        &["deleteKvConfig", "-s", "ADMIN_NS", "-k", "color"],
    );
    assert_eq!(out, "delete kv config from namespace success.\n");
    for n in &ns_list {
        assert_eq!(kv_value(n, "ADMIN_NS", "color"), None, "{n}");
    }

    // Name server config: read, changed at run time, read back.
    let out = ok(&cluster, &["getNamesrvConfig"]);
    for n in &ns_list {
        assert!(
            out.contains(&format!("============{n}============")),
            "{out}"
        );
    }
    let order = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("orderMessageEnable "))
            .map(|l| l.rsplit(' ').next().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&out), ["false", "false"], "{out}");
    let out = ok(
        &cluster,
        &[
            "updateNamesrvConfig",
            "-k",
            "orderMessageEnable",
            "-v",
            "true",
        ],
    );
    assert!(
        out.starts_with("update name server config success!["),
        "{out}"
    );
    assert_eq!(
        order(&ok(&cluster, &["getNamesrvConfig"])),
        ["true", "true"]
    );

    // clusterRT: every shard-broker answers all sends.
    let out = ok(&cluster, &["clusterRT", "-a", "5", "-s", "16"]);
    for broker in ["broker-a-0", "broker-a-1"] {
        let row = rows_of(&out, &["DefaultCluster", broker]);
        assert_eq!(row.len(), 1, "{out}");
        assert_eq!((row[0][3], row[0][4]), ("5", "0"), "{out}");
        assert!(row[0][2].parse::<f64>().is_ok(), "{out}");
    }

    assert!(
        test_start.elapsed() < Duration::from_secs(240),
        "took {:?}",
        test_start.elapsed()
    );
}

//! Apache RocketMQ 4.9.8's own `mqadmin` (rocketmq-tools from Maven Central, tests/apache/) against
//! our name server and broker: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig, wipeWritePerm,
//! addWritePerm, updateSubGroup, deleteSubGroup, producerConnection, brokerConsumeStats, cloneGroupOffset
//! and statsAll,
//! checking the figures they print. Skips (with a message) when the kit or its Java is unavailable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use mqadmin_kit::{fields, line_with, ready_kit, value_of, Admin, MQADMIN_4};
use protocol::header::{
    CommandHeader, QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use protocol::{request_code, response_code, RemotingCommand};

/// Longest the whole test may run.
const TEST_LIMIT: Duration = Duration::from_secs(600);

const TOPIC: &str = "AdminToolsTopic";
const GROUP: &str = "AdminToolsGroup";
const CLONED_GROUP: &str = "AdminToolsClonedGroup";
const PRODUCER_GROUP: &str = "AdminToolsProducers";
const PRODUCER_ID: &str = "127.0.0.1@admin-tools-test";
const QUEUES: i32 = 4;
const PER_QUEUE: i64 = 25;
/// Messages of each queue the group consumes and commits.
const CONSUMED: i64 = 10;
/// Messages sent just before statsAll.
const FRESH: i64 = 10;

async fn invoke(client: &remoting::Client, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.expect("broker answers")
}

/// A client in the producer group and in the consumer group (which gives the group its retry topic,
/// through which mqadmin finds the group's brokers).
fn heartbeat() -> RemotingCommand {
    let body = format!(
        "{{\"clientID\":\"{PRODUCER_ID}\",\"producerDataSet\":[{{\"groupName\":\"{PRODUCER_GROUP}\"}}],\
         \"consumerDataSet\":[{{\"groupName\":\"{GROUP}\",\"subscriptionDataSet\":[{{\"topic\":\"{TOPIC}\",\
         \"subString\":\"*\",\"expressionType\":\"TAG\"}}]}}]}}"
    );
    RemotingCommand::request(request_code::HEART_BEAT).with_body(Bytes::from(body))
}

fn commit_offset(queue_id: i32, offset: i64) -> RemotingCommand {
    let header = UpdateConsumerOffsetRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id,
        commit_offset: offset,
    };
    RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext_fields(header.to_ext_fields())
}

async fn groups_json(client: &remoting::Client) -> String {
    let answer = invoke(
        client,
        RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
    )
    .await;
    String::from_utf8_lossy(&answer.body).into_owned()
}

#[test]
fn apache_mqadmin_reads_and_changes_our_cluster() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let test_start = Instant::now();
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 2000\n"
    ));
    let addr = broker.addr().to_string();
    let admin = Admin { kit, ns };

    run_local(async {
        let client = connect(broker.addr()).await;
        // The topic, created through mqadmin on the cluster our broker registered.
        let out = admin.run(&[
            "updateTopic",
            "-c",
            "TestCluster",
            "-t",
            TOPIC,
            "-r",
            "4",
            "-w",
            "4",
        ]);
        assert!(out.contains("create topic to"), "updateTopic: {out}");

        // Traffic: PER_QUEUE messages per queue, CONSUMED of each pulled and committed by GROUP.
        for q in 0..QUEUES {
            for i in 0..PER_QUEUE {
                let r = send(&client, TOPIC, q, format!("m{q}-{i}").as_bytes(), "").await;
                assert_eq!(r.code, response_code::SUCCESS, "send: {:?}", r.remark);
            }
            let r = invoke(&client, pull_request(GROUP, TOPIC, q, 0, 0, None)).await;
            assert_eq!(r.code, response_code::SUCCESS, "pull: {:?}", r.remark);
            let r = invoke(&client, commit_offset(q, CONSUMED)).await;
            assert_eq!(r.code, response_code::SUCCESS, "commit: {:?}", r.remark);
        }
        let r = invoke(&client, heartbeat()).await;
        assert_eq!(r.code, response_code::SUCCESS, "heartbeat: {:?}", r.remark);
        // Let the broker sample its rates (every second) after the traffic.
        glommio::timer::sleep(Duration::from_millis(2500)).await;
        let total = i64::from(QUEUES) * PER_QUEUE;
        let pulled = i64::from(QUEUES) * PER_QUEUE.min(32);

        // clusterList: our broker with a non-zero InTPS and OutTPS (10 s window).
        let out = admin.run(&["clusterList"]);
        assert!(!out.contains("NullPointerException"), "clusterList: {out}");
        let line = line_with(&out, &["TestCluster", "broker-t", &addr]).expect("our broker listed");
        let tps: Vec<f64> = line
            .split('(')
            .filter_map(|part| part.split_whitespace().last()?.parse().ok())
            .collect();
        assert!(tps.len() >= 2, "InTPS and OutTPS in: {line}");
        assert!(tps[0] > 0.0 && tps[1] > 0.0, "InTPS/OutTPS: {line}");
        assert!(line.contains("V4_9_4"), "version: {line}");

        // clusterList -m: yesterday's and today's totals (today: everything since start).
        let out = admin.run(&["clusterList", "-m"]);
        let name = format!("{}-0", "broker-t");
        let line = line_with(&out, &["TestCluster", &name]).expect(&out);
        let f = fields(line);
        assert_eq!(f.get(2), Some(&"0"), "InTotalYest: {line}");
        assert_eq!(
            f.get(4),
            Some(&total.to_string().as_str()),
            "InTotalToday: {line}"
        );
        assert_eq!(
            f.get(5),
            Some(&pulled.to_string().as_str()),
            "OutTotalToday: {line}"
        );

        // brokerStatus: Apache's keys with our figures.
        let out = admin.run(&["brokerStatus", "-b", &addr]);
        assert_eq!(
            value_of(&out, "msgPutTotalTodayNow", ':'),
            Some(total.to_string().as_str()),
            "{out}"
        );
        let put_tps = value_of(&out, "putTps", ':').expect("putTps");
        let rates: Vec<f64> = put_tps.split(' ').filter_map(|v| v.parse().ok()).collect();
        assert_eq!(rates.len(), 3, "three windows: {put_tps}");
        // The one-minute window: a loaded machine's JVM start-ups can push the sends out of the 10 s one.
        assert!(rates[1] > 0.0, "putTps: {put_tps}");
        let transferred = value_of(&out, "getTransferedTps", ':').expect("getTransferedTps");
        assert!(
            transferred
                .split(' ')
                .nth(1)
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v > 0.0),
            "{transferred}"
        );
        assert!(
            value_of(&out, "runtime", ':').is_some_and(|v| v.contains("days")),
            "{out}"
        );
        assert!(
            value_of(&out, "commitLogDiskRatio", ':')
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v > 0.0 && v < 1.0),
            "{out}"
        );
        assert!(
            value_of(&out, "earliestMessageTimeStamp", ':')
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|t| t > now_ms() - 600_000),
            "{out}"
        );

        // getBrokerConfig / updateBrokerConfig brokerPermission 4 (read only), at once and persisted.
        let out = admin.run(&["getBrokerConfig", "-b", &addr]);
        assert_eq!(value_of(&out, "brokerName", '='), Some("broker-t"), "{out}");
        assert_eq!(value_of(&out, "brokerPermission", '='), Some("6"), "{out}");
        let out = admin.run(&[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "brokerPermission",
            "-v",
            "4",
        ]);
        assert!(out.contains("success"), "updateBrokerConfig: {out}");
        let out = admin.run(&["getBrokerConfig", "-b", &addr]);
        assert_eq!(value_of(&out, "brokerPermission", '='), Some("4"), "{out}");
        let r = send(&client, TOPIC, 0, b"refused", "").await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "a read-only broker refuses sends"
        );
        let overlay = broker.dir.join("store/config/broker.properties.override");
        let text = std::fs::read_to_string(&overlay).unwrap_or_default();
        assert!(text.contains("brokerPermission=4"), "overlay: {text}");
        let out = admin.run(&[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "noSuchKey",
            "-v",
            "1",
        ]);
        assert!(!out.contains("success"), "an unknown key is refused: {out}");
        let out = admin.run(&[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "brokerPermission",
            "-v",
            "6",
        ]);
        assert!(out.contains("success"), "updateBrokerConfig: {out}");
        let r = send(&client, TOPIC, 0, b"accepted", "").await;
        assert_eq!(r.code, response_code::SUCCESS, "writable again");

        // wipeWritePerm / addWritePerm on the name server: counts and the route's perm.
        let out = admin.run(&["wipeWritePerm", "-b", "broker-t-0"]);
        let line = line_with(&out, &["wipe write perm of broker[broker-t-0]", "OK"]).expect(&out);
        let wiped: i32 = line
            .rsplit(' ')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .expect(line);
        assert!(wiped >= 1, "{line}");
        let route = admin.run(&["topicRoute", "-t", TOPIC]);
        assert!(route.contains("\"perm\":4"), "wiped route: {route}");
        let out = admin.run(&["addWritePerm", "-b", "broker-t-0"]);
        let line = line_with(&out, &["add write perm of broker[broker-t-0]", "OK"]).expect(&out);
        let added: i32 = line
            .rsplit(' ')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .expect(line);
        assert_eq!(added, wiped, "{line}");
        let route = admin.run(&["topicRoute", "-t", TOPIC]);
        assert!(route.contains("\"perm\":6"), "restored route: {route}");

        // updateSubGroup then deleteSubGroup.
        let out = admin.run(&["updateSubGroup", "-b", &addr, "-g", "AdminToolsDoomed"]);
        assert!(
            out.contains("create subscription group to"),
            "updateSubGroup: {out}"
        );
        assert!(groups_json(&client).await.contains("AdminToolsDoomed"));
        let out = admin.run(&["deleteSubGroup", "-b", &addr, "-g", "AdminToolsDoomed"]);
        assert!(
            out.contains("delete subscription group [AdminToolsDoomed] from broker"),
            "deleteSubGroup: {out}"
        );
        assert!(
            !groups_json(&client).await.contains("AdminToolsDoomed"),
            "group deleted"
        );

        // producerConnection: the client that sent the producer heartbeat.
        let out = admin.run(&["producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC]);
        assert!(
            line_with(&out, &[PRODUCER_ID]).is_some(),
            "producerConnection: {out}"
        );

        // brokerConsumeStats: each queue's offsets and the total backlog.
        let out = admin.run(&["brokerConsumeStats", "-b", &addr]);
        for q in 0..QUEUES {
            let line = out
                .lines()
                .find(|l| {
                    let f = fields(l);
                    f.first() == Some(&TOPIC)
                        && f.get(1) == Some(&GROUP)
                        && f.get(3) == Some(&q.to_string().as_str())
                })
                .unwrap_or_else(|| panic!("queue {q} in: {out}"));
            let f = fields(line);
            let broker_offset = if q == 0 { PER_QUEUE + 1 } else { PER_QUEUE };
            assert_eq!(
                f.get(4),
                Some(&broker_offset.to_string().as_str()),
                "{line}"
            );
            assert_eq!(f.get(5), Some(&CONSUMED.to_string().as_str()), "{line}");
        }
        let diff = total + 1 - i64::from(QUEUES) * CONSUMED;
        assert!(
            out.contains(&format!("Diff Total: {diff}")),
            "brokerConsumeStats: {out}"
        );

        // cloneGroupOffset: a new group starts where GROUP is, queue by queue.
        let out = admin.run(&[
            "cloneGroupOffset",
            "-s",
            GROUP,
            "-d",
            CLONED_GROUP,
            "-t",
            TOPIC,
            "-o",
            "false",
        ]);
        assert!(
            out.contains("clone group offset success"),
            "cloneGroupOffset: {out}"
        );
        for q in 0..QUEUES {
            let header = QueryConsumerOffsetRequestHeader {
                consumer_group: CLONED_GROUP.into(),
                topic: TOPIC.into(),
                queue_id: q,
                set_zero_if_not_found: None,
            };
            let r = invoke(
                &client,
                RemotingCommand::request(request_code::QUERY_CONSUMER_OFFSET)
                    .with_ext_fields(header.to_ext_fields()),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "queue {q}: {:?}", r.remark);
            assert_eq!(
                r.ext("offset"),
                Some(CONSUMED.to_string().as_str()),
                "queue {q}"
            );
        }

        // statsAll: the topic with its group, today's in/out counts, and the last minute's InTPS
        // (fresh sends, as the first ones may be more than a minute old by now).
        for i in 0..FRESH {
            let r = send(&client, TOPIC, 1, format!("fresh-{i}").as_bytes(), "").await;
            assert_eq!(r.code, response_code::SUCCESS, "send: {:?}", r.remark);
        }
        let out = admin.run(&["statsAll", "-t", TOPIC]);
        let line = line_with(&out, &[TOPIC, GROUP]).expect(&out);
        let f = fields(line);
        // Topic, group, accumulation, InTPS, OutTPS, InMsg24Hour, OutMsg24Hour.
        assert_eq!(
            f.get(2),
            Some(&(diff + FRESH).to_string().as_str()),
            "{line}"
        );
        assert!(
            f.get(3)
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v > 0.1),
            "{line}"
        );
        assert_eq!(
            f.get(5),
            Some(&(total + 1 + FRESH).to_string().as_str()),
            "{line}"
        );
        assert_eq!(f.get(6), Some(&pulled.to_string().as_str()), "{line}");
        drop(client);
    });
    assert!(
        test_start.elapsed() < TEST_LIMIT,
        "took {:?}",
        test_start.elapsed()
    );
}

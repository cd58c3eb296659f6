//! Apache RocketMQ's own `mqadmin` (5.5.0, and 4.9.8 where it has the command) against our name
//! server, a master and its slave: `haStatus`, `resetMasterFlushOffset`, `getBrokerEpoch`, `queryCq`,
//! `updateSubGroupList`, `cleanExpiredCQ`, `deleteExpiredCommitLog`, `cleanUnusedTopic`,
//! `exportPopRecord` and `setConsumeMode`, checked by the lines they print. Skips (with a message)
//! when Maven or Java cannot provide the tools.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;
mod mqadmin_kit;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use ha_common::*;
use mqadmin_kit::{ready_kit, Admin, MQADMIN_4, MQADMIN_5};
use protocol::{request_code, response_code, RemotingCommand};

const TOPIC: &str = "MaintTopic";
const GROUP: &str = "MaintGroup";

fn assert_prints(out: &str, needles: &[&str]) {
    assert!(!out.contains("command failed"), "mqadmin failed:\n{out}");
    for n in needles {
        assert!(out.contains(n), "mqadmin did not print {n:?}:\n{out}");
    }
}

fn heartbeat() -> RemotingCommand {
    let body = format!(
        "{{\"clientID\":\"127.0.0.1@maint\",\"producerDataSet\":[],\
         \"consumerDataSet\":[{{\"groupName\":\"{GROUP}\",\"consumeType\":\"CONSUME_PASSIVELY\",\
         \"messageModel\":\"CLUSTERING\",\"consumeFromWhere\":\"CONSUME_FROM_LAST_OFFSET\",\
         \"subscriptionDataSet\":[{{\"topic\":\"{TOPIC}\",\"subString\":\"TagA\",\"tagsSet\":[\"TagA\"],\
         \"codeSet\":[{}],\"expressionType\":\"TAG\",\"subVersion\":1}}]}}]}}",
        protocol::message::properties::java_string_hash("TagA")
    );
    RemotingCommand::request(request_code::HEART_BEAT).with_body(Bytes::from(body))
}

#[test]
fn apache_mqadmin_5_ha_and_maintenance_commands() {
    let Some(kit) = ready_kit(MQADMIN_5) else {
        return;
    };
    let ns = start_namesrv_in_process();
    let master = Broker::start(&format!(
        "{}namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 2000\n",
        master_extra("ASYNC_MASTER", "ASYNC_FLUSH")
    ));
    let slave = Broker::start(&format!(
        "{}registerNameServerPeriod = 2000\n",
        slave_extra(Some(&master), Some(ns))
    ));
    let admin = Admin { kit, ns };
    let m = master.addr().to_string();
    let s = slave.addr().to_string();
    run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(60)).await;
        let c = connect(master.addr()).await;
        for (i, tags) in ["TagA", "TagB", "TagA"].iter().enumerate() {
            let r = send(
                &c,
                TOPIC,
                0,
                format!("m{i}").as_bytes(),
                &format!("TAGS\u{1}{tags}\u{2}"),
            )
            .await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        wait_caught_up(master.addr(), slave.addr(), 2, Duration::from_secs(60)).await;
        // A consumer online (its connection stays open while mqadmin runs).
        let r = c.invoke(heartbeat(), TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);

        let out = admin.run(&["haStatus", "-b", &m]);
        assert_prints(
            &out,
            &[
                &format!("#MasterAddr\t{m}"),
                "#SlaveNum\t1",
                "#InSyncSlaveNum\t1",
                "#SlaveAddr",
            ],
        );
        let row = out
            .lines()
            .find(|l| l.starts_with("127.0.0.1:") && l.contains(" OK "))
            .unwrap_or_else(|| panic!("no in-sync slave line:\n{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols.get(2), Some(&"0"), "diff of a caught-up slave: {row}");

        let out = admin.run(&["resetMasterFlushOffset", "-b", &s, "-o", "77"]);
        assert_prints(&out, &["reset master flush offset to 77 success"]);
        let out = admin.run(&["haStatus", "-b", &s]);
        assert_prints(
            &out,
            &[
                &format!("#MasterAddr\t{}", master.ha_addr()),
                "#CommitLogMaxOffset\t",
                "#TransferSpeed(KB/s)\t",
                "#LastReadTime\t",
                "#MasterFlushOffset\t77",
            ],
        );
        // Every master of the cluster: both shard-brokers.
        let out = admin.run(&["haStatus", "-c", "TestCluster"]);
        assert_eq!(out.matches("#SlaveNum\t1").count(), 2, "{out}");

        // Outside controller mode: Apache's refusal.
        let out = admin.run(&["getBrokerEpoch", "-b", "broker-t-0"]);
        assert!(
            out.contains("this request only for controllerMode"),
            "getBrokerEpoch outside controller mode:\n{out}"
        );

        let out = admin.run(&[
            "queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-b", &m, "-g", GROUP,
        ]);
        assert_prints(
            &out,
            &[
                "Subscription data:",
                "\"subString\":\"TagA\"",
                "Filter data: \nnull",
                "max: 3, min: 0",
                "idx: 2",
                "ConsumeQueueData{physicOffset=",
            ],
        );
        // The TAG filter's verdict per unit: TagA, TagB, TagA.
        let evals: Vec<bool> = out
            .lines()
            .filter(|l| l.starts_with("ConsumeQueueData{"))
            .map(|l| l.contains("eval=true"))
            .collect();
        assert_eq!(evals, [true, false, true], "{out}");

        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            r#"[{"groupName":"ListGroupA","retryMaxTimes":5},{"groupName":"ListGroupB"}]"#,
        )
        .unwrap();
        let path = file.path().display().to_string();
        let out = admin.run(&["updateSubGroupList", "-b", &m, "-f", &path]);
        assert_prints(
            &out,
            &[&format!("submit batch of group config to {m} success")],
        );
        let r = c
            .invoke(
                RemotingCommand::request(request_code::GET_SUBSCRIPTIONGROUP_CONFIG)
                    .with_ext("group", "ListGroupA"),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert!(String::from_utf8_lossy(&r.body).contains("\"retryMaxTimes\":5"));

        for cmd in [
            "cleanExpiredCQ",
            "deleteExpiredCommitLog",
            "cleanUnusedTopic",
        ] {
            let out = admin.run(&[cmd, "-b", &m]);
            assert_prints(&out, &["success"]);
            let out = admin.run(&[cmd, "-c", "TestCluster"]);
            assert_prints(&out, &["success"]);
        }

        let out = admin.run(&["exportPopRecord", "-b", &m]);
        assert_prints(
            &out,
            &[&format!(
                "Export broker records, brokerName=broker-t, brokerAddr={m}, dryRun=false"
            )],
        );
        assert!(!out.contains("error"), "{out}");

        // Refused with the reason (no QUERY_ASSIGNMENT here).
        let out = admin.run(&[
            "setConsumeMode",
            "-b",
            &m,
            "-t",
            TOPIC,
            "-g",
            GROUP,
            "-m",
            "POP",
        ]);
        assert!(
            out.contains("command failed") && out.contains("QUERY_ASSIGNMENT"),
            "setConsumeMode:\n{out}"
        );
    });
}

#[test]
fn apache_mqadmin_4_maintenance_commands() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 2000\n"
    ));
    let admin = Admin { kit, ns };
    let b = broker.addr().to_string();
    run_local(async {
        let c = connect(broker.addr()).await;
        for i in 0..2 {
            let r = send(&c, TOPIC, 1, format!("m{i}").as_bytes(), "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
    });
    let out = admin.run(&["queryCq", "-t", TOPIC, "-q", "1", "-i", "0", "-b", &b]);
    assert_prints(
        &out,
        &["max: 2, min: 0", "idx: 1", "ConsumeQueueData{physicOffset="],
    );
    for cmd in [
        "cleanExpiredCQ",
        "deleteExpiredCommitLog",
        "cleanUnusedTopic",
    ] {
        let out = admin.run(&[cmd, "-b", &b]);
        assert_prints(&out, &["success"]);
    }
}

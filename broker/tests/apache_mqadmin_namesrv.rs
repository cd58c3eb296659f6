//! Apache RocketMQ 4.9.8's own `mqadmin` against our name server's KV config and settings:
//! updateKvConfig / deleteKvConfig, updateOrderConf (the ORDER_TOPIC_CONFIG namespace),
//! getNamesrvConfig / updateNamesrvConfig (orderMessageEnable, which puts an ordered topic's entry in
//! its route as `orderTopicConf`). Skips (with a message) when the kit or its Java is unavailable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;

use common::*;
use mqadmin_kit::{ready_kit, value_of, Admin, MQADMIN_4};

const TOPIC: &str = "AdminOrderTopic";

fn kv_file(ns: std::net::SocketAddr) -> String {
    std::fs::read_to_string(namesrv_files(ns).join("kvConfig.json")).unwrap_or_default()
}

#[test]
fn apache_mqadmin_keeps_kv_config_and_order_conf_on_our_name_server() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 2000\n"
    ));
    let admin = Admin { kit, ns };

    let out = admin.run(&["updateKvConfig", "-s", "AdminNs", "-k", "k1", "-v", "v1"]);
    assert!(
        out.contains("create or update kv config to namespace success"),
        "{out}"
    );
    assert!(kv_file(ns).contains("\"k1\": \"v1\""), "{}", kv_file(ns));

    let out = admin.run(&[
        "updateTopic",
        "-c",
        "TestCluster",
        "-t",
        TOPIC,
        "-o",
        "true",
    ]);
    assert!(out.contains("create topic to"), "updateTopic: {out}");
    let conf = "broker-t-0:8;broker-t-1:8";
    let out = admin.run(&["updateOrderConf", "-t", TOPIC, "-v", conf, "-m", "put"]);
    assert!(out.contains("update orderConf success"), "{out}");
    let out = admin.run(&["updateOrderConf", "-t", TOPIC, "-m", "get"]);
    assert!(out.contains(&format!("orderConf=[{conf}]")), "{out}");

    // Off by default: the route has no orderTopicConf until orderMessageEnable is switched on.
    let route = admin.run(&["topicRoute", "-t", TOPIC]);
    assert!(!route.contains("orderTopicConf"), "{route}");
    let out = admin.run(&["getNamesrvConfig"]);
    assert_eq!(
        value_of(&out, "orderMessageEnable", '='),
        Some("false"),
        "{out}"
    );
    let out = admin.run(&[
        "updateNamesrvConfig",
        "-k",
        "orderMessageEnable",
        "-v",
        "true",
    ]);
    assert!(out.contains("update name server config success"), "{out}");
    let out = admin.run(&["getNamesrvConfig"]);
    assert_eq!(
        value_of(&out, "orderMessageEnable", '='),
        Some("true"),
        "{out}"
    );
    let route = admin.run(&["topicRoute", "-t", TOPIC]);
    assert!(
        route.contains(&format!("\"orderTopicConf\":\"{conf}\"")),
        "{route}"
    );
    // A setting that needs a restart is refused, not stored and ignored.
    let out = admin.run(&["updateNamesrvConfig", "-k", "listenPort", "-v", "1"]);
    assert!(!out.contains("update name server config success"), "{out}");

    let out = admin.run(&["deleteKvConfig", "-s", "AdminNs", "-k", "k1"]);
    assert!(
        out.contains("delete kv config from namespace success"),
        "{out}"
    );
    let out = admin.run(&["updateOrderConf", "-t", TOPIC, "-m", "delete"]);
    assert!(out.contains("delete orderConf success"), "{out}");
    let route = admin.run(&["topicRoute", "-t", TOPIC]);
    assert!(!route.contains("orderTopicConf"), "{route}");
    assert!(!kv_file(ns).contains("k1"), "{}", kv_file(ns));
    drop(broker);
}

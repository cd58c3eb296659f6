//! The KV config and runtime config against the real binary: entries written, read, listed,
//! deleted and kept across a restart; `orderMessageEnable` changed at runtime puts an ordered
//! topic's ORDER_TOPIC_CONFIG entry into its route, and survives a restart; other keys refused.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::*;
use protocol::{request_code, response_code, RemotingCommand};

const BROKER: BrokerIdentity<'static> = BrokerIdentity {
    cluster: "DefaultCluster",
    name: "broker-a",
    addr: "127.0.0.1:10911",
    id: 0,
    ha_addr: "127.0.0.1:10912",
};

fn start(dir: &Path) -> NameServerProcess {
    let kv = dir.join("kvConfig.json");
    let props = dir.join("namesrv.properties");
    NameServerProcess::start(&[
        "--kvConfigPath",
        kv.to_str().unwrap(),
        "--configStorePath",
        props.to_str().unwrap(),
    ])
}

fn kv(code: i32, namespace: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("namespace", namespace)
        .with_ext("key", key)
}

fn put(namespace: &str, key: &str, value: &str) -> RemotingCommand {
    kv(request_code::PUT_KV_CONFIG, namespace, key).with_ext("value", value)
}

fn update_config(text: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::UPDATE_NAMESRV_CONFIG)
        .with_body(text.as_bytes().to_vec())
}

#[test]
fn kv_entries_are_served_listed_deleted_and_kept_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let addr = server.addr;
    run_local(move || async move {
        let c = connect(addr).await;
        let r = invoke(&c, kv(request_code::GET_KV_CONFIG, "ns1", "k1")).await;
        assert_eq!(r.code, response_code::QUERY_NOT_FOUND);
        for (k, v) in [("k1", "v1"), ("k2", "v2")] {
            let r = invoke(&c, put("ns1", k, v)).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        let r = invoke(&c, kv(request_code::GET_KV_CONFIG, "ns1", "k1")).await;
        assert_eq!(r.code, response_code::SUCCESS);
        assert_eq!(r.ext("value"), Some("v1"));
        let r = invoke(
            &c,
            RemotingCommand::request(request_code::GET_KVLIST_BY_NAMESPACE)
                .with_ext("namespace", "ns1"),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS);
        let body = body_json(&r);
        assert_eq!(body["table"]["k1"], "v1");
        assert_eq!(body["table"]["k2"], "v2");
        let r = invoke(&c, kv(request_code::DELETE_KV_CONFIG, "ns1", "k2")).await;
        assert_eq!(r.code, response_code::SUCCESS);
        // Bad input is answered, not fatal.
        let r = invoke(&c, RemotingCommand::request(request_code::PUT_KV_CONFIG)).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
    });
    drop(server);
    let server = start(dir.path());
    let addr = server.addr;
    run_local(move || async move {
        let c = connect(addr).await;
        let r = invoke(&c, kv(request_code::GET_KV_CONFIG, "ns1", "k1")).await;
        assert_eq!(r.ext("value"), Some("v1"), "kept across a restart");
        let r = invoke(&c, kv(request_code::GET_KV_CONFIG, "ns1", "k2")).await;
        assert_eq!(
            r.code,
            response_code::QUERY_NOT_FOUND,
            "the delete was kept"
        );
    });
}

#[test]
fn order_message_enable_changes_at_runtime_and_other_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let addr = server.addr;
    run_local(move || async move {
        let c = connect(addr).await;
        let r = invoke(
            &c,
            register_request(&BROKER, topic_table(&[("OrderTopic", 4)], 1)),
        )
        .await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let r = invoke(&c, put("ORDER_TOPIC_CONFIG", "OrderTopic", "broker-a:4")).await;
        assert_eq!(r.code, response_code::SUCCESS);
        let route = body_json(&invoke(&c, route_request("OrderTopic")).await);
        assert!(
            route.get("orderTopicConf").is_none_or(|v| v.is_null()),
            "off by default: {route}"
        );
        let r = invoke(&c, update_config("orderMessageEnable=true\n")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let route = body_json(&invoke(&c, route_request("OrderTopic")).await);
        assert_eq!(route["orderTopicConf"], "broker-a:4", "{route}");
        let r = invoke(
            &c,
            RemotingCommand::request(request_code::GET_NAMESRV_CONFIG),
        )
        .await;
        let text = String::from_utf8(r.body.to_vec()).unwrap();
        assert!(text.contains("orderMessageEnable=true"), "{text}");
        assert!(text.contains("listenPort="), "{text}");
        let r = invoke(&c, update_config("listenPort=1234")).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
        assert!(r.remark.unwrap_or_default().contains("restart"));
        let r = invoke(&c, update_config("noSuchKey=1")).await;
        assert_eq!(r.code, response_code::SYSTEM_ERROR);
    });
    drop(server);
    let server = start(dir.path());
    let addr = server.addr;
    run_local(move || async move {
        let c = connect(addr).await;
        let r = invoke(
            &c,
            RemotingCommand::request(request_code::GET_NAMESRV_CONFIG),
        )
        .await;
        let text = String::from_utf8(r.body.to_vec()).unwrap();
        assert!(
            text.contains("orderMessageEnable=true"),
            "kept across a restart: {text}"
        );
    });
}

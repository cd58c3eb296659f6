//! Registration and route queries against the real binary, with JSON and ROCKETMQ binary headers.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use protocol::{request_code, response_code, RemotingCommand, SerializeType};

const MASTER: BrokerIdentity<'static> = BrokerIdentity {
    cluster: "DefaultCluster",
    name: "broker-a",
    addr: "127.0.0.1:10911",
    id: 0,
    ha_addr: "127.0.0.1:10912",
};

#[test]
fn master_registration_serves_routes_cluster_info_and_topic_list() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let response = invoke(
            &client,
            register_request(&MASTER, topic_table(&[("TopicTest", 4), ("TBW102", 8)], 1)),
        )
        .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(
            response.ext("masterAddr"),
            None,
            "a master is told no master address"
        );

        let response = invoke(&client, route_request("TopicTest")).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let text = String::from_utf8_lossy(&response.body).into_owned();
        assert!(
            text.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#),
            "quoted id keys: {text}"
        );
        let route = body_json(&response);
        let brokers = route["brokerDatas"].as_array().expect("brokerDatas");
        assert_eq!(brokers.len(), 1);
        assert_eq!(brokers[0]["cluster"], "DefaultCluster");
        assert_eq!(brokers[0]["brokerName"], "broker-a");
        assert_eq!(brokers[0]["enableActingMaster"], false);
        let queues = route["queueDatas"].as_array().expect("queueDatas");
        assert_eq!(queues.len(), 1);
        assert_eq!(queues[0]["brokerName"], "broker-a");
        assert_eq!(queues[0]["readQueueNums"], 4);
        assert_eq!(queues[0]["writeQueueNums"], 4);
        assert_eq!(queues[0]["perm"], 6);
        assert_eq!(queues[0]["topicSysFlag"], 0);
        assert_eq!(route["filterServerTable"], serde_json::json!({}));

        let response = invoke(
            &client,
            RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        let info = body_json(&response);
        assert_eq!(
            info["clusterAddrTable"]["DefaultCluster"],
            serde_json::json!(["broker-a"])
        );
        assert_eq!(
            info["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"],
            "127.0.0.1:10911"
        );

        let response = invoke(
            &client,
            RemotingCommand::request(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        assert_eq!(
            body_json(&response)["topicList"],
            serde_json::json!(["TBW102", "TopicTest"])
        );

        let response = invoke(
            &client,
            RemotingCommand::request(request_code::GET_TOPICS_BY_CLUSTER)
                .with_ext("cluster", "DefaultCluster"),
        )
        .await;
        assert_eq!(
            body_json(&response)["topicList"],
            serde_json::json!(["TBW102", "TopicTest"])
        );

        let response = invoke(
            &client,
            RemotingCommand::request(request_code::DELETE_TOPIC_IN_NAMESRV)
                .with_ext("topic", "TBW102"),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        let response = invoke(&client, route_request("TBW102")).await;
        assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
    });
}

#[test]
fn unknown_topic_is_topic_not_exist_with_javas_remark() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let response = invoke(&client, route_request("NoSuchTopic")).await;
        assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
        assert_eq!(
            response.remark.as_deref(),
            Some("No topic route info in name server for the topic: NoSuchTopic")
        );
    });
}

#[test]
fn binary_headers_register_a_slave_that_learns_its_masters_ha_address() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let master = register_request(&MASTER, topic_table(&[("TopicTest", 4)], 1))
            .with_serialize_type(SerializeType::RocketMq);
        let response = invoke(&client, master).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(
            response.serialize_type,
            SerializeType::RocketMq,
            "answered in the request's header type"
        );

        let slave = BrokerIdentity {
            id: 1,
            addr: "127.0.0.2:10911",
            ha_addr: "127.0.0.2:10912",
            ..MASTER
        };
        // The slave's own topic table must not change the route.
        let request = register_request(&slave, topic_table(&[("TopicTest", 16)], 5))
            .with_serialize_type(SerializeType::RocketMq);
        let response = invoke(&client, request).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(response.serialize_type, SerializeType::RocketMq);
        assert_eq!(response.ext("haServerAddr"), Some("127.0.0.1:10912"));
        assert_eq!(response.ext("masterAddr"), Some("127.0.0.1:10911"));

        let response = invoke(
            &client,
            route_request("TopicTest").with_serialize_type(SerializeType::RocketMq),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        let route = body_json(&response);
        assert_eq!(route["queueDatas"][0]["readQueueNums"], 4);
        assert_eq!(
            route["brokerDatas"][0]["brokerAddrs"],
            serde_json::json!({"0": "127.0.0.1:10911", "1": "127.0.0.2:10911"})
        );
    });
}

#[test]
fn java_style_body_and_data_version_query() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        // What a Java 4.9 broker writes with fastjson: extra fields, numbers as numbers.
        let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000123},"topicConfigTable":{"OrderTopic":{"order":true,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"OrderTopic","topicSysFlag":0,"writeQueueNums":2}}}}"#;
        let request = RemotingCommand::request(request_code::REGISTER_BROKER)
            .with_ext("brokerName", "broker-b")
            .with_ext("brokerAddr", "127.0.0.3:10911")
            .with_ext("clusterName", "C1")
            .with_ext("haServerAddr", "127.0.0.3:10912")
            .with_ext("brokerId", "0")
            .with_ext("compressed", "false")
            .with_body(&body[..]);
        let response = invoke(&client, request).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let route = body_json(&invoke(&client, route_request("OrderTopic")).await);
        assert_eq!(route["queueDatas"][0]["readQueueNums"], 8);
        assert_eq!(route["queueDatas"][0]["writeQueueNums"], 2);

        let query = |counter: i64| {
            RemotingCommand::request(request_code::QUERY_DATA_VERSION)
                .with_ext("brokerName", "broker-b")
                .with_ext("brokerAddr", "127.0.0.3:10911")
                .with_ext("clusterName", "C1")
                .with_ext("brokerId", "0")
                .with_body(format!(
                    r#"{{"counter":{counter},"stateVersion":0,"timestamp":1700000000123}}"#
                ))
        };
        let same = invoke(&client, query(3)).await;
        assert_eq!(same.code, response_code::SUCCESS);
        assert_eq!(same.ext("changed"), Some("false"));
        assert_eq!(body_json(&same)["counter"], 3);
        let newer = invoke(&client, query(4)).await;
        assert_eq!(newer.ext("changed"), Some("true"));
        assert_eq!(
            body_json(&newer)["counter"],
            3,
            "the stored version is returned"
        );
    });
}

#[test]
fn bad_requests_get_errors_and_the_connection_keeps_serving() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let garbage_body = register_request(&MASTER, topic_table(&[("T", 1)], 1))
            .with_ext("bodyCrc32", "0")
            .with_body(&b"{not json"[..]);
        let response = invoke(&client, garbage_body).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        assert!(
            response
                .remark
                .as_deref()
                .unwrap_or("")
                .contains("register broker body"),
            "{:?}",
            response.remark
        );

        let wrong_crc =
            register_request(&MASTER, topic_table(&[("T", 1)], 1)).with_ext("bodyCrc32", "12345");
        let response = invoke(&client, wrong_crc).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        assert!(
            response.remark.as_deref().unwrap_or("").contains("crc32"),
            "{:?}",
            response.remark
        );

        let compressed =
            register_request(&MASTER, topic_table(&[("T", 1)], 1)).with_ext("compressed", "true");
        let response = invoke(&client, compressed).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        assert!(
            response
                .remark
                .as_deref()
                .unwrap_or("")
                .contains("compressed register broker body"),
            "a JSON body sent as compressed: {:?}",
            response.remark
        );

        let missing =
            RemotingCommand::request(request_code::REGISTER_BROKER).with_ext("brokerName", "x");
        let response = invoke(&client, missing).await;
        assert_eq!(response.code, response_code::SYSTEM_ERROR);
        assert!(
            response
                .remark
                .as_deref()
                .unwrap_or("")
                .contains("brokerAddr"),
            "{:?}",
            response.remark
        );

        let bad_number =
            register_request(&MASTER, topic_table(&[("T", 1)], 1)).with_ext("brokerId", "zero");
        assert_eq!(
            invoke(&client, bad_number).await.code,
            response_code::SYSTEM_ERROR
        );

        let response = invoke(&client, RemotingCommand::request(9999)).await;
        assert_eq!(response.code, response_code::REQUEST_CODE_NOT_SUPPORTED);
        assert!(
            response.remark.as_deref().unwrap_or("").contains("9999"),
            "{:?}",
            response.remark
        );

        let kv = RemotingCommand::request(request_code::GET_KV_CONFIG)
            .with_ext("namespace", "ORDER_TOPIC_CONFIG")
            .with_ext("key", "T");
        assert_eq!(
            invoke(&client, kv).await.code,
            response_code::QUERY_NOT_FOUND
        );

        // None of the bad requests registered anything, and the same connection still works.
        assert!(registered_broker_names(&client).await.is_empty());
        let response = invoke(
            &client,
            register_request(&MASTER, topic_table(&[("T", 1)], 1)),
        )
        .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(
            registered_broker_names(&client).await,
            vec!["broker-a".to_owned()]
        );
    });
}

#[test]
fn oneway_requests_get_no_answer_but_take_effect() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let mut raw = RawConnection::connect(addr);
        let mut oneway = register_request(&MASTER, topic_table(&[("T", 1)], 1)).with_opaque(5);
        oneway.mark_oneway();
        raw.send(&oneway);
        // The next answer on this connection must be the route query's, not the oneway's.
        let response = raw.invoke(route_request("T"));
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        assert_eq!(
            body_json(&response)["brokerDatas"][0]["brokerName"],
            "broker-a"
        );
    });
}

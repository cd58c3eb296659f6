//! JSON bodies as RocketMQ's Java (fastjson) and C++ code write them, typed by hand, parsed field by
//! field; and what we write checked for the shapes Java clients need.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use protocol::body::*;

#[test]
fn route_data_from_the_java_name_server_with_unquoted_keys() {
    let json = br#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
    let route: TopicRouteData = from_json(json).unwrap();
    assert_eq!(route.order_topic_conf, None);
    assert_eq!(route.broker_datas.len(), 1);
    let broker = &route.broker_datas[0];
    assert_eq!(broker.cluster, "DefaultCluster");
    assert_eq!(broker.broker_name, "broker-a");
    assert_eq!(broker.master_addr(), Some("192.168.0.1:10911"));
    assert_eq!(
        broker.broker_addrs.get(&1).map(String::as_str),
        Some("192.168.0.2:10911")
    );
    assert!(!broker.enable_acting_master);
    let queue = &route.queue_datas[0];
    assert_eq!(
        (
            queue.read_queue_nums,
            queue.write_queue_nums,
            queue.perm,
            queue.topic_sys_flag
        ),
        (4, 4, 6, 0)
    );
    assert!(route.filter_server_table.is_empty());
}

#[test]
fn route_data_we_write_is_standard_json_with_enable_acting_master() {
    let mut broker = BrokerData {
        cluster: "c".into(),
        broker_name: "b".into(),
        ..BrokerData::default()
    };
    broker.broker_addrs.insert(0, "127.0.0.1:10911".into());
    let route = TopicRouteData {
        broker_datas: vec![broker],
        queue_datas: vec![QueueData {
            broker_name: "b".into(),
            read_queue_nums: 8,
            write_queue_nums: 8,
            perm: 6,
            topic_sys_flag: 0,
        }],
        ..TopicRouteData::default()
    };
    let text = String::from_utf8(to_json(&route)).unwrap();
    assert!(
        text.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#),
        "{text}"
    );
    assert!(text.contains(r#""enableActingMaster":false"#), "{text}");
    assert!(text.contains(r#""filterServerTable":{}"#), "{text}");
    assert!(text.contains(r#""readQueueNums":8"#), "{text}");
    assert!(!text.contains("orderTopicConf"), "{text}");
    // Standard JSON: a strict parser reads it without our key rewrite.
    let strict: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(strict["brokerDatas"][0]["brokerName"], "b");
}

#[test]
fn java_heartbeat_with_enum_names() {
    let json = br#"{"clientID":"192.168.0.5@12345","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"cg","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"TopicTest"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],"withoutSub":false}"#;
    let hb: HeartbeatData = from_json(json).unwrap();
    assert_eq!(hb.client_id, "192.168.0.5@12345");
    assert_eq!(
        hb.producer_data_set,
        vec![ProducerData {
            group_name: "CLIENT_INNER_PRODUCER".into()
        }]
    );
    let c = &hb.consumer_data_set[0];
    assert_eq!(c.group_name, "cg");
    assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
    assert_eq!(c.message_model, MessageModel::Clustering);
    assert_eq!(
        c.consume_from_where,
        ConsumeFromWhere::ConsumeFromFirstOffset
    );
    let s = &c.subscription_data_set[0];
    assert_eq!(s.topic, "TopicTest");
    assert_eq!(s.sub_string, "TagA");
    assert_eq!(s.tags_set, vec!["TagA".to_string()]);
    assert_eq!(s.code_set, vec![2_598_919]);
    assert_eq!(s.sub_version, 1_700_000_000_000);
    assert_eq!(s.expression_type, "TAG");
    assert!(!hb.without_sub);
    // Written back, the enums are names again.
    let text = String::from_utf8(to_json(&hb)).unwrap();
    assert!(
        text.contains(r#""consumeType":"CONSUME_PASSIVELY""#),
        "{text}"
    );
    assert!(text.contains(r#""clientID":"192.168.0.5@12345""#), "{text}");
}

#[test]
fn cpp_heartbeat_with_enum_ordinals() {
    let json = br#"{"clientID":"10.0.0.9@777#1","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,"groupName":"cg","messageModel":0,"subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"T"}],"unitMode":false}],"producerDataSet":[],"isWithoutSub":true}"#;
    let hb: HeartbeatData = from_json(json).unwrap();
    let c = &hb.consumer_data_set[0];
    assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
    assert_eq!(c.message_model, MessageModel::Broadcasting);
    assert_eq!(
        c.consume_from_where,
        ConsumeFromWhere::ConsumeFromFirstOffset
    );
    assert_eq!(c.subscription_data_set[0].sub_string, SUB_ALL);
    assert!(hb.without_sub);
    assert_eq!(hb.heartbeat_fingerprint, 0);
    // Values this crate does not know are kept, not rejected.
    let odd: HeartbeatData =
        from_json(br#"{"consumerDataSet":[{"consumeType":"CONSUME_LATER","messageModel":9}]}"#)
            .unwrap();
    assert_eq!(
        odd.consumer_data_set[0].consume_type,
        ConsumeType::Unknown("CONSUME_LATER".into())
    );
    assert_eq!(
        odd.consumer_data_set[0].message_model,
        MessageModel::Unknown("9".into())
    );
}

#[test]
fn register_broker_body_from_a_java_broker() {
    let json = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000001},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"readable":true,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
    let body: RegisterBrokerBody = from_json(json).unwrap();
    let w = &body.topic_config_serialize_wrapper;
    assert_eq!(
        w.data_version,
        DataVersion {
            state_version: 0,
            timestamp: 1_700_000_000_000,
            counter: 3
        }
    );
    assert_eq!(
        w.mapping_data_version.map(|v| v.timestamp),
        Some(1_700_000_000_001)
    );
    let t = &w.topic_config_table["TopicTest"];
    assert_eq!(t.topic_name, "TopicTest");
    assert_eq!(
        (
            t.read_queue_nums,
            t.write_queue_nums,
            t.perm,
            t.topic_sys_flag
        ),
        (4, 4, 6, 0)
    );
    assert_eq!(t.topic_filter_type, "SINGLE_TAG");
    assert!(!t.order);
    assert!(body.filter_server_list.is_empty());
    // A TopicConfig with only a name gets Java's defaults.
    let bare: TopicConfig = from_json(br#"{"topicName":"X"}"#).unwrap();
    assert_eq!(
        (bare.read_queue_nums, bare.write_queue_nums, bare.perm),
        (16, 16, 6)
    );
}

#[test]
fn consumer_offsets_with_integer_queue_keys() {
    let json = br#"{"offsetTable":{"TopicTest@cg":{0:12,1:7},"%RETRY%cg@cg":{0:0}}}"#;
    let w: ConsumerOffsetSerializeWrapper = from_json(json).unwrap();
    assert_eq!(w.offset_table["TopicTest@cg"].get(&0), Some(&12));
    assert_eq!(w.offset_table["TopicTest@cg"].get(&1), Some(&7));
    assert_eq!(
        split_offset_table_key("%RETRY%cg@cg"),
        Some(("%RETRY%cg", "cg"))
    );
    assert_eq!(offset_table_key("TopicTest", "cg"), "TopicTest@cg");
    let text = String::from_utf8(to_json(&w)).unwrap();
    assert!(text.contains(r#""TopicTest@cg":{"0":12,"1":7}"#), "{text}");
}

#[test]
fn cluster_info_topic_list_and_locks() {
    let json = br#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#;
    let info: ClusterInfo = from_json(json).unwrap();
    assert_eq!(
        info.broker_addr_table["broker-a"].master_addr(),
        Some("10.0.0.1:10911")
    );
    assert!(info.cluster_addr_table["DefaultCluster"].contains("broker-a"));

    let list: TopicList = from_json(br#"{"topicList":["A","B"]}"#).unwrap();
    assert_eq!(list.topic_list.len(), 2);
    assert_eq!(list.broker_addr, None);

    let lock: LockBatchRequestBody = from_json(br#"{"clientId":"c1","consumerGroup":"cg","mqSet":[{"brokerName":"broker-a","queueId":1,"topic":"T"}],"onlyThisBroker":false}"#).unwrap();
    assert_eq!(lock.client_id, "c1");
    assert_eq!(lock.consumer_group, "cg");
    assert_eq!(
        lock.mq_set,
        vec![MessageQueue {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            queue_id: 1
        }]
    );
    let resp = LockBatchResponseBody {
        lock_ok_mq_set: lock.mq_set.clone(),
    };
    assert_eq!(
        String::from_utf8(to_json(&resp)).unwrap(),
        r#"{"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":1}]}"#
    );
    let ids: GetConsumerListByGroupResponseBody =
        from_json(br#"{"consumerIdList":["a@1","b@2"]}"#).unwrap();
    assert_eq!(
        ids.consumer_id_list,
        vec!["a@1".to_string(), "b@2".to_string()]
    );
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(from_json::<TopicRouteData>(b"{0:").is_err());
    assert!(from_json::<HeartbeatData>(b"\xff\xfe").is_err());
    assert!(from_json::<ClusterInfo>(br#""text""#).is_err());
}

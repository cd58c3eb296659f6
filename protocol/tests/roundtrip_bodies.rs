//! Property tests: every JSON body survives to_json -> from_json, also after its integer map keys
//! are unquoted the way fastjson writes them.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt::Debug;

use proptest::collection::{btree_map, btree_set, vec};
use proptest::prelude::*;
use protocol::body::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn text() -> impl Strategy<Value = String> {
    // Any characters, including quotes, backslashes, control and non-BMP ones.
    any::<String>().prop_map(|s| s.chars().take(12).collect())
}

fn broker_data() -> impl Strategy<Value = BrokerData> {
    (
        text(),
        text(),
        btree_map(any::<i64>(), text(), 0..3),
        proptest::option::of(text()),
        any::<bool>(),
    )
        .prop_map(
            |(cluster, broker_name, broker_addrs, zone_name, enable_acting_master)| BrokerData {
                cluster,
                broker_name,
                broker_addrs,
                zone_name,
                enable_acting_master,
            },
        )
}

fn queue_data() -> impl Strategy<Value = QueueData> {
    (
        text(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
    )
        .prop_map(
            |(broker_name, read_queue_nums, write_queue_nums, perm, topic_sys_flag)| QueueData {
                broker_name,
                read_queue_nums,
                write_queue_nums,
                perm,
                topic_sys_flag,
            },
        )
}

fn route() -> impl Strategy<Value = TopicRouteData> {
    (
        proptest::option::of(text()),
        vec(queue_data(), 0..3),
        vec(broker_data(), 0..3),
        btree_map(text(), vec(text(), 0..2), 0..2),
    )
        .prop_map(
            |(order_topic_conf, queue_datas, broker_datas, filter_server_table)| TopicRouteData {
                order_topic_conf,
                queue_datas,
                broker_datas,
                filter_server_table,
                topic_queue_mapping_by_broker: None,
            },
        )
}

fn data_version() -> impl Strategy<Value = DataVersion> {
    (any::<i64>(), any::<i64>(), any::<i64>()).prop_map(|(state_version, timestamp, counter)| {
        DataVersion {
            state_version,
            timestamp,
            counter,
        }
    })
}

fn topic_config() -> impl Strategy<Value = TopicConfig> {
    (
        text(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        prop_oneof![Just("SINGLE_TAG"), Just("MULTI_TAG")],
        any::<i32>(),
        any::<bool>(),
        btree_map(text(), text(), 0..2),
    )
        .prop_map(
            |(topic_name, r, w, perm, filter, sys, order, attributes)| TopicConfig {
                topic_name,
                read_queue_nums: r,
                write_queue_nums: w,
                perm,
                topic_filter_type: filter.to_owned(),
                topic_sys_flag: sys,
                order,
                attributes,
            },
        )
}

fn register_body() -> impl Strategy<Value = RegisterBrokerBody> {
    (
        btree_map(text(), topic_config(), 0..3),
        data_version(),
        proptest::option::of(data_version()),
        vec(text(), 0..2),
    )
        .prop_map(
            |(topic_config_table, data_version, mapping_data_version, filter_server_list)| {
                RegisterBrokerBody {
                    topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                        topic_config_table,
                        data_version,
                        topic_queue_mapping_info_map: None,
                        topic_queue_mapping_detail_map: None,
                        mapping_data_version,
                    },
                    filter_server_list,
                }
            },
        )
}

fn consume_type() -> impl Strategy<Value = ConsumeType> {
    prop_oneof![
        Just(ConsumeType::ConsumeActively),
        Just(ConsumeType::ConsumePassively),
        Just(ConsumeType::ConsumePop),
        "X_[A-Z]{1,6}".prop_map(ConsumeType::Unknown),
    ]
}

fn message_model() -> impl Strategy<Value = MessageModel> {
    prop_oneof![
        Just(MessageModel::Broadcasting),
        Just(MessageModel::Clustering)
    ]
}

fn consume_from_where() -> impl Strategy<Value = ConsumeFromWhere> {
    (0i64..6).prop_map(ConsumeFromWhere::from_ordinal)
}

fn subscription() -> impl Strategy<Value = SubscriptionData> {
    (
        any::<bool>(),
        text(),
        text(),
        vec(text(), 0..3),
        vec(any::<i32>(), 0..3),
        any::<i64>(),
        prop_oneof![Just("TAG"), Just("SQL92")],
    )
        .prop_map(
            |(
                class_filter_mode,
                topic,
                sub_string,
                tags_set,
                code_set,
                sub_version,
                expression_type,
            )| SubscriptionData {
                class_filter_mode,
                topic,
                sub_string,
                tags_set,
                code_set,
                sub_version,
                expression_type: expression_type.to_owned(),
            },
        )
}

fn heartbeat() -> impl Strategy<Value = HeartbeatData> {
    let consumer = (
        text(),
        consume_type(),
        message_model(),
        consume_from_where(),
        vec(subscription(), 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(
                group_name,
                consume_type,
                message_model,
                consume_from_where,
                subscription_data_set,
                unit_mode,
            )| ConsumerData {
                group_name,
                consume_type,
                message_model,
                consume_from_where,
                subscription_data_set,
                unit_mode,
            },
        );
    (
        text(),
        vec(
            text().prop_map(|group_name| ProducerData { group_name }),
            0..3,
        ),
        vec(consumer, 0..3),
        any::<i32>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                client_id,
                producer_data_set,
                consumer_data_set,
                heartbeat_fingerprint,
                without_sub,
            )| HeartbeatData {
                client_id,
                producer_data_set,
                consumer_data_set,
                heartbeat_fingerprint,
                without_sub,
            },
        )
}

fn offsets() -> impl Strategy<Value = ConsumerOffsetSerializeWrapper> {
    (
        btree_map(text(), btree_map(any::<i32>(), any::<i64>(), 0..4), 0..3),
        proptest::option::of(data_version()),
    )
        .prop_map(
            |(offset_table, data_version)| ConsumerOffsetSerializeWrapper {
                offset_table,
                data_version,
            },
        )
}

fn message_queue() -> impl Strategy<Value = MessageQueue> {
    (text(), text(), any::<i32>()).prop_map(|(topic, broker_name, queue_id)| MessageQueue {
        topic,
        broker_name,
        queue_id,
    })
}

fn cluster_info() -> impl Strategy<Value = ClusterInfo> {
    (
        btree_map(text(), broker_data(), 0..3),
        btree_map(text(), btree_set(text(), 0..3), 0..3),
    )
        .prop_map(|(broker_addr_table, cluster_addr_table)| ClusterInfo {
            broker_addr_table,
            cluster_addr_table,
        })
}

/// Rewrites every `"123":` object key into fastjson's bare `123:` form. (A string-keyed map whose
/// key happens to be digits is rewritten too; parsing quotes it back, so the round trip still holds.)
fn unquote_integer_keys(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let bytes = json.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    let mut string_start = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
                let inner = &json[string_start + 1..i];
                let is_key = bytes.get(i + 1) == Some(&b':');
                let digits = inner.strip_prefix('-').unwrap_or(inner);
                let numeric = !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit());
                if is_key && numeric {
                    out.push_str(inner);
                } else {
                    out.push_str(&json[string_start..=i]);
                }
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            string_start = i;
        } else {
            out.push(b as char);
        }
        i += 1;
    }
    out
}

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(
    value: &T,
) -> Result<(), TestCaseError> {
    let json = to_json(value);
    prop_assert_eq!(
        &from_json::<T>(&json).map_err(|e| TestCaseError::fail(e.to_string()))?,
        value
    );
    let text = String::from_utf8(json).unwrap();
    let fastjson = unquote_integer_keys(&text);
    prop_assert_eq!(
        &from_json::<T>(fastjson.as_bytes())
            .map_err(|e| TestCaseError::fail(format!("{e}: {fastjson}")))?,
        value
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn topic_route_data(v in route()) { round_trip(&v)?; }

    #[test]
    fn register_broker_body(v in register_body()) { round_trip(&v)?; }

    #[test]
    fn topic_config_wrapper(v in register_body()) { round_trip(&v.topic_config_serialize_wrapper)?; }

    #[test]
    fn heartbeat_data(v in heartbeat()) { round_trip(&v)?; }

    #[test]
    fn consumer_offsets(v in offsets()) { round_trip(&v)?; }

    #[test]
    fn cluster_info_body(v in cluster_info()) { round_trip(&v)?; }

    #[test]
    fn topic_list(topics in btree_set(text(), 0..5), addr in proptest::option::of(text())) {
        round_trip(&TopicList { topic_list: topics, broker_addr: addr })?;
    }

    #[test]
    fn kv_table(table in btree_map(text(), text(), 0..5)) { round_trip(&KVTable { table })?; }

    #[test]
    fn consumer_list(ids in vec(text(), 0..5)) {
        round_trip(&GetConsumerListByGroupResponseBody { consumer_id_list: ids })?;
    }

    #[test]
    fn lock_bodies(group in text(), client in text(), only in any::<bool>(), mqs in vec(message_queue(), 0..4)) {
        round_trip(&LockBatchRequestBody { consumer_group: group.clone(), client_id: client.clone(), only_this_broker: only, mq_set: mqs.clone() })?;
        round_trip(&UnlockBatchRequestBody { consumer_group: group, client_id: client, only_this_broker: only, mq_set: mqs.clone() })?;
        round_trip(&LockBatchResponseBody { lock_ok_mq_set: mqs })?;
    }
}

#[test]
fn the_unquoting_helper_really_unquotes() {
    // Guards the property tests above: they must exercise the bare-key form.
    let mut addrs = BTreeMap::new();
    addrs.insert(0i64, "a:1".to_string());
    addrs.insert(-3i64, "\"0\":".to_string());
    let b = BrokerData {
        broker_addrs: addrs,
        ..BrokerData::default()
    };
    let fast = unquote_integer_keys(&String::from_utf8(to_json(&b)).unwrap());
    assert!(fast.contains(r#"{-3:"\"0\":",0:"a:1"}"#), "{fast}");
}

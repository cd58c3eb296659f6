//! Broker registration bodies: RegisterBrokerBody, TopicConfigSerializeWrapper, TopicConfig, DataVersion.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::route::perm;

/// A version stamp of a broker's topic (or offset) table; the name server compares it to skip
/// unchanged registrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    // Fields are declared in fastjson's (alphabetical) order, so our JSON matches Java's byte for byte.
    #[serde(default)]
    pub counter: i64,
    #[serde(default)]
    pub state_version: i64,
    #[serde(default)]
    pub timestamp: i64,
}

impl DataVersion {
    /// Marks a change: counter + 1, new timestamp.
    pub fn next(&mut self, now_millis: i64) {
        self.counter = self.counter.wrapping_add(1);
        self.timestamp = now_millis;
    }
}

fn default_queue_nums() -> i32 {
    16
}

fn default_perm() -> i32 {
    perm::READ | perm::WRITE
}

fn default_filter_type() -> String {
    "SINGLE_TAG".to_owned()
}

/// One topic's configuration on a broker (RocketMQ's `TopicConfig`; defaults are Java's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfig {
    // Declared in fastjson's (alphabetical) order, as Java writes them.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    #[serde(default)]
    pub order: bool,
    #[serde(default = "default_perm")]
    pub perm: i32,
    #[serde(default = "default_queue_nums")]
    pub read_queue_nums: i32,
    /// "SINGLE_TAG" or "MULTI_TAG".
    #[serde(default = "default_filter_type")]
    pub topic_filter_type: String,
    #[serde(default)]
    pub topic_name: String,
    #[serde(default)]
    pub topic_sys_flag: i32,
    #[serde(default = "default_queue_nums")]
    pub write_queue_nums: i32,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            topic_name: String::new(),
            read_queue_nums: default_queue_nums(),
            write_queue_nums: default_queue_nums(),
            perm: default_perm(),
            topic_filter_type: default_filter_type(),
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    /// A topic with `queues` read and write queues and the default permissions.
    pub fn new(topic_name: impl Into<String>, queues: i32) -> Self {
        TopicConfig {
            topic_name: topic_name.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            ..TopicConfig::default()
        }
    }
}

/// UPDATE_AND_CREATE_TOPIC_LIST (18) body: topics to create or update at once. Their `attributes`
/// are signed (`+key` / `-key`), as in a modification string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CreateTopicListRequestBody {
    #[serde(default)]
    pub topic_config_list: Vec<TopicConfig>,
}

/// A broker's topic table with its version (topics.json, GET_ALL_TOPIC_CONFIG, and inside the
/// registration body). The RocketMQ 5 static-topic mapping fields are kept as raw JSON; they are
/// written only when set (topics.json has none, as Java's), see [`RegisterBrokerBody::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    // Declared in fastjson's (alphabetical) order, as Java writes them.
    #[serde(default)]
    pub data_version: DataVersion,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_data_version: Option<DataVersion>,
    #[serde(default)]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_detail_map: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_info_map: Option<serde_json::Value>,
}

/// REGISTER_BROKER body. As JSON (header `compressed=false`, Java's default) it is this struct;
/// with `compressed=true` it is RocketMQ's binary layout inside a zlib stream, read by
/// [`decode_compressed_register_body`](super::decode_compressed_register_body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    #[serde(default)]
    pub filter_server_list: Vec<String>,
    #[serde(default)]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

impl RegisterBrokerBody {
    /// The body a RocketMQ 5 broker sends: its wrapper is a `TopicConfigAndMappingSerializeWrapper`,
    /// whose mapping fields fastjson always writes (empty maps, a mapping data version). Name
    /// servers that decode it strictly (rocketmq-rust's) refuse a body without them. Without
    /// static topics the mapping version is all zeros (what Java's name server assumes for none).
    pub fn new(mut wrapper: TopicConfigSerializeWrapper, filter_server_list: Vec<String>) -> Self {
        let empty_map = || Some(serde_json::Value::Object(serde_json::Map::new()));
        if wrapper.mapping_data_version.is_none() {
            wrapper.mapping_data_version = Some(DataVersion::default());
        }
        if wrapper.topic_queue_mapping_detail_map.is_none() {
            wrapper.topic_queue_mapping_detail_map = empty_map();
        }
        if wrapper.topic_queue_mapping_info_map.is_none() {
            wrapper.topic_queue_mapping_info_map = empty_map();
        }
        RegisterBrokerBody {
            filter_server_list,
            topic_config_serialize_wrapper: wrapper,
        }
    }
}

//! Broker registration bodies: RegisterBrokerBody, TopicConfigSerializeWrapper, TopicConfig, DataVersion.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A version stamp of a broker's topic (or offset) table; the name server compares it to skip
/// unchanged registrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    #[serde(default)]
    pub state_version: i64,
    #[serde(default)]
    pub timestamp: i64,
    #[serde(default)]
    pub counter: i64,
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
    super::perm::READ | super::perm::WRITE
}

fn default_filter_type() -> String {
    "SINGLE_TAG".to_owned()
}

/// One topic's configuration on a broker (RocketMQ's `TopicConfig`; defaults are Java's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfig {
    #[serde(default)]
    pub topic_name: String,
    #[serde(default = "default_queue_nums")]
    pub read_queue_nums: i32,
    #[serde(default = "default_queue_nums")]
    pub write_queue_nums: i32,
    #[serde(default = "default_perm")]
    pub perm: i32,
    /// "SINGLE_TAG" or "MULTI_TAG".
    #[serde(default = "default_filter_type")]
    pub topic_filter_type: String,
    #[serde(default)]
    pub topic_sys_flag: i32,
    #[serde(default)]
    pub order: bool,
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
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

/// A broker's topic table with its version (also the GET_ALL_TOPIC_CONFIG response body). The
/// RocketMQ 5 mapping fields are kept as raw JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    #[serde(default)]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(default)]
    pub data_version: DataVersion,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_info_map: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_detail_map: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_data_version: Option<DataVersion>,
}

/// REGISTER_BROKER body (uncompressed form; `compressed=true` bodies are not supported).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    #[serde(default)]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    #[serde(default)]
    pub filter_server_list: Vec<String>,
}

//! Consumer offset tables: ConsumerOffsetSerializeWrapper (GET_ALL_CONSUMER_OFFSET body and the
//! broker's consumerOffset.json).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::register::DataVersion;

/// Separates topic and group in offset table keys: `topic@group`.
pub const TOPIC_GROUP_SEPARATOR: char = '@';

/// `topic@group` to (queueId to committed offset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerOffsetSerializeWrapper {
    #[serde(default)]
    pub offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_version: Option<DataVersion>,
}

/// The offset table key of a topic and group.
pub fn offset_table_key(topic: &str, group: &str) -> String {
    let mut key = String::with_capacity(topic.len() + group.len() + 1);
    key.push_str(topic);
    key.push(TOPIC_GROUP_SEPARATOR);
    key.push_str(group);
    key
}

/// Splits an offset table key into topic and group (at the last '@', since topics cannot hold one).
pub fn split_offset_table_key(key: &str) -> Option<(&str, &str)> {
    key.rsplit_once(TOPIC_GROUP_SEPARATOR)
}

//! Subscription groups (`config/subscriptionGroup.json`): per consumer group settings, created on first
//! heartbeat when `autoCreateSubscriptionGroup` is on.

use std::collections::BTreeMap;
use std::path::Path;

use protocol::body::DataVersion;
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::state::topics::now_ms;

fn yes() -> bool {
    true
}
fn one() -> i32 {
    1
}
fn sixteen() -> i32 {
    16
}
fn one_long() -> i64 {
    1
}

/// RocketMQ's `SubscriptionGroupConfig` (4.x fields, Java's defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupConfig {
    #[serde(default)]
    pub group_name: String,
    #[serde(default = "yes")]
    pub consume_enable: bool,
    #[serde(default = "yes")]
    pub consume_from_min_enable: bool,
    #[serde(default = "yes")]
    pub consume_broadcast_enable: bool,
    #[serde(default = "one")]
    pub retry_queue_nums: i32,
    #[serde(default = "sixteen")]
    pub retry_max_times: i32,
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default = "one_long")]
    pub which_broker_when_consume_slowly: i64,
    #[serde(default = "yes")]
    pub notify_consumer_ids_changed_enable: bool,
}

impl SubscriptionGroupConfig {
    pub fn new(group: &str) -> Self {
        SubscriptionGroupConfig {
            group_name: group.to_owned(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
        }
    }
}

/// The file and GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (`SubscriptionGroupWrapper`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupTable {
    #[serde(default)]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    #[serde(default)]
    pub data_version: DataVersion,
}

/// Groups RocketMQ's broker creates at start.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_SYS_RMQ_TRANS",
];

impl SubscriptionGroupTable {
    pub fn load(path: &Path) -> Result<SubscriptionGroupTable, BrokerError> {
        let Some(bytes) = crate::state::persist::read_optional(path)
            .map_err(|e| BrokerError::io(path.display(), e))?
        else {
            return Ok(SubscriptionGroupTable::default());
        };
        protocol::body::from_json(&bytes).map_err(|e| BrokerError::BadMetadata {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }

    pub fn to_json(&self) -> Vec<u8> {
        protocol::body::to_json(self)
    }

    /// Adds the system groups; true when the table changed.
    pub fn add_system_groups(&mut self) -> bool {
        let mut changed = false;
        for group in SYSTEM_GROUPS {
            if !self.subscription_group_table.contains_key(*group) {
                self.subscription_group_table
                    .insert((*group).to_owned(), SubscriptionGroupConfig::new(group));
                changed = true;
            }
        }
        if changed {
            self.data_version.next(now_ms());
        }
        changed
    }

    /// Creates the group with defaults if it is missing; true when it was created.
    pub fn ensure(&mut self, group: &str) -> bool {
        if self.subscription_group_table.contains_key(group) {
            return false;
        }
        self.subscription_group_table
            .insert(group.to_owned(), SubscriptionGroupConfig::new(group));
        self.data_version.next(now_ms());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_persist_and_parse_java_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subscriptionGroup.json");
        let mut table = SubscriptionGroupTable::load(&path).unwrap();
        assert!(table.add_system_groups());
        assert!(table.ensure("cg1"));
        assert!(!table.ensure("cg1"));
        crate::state::persist::write_atomic(&path, &table.to_json()).unwrap();
        assert_eq!(SubscriptionGroupTable::load(&path).unwrap(), table);
        // Java writes all fields; missing ones take Java's defaults.
        let java = br#"{"subscriptionGroupTable":{"g":{"groupName":"g","retryMaxTimes":3}},"dataVersion":{"counter":2,"timestamp":1}}"#;
        let parsed: SubscriptionGroupTable = protocol::body::from_json(java).unwrap();
        let g = &parsed.subscription_group_table["g"];
        assert_eq!(
            (g.retry_max_times, g.retry_queue_nums, g.consume_enable),
            (3, 1, true)
        );
    }
}

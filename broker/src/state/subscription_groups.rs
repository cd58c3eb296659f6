//! Subscription groups (`config/subscriptionGroup.json`): per consumer group settings, created on first
//! heartbeat (or pull, or send-back) when `autoCreateSubscriptionGroup` is on. Shard 0 holds the master
//! table; every other shard a copy kept current by the control shard's events, so pulls on a queue's
//! owner and send-backs on the receiving shard read the group's settings without a hop.

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

/// RocketMQ's `SubscriptionGroupConfig` (4.x fields and 5.x's `consumeMessageOrderly`, Java's defaults).
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
    /// RocketMQ 5: the group consumes FIFO topics in order (the gRPC proxy pops with `order` and tells
    /// the SDKs their subscription is FIFO). Absent in 4.x files and requests: false.
    #[serde(default)]
    pub consume_message_orderly: bool,
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
            consume_message_orderly: false,
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

/// RocketMQ's `Validators.CHARACTER_MAX_LENGTH`: the longest group name a broker creates.
const GROUP_MAX_LENGTH: usize = 255;
/// RocketMQ's `MixAll.CID_RMQ_SYS_PREFIX`: groups created even without `autoCreateSubscriptionGroup`.
const SYS_CONSUMER_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// Whether the broker may create `group` on first use (RocketMQ's `findSubscriptionGroupConfig`):
/// auto-creation is on or it is a system group, and the name is legal (`^[%|a-zA-Z0-9_-]+$`, at most
/// 255 characters).
pub fn may_auto_create(auto_create_subscription_group: bool, group: &str) -> bool {
    let legal = !group.is_empty()
        && group.len() <= GROUP_MAX_LENGTH
        && group
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-'));
    legal && (auto_create_subscription_group || group.starts_with(SYS_CONSUMER_GROUP_PREFIX))
}

/// Groups RocketMQ's broker creates at start.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_RMQ_SYS_TRANS",
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

    pub fn get(&self, group: &str) -> Option<&SubscriptionGroupConfig> {
        self.subscription_group_table.get(group)
    }

    /// Inserts or replaces groups and removes others, with one data version step.
    pub fn change(&mut self, upsert: &[SubscriptionGroupConfig], remove: &[String]) {
        for config in upsert {
            self.subscription_group_table
                .insert(config.group_name.clone(), config.clone());
        }
        for name in remove {
            self.subscription_group_table.remove(name);
        }
        self.data_version.next(now_ms());
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
        let before = table.data_version;
        table.change(&[SubscriptionGroupConfig::new("cg1")], &[]);
        assert!(table.get("cg1").is_some());
        assert_ne!(table.data_version, before);
        table.change(&[SubscriptionGroupConfig::new("cg2")], &["cg1".to_owned()]);
        assert!(table.get("cg1").is_none() && table.get("cg2").is_some());
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
        assert!(!g.consume_message_orderly);
        // RocketMQ 5's field round-trips under its Java name.
        let v5 = br#"{"groupName":"f","consumeMessageOrderly":true,"groupRetryPolicy":{"type":"CUSTOMIZED"}}"#;
        let f: SubscriptionGroupConfig = protocol::body::from_json(v5).unwrap();
        assert!(f.consume_message_orderly);
        let json = String::from_utf8(protocol::body::to_json(&f)).unwrap();
        assert!(json.contains(r#""consumeMessageOrderly":true"#), "{json}");
    }

    #[test]
    fn auto_creation_follows_the_switch_the_name_and_the_system_prefix() {
        assert!(may_auto_create(true, "cg_1-a|%b"));
        assert!(!may_auto_create(false, "cg1"));
        assert!(may_auto_create(false, "CID_RMQ_SYS_TRANS"));
        assert!(!may_auto_create(true, ""));
        assert!(!may_auto_create(true, "a b"));
        assert!(may_auto_create(true, &"g".repeat(255)));
        assert!(!may_auto_create(true, &"g".repeat(256)));
    }
}

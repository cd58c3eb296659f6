//! The topic table (`config/topics.json`): topic configs with a data version, name validation, and the
//! system topics created at start.

use std::collections::BTreeMap;
use std::path::Path;

use protocol::body::{perm, DataVersion, TopicConfig, TopicConfigSerializeWrapper};

use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// The default topic new topics are created from (`AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const DEFAULT_TOPIC: &str = "TBW102";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// RocketMQ 5's timer topic (`TimerMessageStore.TIMER_TOPIC`), where timer messages wait.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// RocketMQ's `TOPIC_MAX_LENGTH`.
pub const TOPIC_MAX_LENGTH: usize = 127;
/// Queues of `SCHEDULE_TOPIC_XXXX` (one per delay level).
pub const SCHEDULE_TOPIC_QUEUE_NUM: i32 = 18;

/// Checks a topic name like RocketMQ's `TopicValidator`: 1..=127 bytes of `[%|a-zA-Z0-9_-]`.
pub fn validate_topic_name(topic: &str) -> Result<(), String> {
    if topic.is_empty() {
        return Err("the topic name is empty".to_owned());
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return Err(format!(
            "the topic name is {} bytes long, longer than the limit of {TOPIC_MAX_LENGTH}",
            topic.len()
        ));
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')))
    {
        return Err(format!(
            "the topic name {topic:?} contains the illegal character {c:?}; allowed: ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    Ok(())
}

/// Topics producers may not send to directly (RocketMQ's `NOT_ALLOWED_SEND_TOPIC_SET`).
pub fn is_not_allowed_send(topic: &str) -> bool {
    matches!(
        topic,
        SCHEDULE_TOPIC | TRANS_HALF_TOPIC | TRANS_OP_HALF_TOPIC | TIMER_TOPIC
    )
}

/// Whether a topic is a consumer group's retry or dead-letter topic.
pub fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// The topic replies to request messages of `cluster` go to (RocketMQ's `MixAll.getReplyTopic`).
pub fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_REPLY_TOPIC")
}

/// The retry topic of a consumer group.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The broker's topics. Shard 0 owns the master copy; other shards hold read-only copies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicTable {
    pub topics: BTreeMap<String, TopicConfig>,
    pub data_version: DataVersion,
}

impl TopicTable {
    /// Loads `topics.json` (RocketMQ's format, a TopicConfigSerializeWrapper); empty when absent.
    pub fn load(path: &Path) -> Result<TopicTable, BrokerError> {
        let Some(bytes) = crate::state::persist::read_optional(path)
            .map_err(|e| BrokerError::io(path.display(), e))?
        else {
            return Ok(TopicTable::default());
        };
        let wrapper: TopicConfigSerializeWrapper =
            protocol::body::from_json(&bytes).map_err(|e| BrokerError::BadMetadata {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(TopicTable {
            topics: wrapper.topic_config_table,
            data_version: wrapper.data_version,
        })
    }

    /// The table as RocketMQ serializes it (topics.json, GET_ALL_TOPIC_CONFIG, registration).
    pub fn wrapper(&self) -> TopicConfigSerializeWrapper {
        TopicConfigSerializeWrapper {
            topic_config_table: self.topics.clone(),
            data_version: self.data_version,
            ..TopicConfigSerializeWrapper::default()
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        protocol::body::to_json(&self.wrapper())
    }

    pub fn get(&self, topic: &str) -> Option<&TopicConfig> {
        self.topics.get(topic)
    }

    /// Every topic's name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(String::as_str)
    }

    /// Inserts or replaces a topic and bumps the data version.
    pub fn upsert(&mut self, config: TopicConfig) {
        self.topics.insert(config.topic_name.clone(), config);
        self.data_version.next(now_ms());
    }

    /// Removes a topic; true when it existed.
    pub fn remove(&mut self, topic: &str) -> bool {
        let existed = self.topics.remove(topic).is_some();
        if existed {
            self.data_version.next(now_ms());
        }
        existed
    }

    /// Adds the system topics RocketMQ's broker creates at start (keeping any stored config of them,
    /// except TBW102 whose presence follows `autoCreateTopicEnable`). True when the table changed.
    pub fn add_system_topics(&mut self, cfg: &BrokerConfig, shards: usize) -> bool {
        let before = self.topics.clone();
        let rw = perm::READ | perm::WRITE;
        let mut add = |name: &str, queues: i32, perm: i32| {
            self.topics
                .entry(name.to_owned())
                .or_insert_with(|| TopicConfig {
                    perm,
                    ..TopicConfig::new(name, queues)
                });
        };
        add(SELF_TEST_TOPIC, 1, rw);
        add(&cfg.broker_cluster_name, 16, perm::INHERIT | rw);
        add(&cfg.broker_name, 1, perm::INHERIT | rw);
        // Each shard-broker has the topic of its own name, as every Apache broker does (clusterRT
        // sends to it); registration gives it to that shard-broker alone.
        if cfg.shards_are_brokers(shards) {
            for shard in 0..shards {
                if let Some(broker) = cfg.shard_broker(shard, shards) {
                    add(&broker.broker_name, 1, perm::INHERIT | rw);
                }
            }
        }
        add(OFFSET_MOVED_EVENT, 1, rw);
        add(SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, rw);
        add(TRANS_HALF_TOPIC, 1, rw);
        add(&reply_topic(&cfg.broker_cluster_name), 1, rw);
        // Apache's TopicConfigManager: one read and one write queue, read-write.
        if cfg.trace_topic_enable {
            add(&cfg.msg_trace_topic_name, 1, rw);
        }
        let queues = i32::try_from(cfg.default_topic_queue_nums).unwrap_or(i32::MAX);
        if cfg.auto_create_topic_enable {
            self.topics.insert(
                DEFAULT_TOPIC.to_owned(),
                TopicConfig {
                    perm: perm::INHERIT | rw,
                    ..TopicConfig::new(DEFAULT_TOPIC, queues)
                },
            );
        } else {
            self.topics.remove(DEFAULT_TOPIC);
        }
        let changed = before != self.topics;
        if changed {
            self.data_version.next(now_ms());
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_rocketmq_rules() {
        assert!(validate_topic_name("TopicTest").is_ok());
        assert!(validate_topic_name("%RETRY%group_1-a|b").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name(&"t".repeat(127)).is_ok());
        let long = validate_topic_name(&"t".repeat(128)).unwrap_err();
        assert!(long.contains("128"), "{long}");
        let bad = validate_topic_name("a b").unwrap_err();
        assert!(bad.contains("' '"), "{bad}");
        assert!(validate_topic_name("tópico").is_err());
    }

    #[test]
    fn system_topics_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let cfg = BrokerConfig::default();
        let mut table = TopicTable::load(&path).unwrap();
        assert!(table.add_system_topics(&cfg, 1));
        let tbw = table.get(DEFAULT_TOPIC).unwrap();
        assert_eq!((tbw.perm, tbw.write_queue_nums), (7, 4));
        assert_eq!(table.get(SCHEDULE_TOPIC).unwrap().read_queue_nums, 18);
        assert!(table.get(&cfg.broker_cluster_name).is_some());
        assert!(table.get(&cfg.broker_name).is_some());
        assert!(table.get(OFFSET_MOVED_EVENT).is_some());
        let reply = table.get("DefaultCluster_REPLY_TOPIC").unwrap();
        assert_eq!(
            (reply.read_queue_nums, reply.write_queue_nums, reply.perm),
            (1, 1, 6)
        );
        assert!(
            !table.add_system_topics(&cfg, 1),
            "adding again changes nothing"
        );
        table.upsert(TopicConfig::new("T1", 8));
        crate::state::persist::write_atomic(&path, &table.to_json()).unwrap();
        let loaded = TopicTable::load(&path).unwrap();
        assert_eq!(loaded, table);
        let mut no_auto = cfg.clone();
        no_auto.auto_create_topic_enable = false;
        let mut t2 = loaded.clone();
        assert!(t2.add_system_topics(&no_auto, 1));
        assert!(t2.get(DEFAULT_TOPIC).is_none());
        assert!(t2.get("broker-a-1").is_none());
        // Shard-brokers: a topic of each one's name.
        assert!(t2.add_system_topics(&no_auto, 2));
        assert_eq!(t2.get("broker-a-1").unwrap().write_queue_nums, 1);
        assert!(t2.get("broker-a-0").is_some());
        assert!(t2.remove("T1") && !t2.remove("T1"));
        // traceTopicEnable: Apache's trace topic, one queue, read-write.
        assert!(t2.get("RMQ_SYS_TRACE_TOPIC").is_none());
        let mut traced = no_auto.clone();
        traced.trace_topic_enable = true;
        assert!(t2.add_system_topics(&traced, 2));
        let trace = t2.get("RMQ_SYS_TRACE_TOPIC").unwrap();
        assert_eq!(
            (trace.read_queue_nums, trace.write_queue_nums, trace.perm),
            (1, 1, 6)
        );
    }
}

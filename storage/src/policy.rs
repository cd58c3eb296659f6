//! Per-topic retention policies, set by the broker from its topic table: which topics are compacted
//! (`cleanup.policy=COMPACTION`) and which keep their messages for a `reserve.time` of their own.

use std::collections::{BTreeMap, BTreeSet};

/// What retention and compaction need to know of the topics of one shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicPolicies {
    /// Topics whose queues are compacted: the newest record of each key is kept for good.
    pub compacted: BTreeSet<String>,
    /// Topics with their own retention in hours (`reserve.time`), instead of `fileReservedTime`.
    pub reserve_hours: BTreeMap<String, u64>,
}

impl TopicPolicies {
    pub fn is_compacted(&self, topic: &str) -> bool {
        self.compacted.contains(topic)
    }
}

//! Compaction topics and `reserve.time` in the store: each shard's store learns from that shard's
//! copy of the topic table which topics are compacted (`cleanup.policy=COMPACTION`) and which keep
//! their messages for a `reserve.time` of their own; pushed at start and whenever the copy changes.
//! With `enableCompaction=false` no topic is compacted and retention treats them like any other, as
//! Apache RocketMQ does.

use storage::TopicPolicies;

use crate::shard::Shard;
use crate::state::topics::TopicTable;

/// The policies of a topic table.
pub fn policies(table: &TopicTable, enable_compaction: bool) -> TopicPolicies {
    let mut out = TopicPolicies::default();
    for tc in table.topics.values() {
        if enable_compaction && tc.is_compacted() {
            out.compacted.insert(tc.topic_name.clone());
        }
        if let Some(h) = tc.reserve_time_hours() {
            out.reserve_hours.insert(tc.topic_name.clone(), h);
        }
    }
    out
}

/// Hands the shard's topic policies to its store (cheap: only when they changed).
pub fn push(shard: &Shard) {
    let p = policies(&shard.topics.borrow(), shard.cfg.enable_compaction);
    if p != shard.store.topic_policies() {
        shard.store.set_topic_policies(p);
    }
}

/// At start: pushes the policies and says when compacted topics exist but compaction is off.
pub fn start(shard: &Shard) {
    push(shard);
    if shard.id == 0 && !shard.cfg.enable_compaction {
        let compacted: Vec<String> = shard
            .topics
            .borrow()
            .topics
            .values()
            .filter(|tc| tc.is_compacted())
            .map(|tc| tc.topic_name.clone())
            .collect();
        if !compacted.is_empty() {
            tracing::warn!(
                "enableCompaction=false: compaction topics {compacted:?} are not compacted and age out after fileReservedTime like any other"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::TopicConfig;

    #[test]
    fn policies_follow_attributes_and_the_switch() {
        let mut table = TopicTable::default();
        let mut c = TopicConfig::new("C", 4);
        c.attributes
            .insert("cleanup.policy".to_owned(), "COMPACTION".to_owned());
        let mut r = TopicConfig::new("R", 4);
        r.attributes
            .insert("reserve.time".to_owned(), "48".to_owned());
        let mut z = TopicConfig::new("Z", 4);
        z.attributes
            .insert("reserve.time".to_owned(), "-1".to_owned());
        for tc in [c, r, z, TopicConfig::new("P", 4)] {
            table.topics.insert(tc.topic_name.clone(), tc);
        }
        let p = policies(&table, true);
        assert_eq!(p.compacted.iter().collect::<Vec<_>>(), vec!["C"]);
        assert_eq!(p.reserve_hours.get("R"), Some(&48));
        assert_eq!(p.reserve_hours.len(), 1);
        assert!(policies(&table, false).compacted.is_empty());
    }
}

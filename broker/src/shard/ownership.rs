//! Which shard owns a queue: a stable hash of `(topic, queueId)`.
//!
//! `owner = (java_string_hash(topic) as u32).wrapping_add(queueId as u32) % shards`. Consecutive queues
//! of one topic land on consecutive shards, so a topic with at least `shards` queues uses every core.
//! The shard count is recorded in `shards.json`; changing it would move queues, so start-up refuses.

use protocol::message::properties::java_string_hash;

/// The shard that owns `(topic, queue_id)` among `shards` shards.
pub fn owner_shard(topic: &str, queue_id: i32, shards: usize) -> usize {
    if shards <= 1 {
        return 0;
    }
    let h = (java_string_hash(topic) as u32).wrapping_add(queue_id as u32);
    // shards fits in u32 (it is a core count); the remainder is below it.
    (h % shards as u32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_stable_and_spread() {
        assert_eq!(owner_shard("TopicTest", 3, 1), 0);
        let owners: Vec<usize> = (0..8).map(|q| owner_shard("TopicTest", q, 4)).collect();
        // Consecutive queues rotate over the shards.
        for w in owners.windows(2) {
            assert_eq!((w[0] + 1) % 4, w[1]);
        }
        assert_eq!(
            owner_shard("TopicTest", 5, 4),
            owner_shard("TopicTest", 5, 4)
        );
        // Negative queue ids (never valid, but must not panic) still map into range.
        assert!(owner_shard("x", -1, 3) < 3);
        // "a".hashCode() is 97: queue 0 -> 97 % 4 = 1, queue 3 -> 100 % 4 = 0.
        assert_eq!(owner_shard("a", 0, 4), 1);
        assert_eq!(owner_shard("a", 3, 4), 0);
    }
}

//! Queue locks of orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ), held by shard 0: a queue of a
//! group is locked by one client at a time; a lock not renewed for 60 s lapses (RocketMQ's
//! REBALANCE_LOCK_MAX_LIVE_TIME).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protocol::body::MessageQueue;

pub const LOCK_MAX_LIVE: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct LockEntry {
    client_id: String,
    last_update: Instant,
}

#[derive(Debug, Default)]
pub struct RebalanceLocks {
    groups: HashMap<String, HashMap<MessageQueue, LockEntry>>,
}

impl RebalanceLocks {
    /// Locks (or renews) what it can; returns the queues `client_id` now holds.
    pub fn try_lock_batch(
        &mut self,
        group: &str,
        mqs: &[MessageQueue],
        client_id: &str,
        now: Instant,
    ) -> Vec<MessageQueue> {
        let locks = self.groups.entry(group.to_owned()).or_default();
        let mut held = Vec::new();
        for mq in mqs {
            let entry = locks.entry(mq.clone()).or_insert_with(|| LockEntry {
                client_id: client_id.to_owned(),
                last_update: now,
            });
            let expired = now.saturating_duration_since(entry.last_update) > LOCK_MAX_LIVE;
            if entry.client_id == client_id || expired {
                entry.client_id = client_id.to_owned();
                entry.last_update = now;
                held.push(mq.clone());
            }
        }
        held
    }

    /// Releases the queues `client_id` holds.
    pub fn unlock_batch(&mut self, group: &str, mqs: &[MessageQueue], client_id: &str) {
        if let Some(locks) = self.groups.get_mut(group) {
            for mq in mqs {
                if locks.get(mq).is_some_and(|e| e.client_id == client_id) {
                    locks.remove(mq);
                }
            }
            if locks.is_empty() {
                self.groups.remove(group);
            }
        }
    }

    /// Releases the locks of `group` held by clients not in `members`; returns how many.
    pub fn release_departed(&mut self, group: &str, members: &[String]) -> usize {
        let Some(locks) = self.groups.get_mut(group) else {
            return 0;
        };
        let before = locks.len();
        locks.retain(|_, e| members.contains(&e.client_id));
        let released = before - locks.len();
        if locks.is_empty() {
            self.groups.remove(group);
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(q: i32) -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: q,
        }
    }

    #[test]
    fn one_holder_per_queue_until_unlock_or_expiry() {
        let mut locks = RebalanceLocks::default();
        let now = Instant::now();
        assert_eq!(
            locks.try_lock_batch("g", &[mq(0), mq(1)], "a", now),
            vec![mq(0), mq(1)]
        );
        assert_eq!(
            locks.try_lock_batch("g", &[mq(1), mq(2)], "b", now),
            vec![mq(2)]
        );
        assert_eq!(
            locks.try_lock_batch("other", &[mq(1)], "b", now),
            vec![mq(1)]
        );
        locks.unlock_batch("g", &[mq(1)], "b");
        assert_eq!(
            locks.try_lock_batch("g", &[mq(1)], "b", now),
            Vec::<MessageQueue>::new()
        );
        locks.unlock_batch("g", &[mq(1)], "a");
        assert_eq!(locks.try_lock_batch("g", &[mq(1)], "b", now), vec![mq(1)]);
        let later = now + LOCK_MAX_LIVE + Duration::from_secs(1);
        assert_eq!(locks.try_lock_batch("g", &[mq(0)], "b", later), vec![mq(0)]);
    }

    #[test]
    fn locks_of_departed_clients_are_released() {
        let mut locks = RebalanceLocks::default();
        let now = Instant::now();
        locks.try_lock_batch("g", &[mq(0), mq(1)], "gone", now);
        locks.try_lock_batch("g", &[mq(2)], "stays", now);
        assert_eq!(
            locks.try_lock_batch("g", &[mq(0)], "new", now),
            Vec::<MessageQueue>::new()
        );
        assert_eq!(locks.release_departed("g", &["stays".to_owned()]), 2);
        assert_eq!(locks.try_lock_batch("g", &[mq(0)], "new", now), vec![mq(0)]);
        assert_eq!(
            locks.try_lock_batch("g", &[mq(2)], "new", now),
            Vec::<MessageQueue>::new(),
            "a member keeps its lock"
        );
        assert_eq!(locks.release_departed("other", &[]), 0);
    }
}

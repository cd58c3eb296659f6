//! Ordered (FIFO) pops (RocketMQ's `ConsumerOrderInfoManager`): the last batch popped from a queue by
//! a group blocks the queue until every message of it is acked or its invisible time passes; the
//! group's consumer offset only moves over acked messages, so an unacked one comes back first, with
//! its delivery count one higher.

use std::collections::HashMap;

use super::queue_key::QueueKey;

/// The last batch an ordered pop took from a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderInfo {
    pub offsets: Vec<i64>,
    pub committed: Vec<bool>,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub attempt_id: Option<String>,
    /// Earlier deliveries per offset (0 = first delivery).
    pub counts: HashMap<i64, i32>,
    /// Per-offset visibility moved by CHANGE_MESSAGE_INVISIBLETIME.
    pub next_visible: HashMap<i64, i64>,
}

impl OrderInfo {
    /// Whether the batch still holds the queue at `now`.
    fn blocks(&self, attempt_id: Option<&str>, now: i64) -> bool {
        if attempt_id.is_some() && self.attempt_id.as_deref() == attempt_id {
            // The same attempt asking again (a client retrying a lost answer) gets the batch again.
            return false;
        }
        self.unblocks_at().is_some_and(|at| now < at)
    }

    /// When the batch stops holding the queue; None when every message is acked.
    fn unblocks_at(&self) -> Option<i64> {
        self.offsets
            .iter()
            .zip(&self.committed)
            .filter(|(_, c)| !**c)
            .map(|(o, _)| {
                self.next_visible
                    .get(o)
                    .copied()
                    .unwrap_or(self.pop_time.saturating_add(self.invisible_time))
            })
            .max()
    }

    /// The consumer offset after the acked prefix: the first unacked offset, else past the batch.
    fn next_offset(&self) -> i64 {
        self.offsets
            .iter()
            .zip(&self.committed)
            .find(|(_, c)| !**c)
            .map(|(o, _)| *o)
            .or_else(|| self.offsets.last().map(|o| o.saturating_add(1)))
            .unwrap_or(0)
    }
}

/// What an ordered ack does (RocketMQ's `commitAndNext`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderCommit {
    /// Commit this consumer offset.
    Next(i64),
    /// The ack is of an older pop of the queue: nothing to commit.
    Stale,
    /// The offset is not in the queue's last batch.
    Illegal,
}

/// Ordered-pop state of one shard.
#[derive(Default)]
pub struct OrderTable {
    queues: HashMap<QueueKey, OrderInfo>,
}

impl OrderTable {
    /// Whether the queue's last batch still blocks it for a pop of `attempt_id`.
    pub fn blocked(&self, key: &QueueKey, attempt_id: Option<&str>, now: i64) -> bool {
        self.queues
            .get(key)
            .is_some_and(|info| info.blocks(attempt_id, now))
    }

    /// When a blocked queue opens again (None when it is not blocked).
    pub fn unblocks_at(&self, key: &QueueKey) -> Option<i64> {
        self.queues.get(key).and_then(OrderInfo::unblocks_at)
    }

    /// Records a new batch; returns each message's earlier deliveries (offsets popped by the
    /// previous batch count one more).
    pub fn update(
        &mut self,
        key: &QueueKey,
        attempt_id: Option<String>,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
    ) -> Vec<(i64, i32)> {
        let previous = self.queues.remove(key);
        let counts: HashMap<i64, i32> = offsets
            .iter()
            .map(|o| {
                let count = previous
                    .as_ref()
                    .filter(|p| p.offsets.contains(o))
                    .map_or(0, |p| p.counts.get(o).copied().unwrap_or(0) + 1);
                (*o, count)
            })
            .collect();
        let out = offsets
            .iter()
            .map(|o| (*o, counts.get(o).copied().unwrap_or(0)))
            .collect();
        self.queues.insert(
            key.clone(),
            OrderInfo {
                offsets: offsets.to_vec(),
                committed: vec![false; offsets.len()],
                pop_time,
                invisible_time,
                attempt_id,
                counts,
                next_visible: HashMap::new(),
            },
        );
        out
    }

    /// Marks an offset of the batch popped at `pop_time` acked.
    pub fn commit(&mut self, key: &QueueKey, offset: i64, pop_time: i64) -> OrderCommit {
        let Some(info) = self.queues.get_mut(key) else {
            return OrderCommit::Next(offset.saturating_add(1));
        };
        if info.pop_time != pop_time {
            return OrderCommit::Stale;
        }
        let Some(i) = info.offsets.iter().position(|o| *o == offset) else {
            return OrderCommit::Illegal;
        };
        if let Some(c) = info.committed.get_mut(i) {
            *c = true;
        }
        let next = info.next_offset();
        if info.committed.iter().all(|c| *c) {
            self.queues.remove(key);
        }
        OrderCommit::Next(next)
    }

    /// Moves one message's visibility (CHANGE_MESSAGE_INVISIBLETIME on an ordered message).
    pub fn change_invisible(
        &mut self,
        key: &QueueKey,
        offset: i64,
        pop_time: i64,
        until: i64,
    ) -> bool {
        match self.queues.get_mut(key) {
            Some(info) if info.pop_time == pop_time && info.offsets.contains(&offset) => {
                info.next_visible.insert(offset, until);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_blocks_until_acked_or_invisible_time_passes_and_counts_redeliveries() {
        let key = QueueKey::new("g", "T", 0);
        let mut t = OrderTable::default();
        assert!(!t.blocked(&key, None, 0));
        assert_eq!(
            t.update(&key, None, 1000, 100, &[5, 6]),
            vec![(5, 0), (6, 0)]
        );
        assert!(t.blocked(&key, None, 1050));
        assert!(!t.blocked(&key, None, 1100), "invisible time passed");
        // Redelivered after the invisible time: counted once more.
        assert_eq!(
            t.update(&key, None, 1100, 100, &[5, 6, 7]),
            vec![(5, 1), (6, 1), (7, 0)]
        );
        assert_eq!(t.commit(&key, 5, 1000), OrderCommit::Stale);
        assert_eq!(t.commit(&key, 9, 1100), OrderCommit::Illegal);
        assert_eq!(t.commit(&key, 6, 1100), OrderCommit::Next(5));
        assert!(t.blocked(&key, None, 1150));
        assert!(t.change_invisible(&key, 5, 1100, 5000));
        assert!(t.change_invisible(&key, 7, 1100, 1100));
        assert!(t.blocked(&key, None, 4000));
        assert_eq!(t.commit(&key, 5, 1100), OrderCommit::Next(7));
        assert_eq!(t.commit(&key, 7, 1100), OrderCommit::Next(8));
        assert!(!t.blocked(&key, None, 1150), "all acked");
    }
}

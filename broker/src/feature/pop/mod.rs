//! POP consumption (RocketMQ 5's broker-side load balancing) on the shard that owns each queue, from
//! its requests (`pop_message`: POP_MESSAGE and PEEK_MESSAGE; `ack`; `change_invisible`;
//! `notification`: NOTIFICATION and POLLING_INFO) to its state:
//! the group's pop position is its consumer offset; every non-ordered pop leaves a check point
//! (`checkpoint`) that, unless acked within its invisible time, puts the unacked messages into the
//! pop retry topic `%RETRY%group_topic` (or `%DLQ%group` after `retryMaxTimes`) (`revive`); ordered
//! pops block their queue until acked (`order`). Check points, acks and ordered commits are records
//! of the revive topic in this shard's own CommitLog (`revive_log`), replayed at start.

// Early returns carry the error response itself; it is built once per request, so its size is moot.
#![allow(clippy::result_large_err)]

pub(crate) mod ack;
pub(crate) mod change_invisible;
pub(crate) mod checkpoint;
pub(crate) mod notification;
pub(crate) mod order;
pub(crate) mod pop_message;
pub(crate) mod queue_key;
pub(crate) mod queue_pop;
pub(crate) mod revive;
pub(crate) mod revive_log;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

pub use queue_key::QueueKey;

use checkpoint::CkTable;
use order::OrderTable;

/// The revive group: its consumer offset on the revive topic is where replay starts.
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";
/// The revive topic's queue in each shard's store (every shard has its own CommitLog).
pub const REVIVE_QUEUE: i32 = 0;

/// RocketMQ's revive topic name: `rmq_sys_REVIVE_LOG_<brokerClusterName>`.
pub fn revive_topic(cluster: &str) -> String {
    format!("rmq_sys_REVIVE_LOG_{cluster}")
}

/// This shard's POP state.
pub fn state(shard: &crate::shard::Shard) -> std::rc::Rc<PopState> {
    shard.extensions.get()
}

/// Records where the POP revive log's replay starts (the revive group's offset), so it is persisted
/// with the pop positions it matches.
pub fn note_revive_offset(shard: &crate::shard::Shard) {
    if shard.role() == crate::config::BrokerRole::Slave {
        // A slave keeps its master's (copied with the consumer offsets): its own check points are
        // none, or stale, and would move the start past the master's open ones.
        return;
    }
    let topic = revive_topic(&shard.cfg.broker_cluster_name);
    let end = shard.store.max_offset(&topic, REVIVE_QUEUE);
    let offset = state(shard).settled_offset(end);
    let mut offsets = shard.offsets.borrow_mut();
    let known = offsets.query(REVIVE_GROUP, &topic, REVIVE_QUEUE);
    // A broker that never served a pop keeps no revive offset.
    if known != Some(offset) && (known.is_some() || offset > 0) {
        offsets.commit(REVIVE_GROUP, &topic, REVIVE_QUEUE, offset);
    }
}

/// The POP state of one shard (single-threaded; borrows are never held across an await).
#[derive(Default)]
pub struct PopState {
    pub cks: RefCell<CkTable>,
    pub orders: RefCell<OrderTable>,
    /// Revive-log appends in flight, by the revive queue's end when each began (its record lands at or
    /// after it): the replay start does not pass them.
    pending: RefCell<BTreeMap<i64, usize>>,
    /// Queues a pop is reading now (RocketMQ's `QueueLockManager`): a second pop skips them.
    locks: RefCell<HashSet<QueueKey>>,
    /// Pops parked per (group, topic, queue id or -1), for POLLING_INFO.
    polling: RefCell<HashMap<QueueKey, i32>>,
}

/// Holds a queue's pop lock until dropped.
pub struct QueueLock<'a> {
    state: &'a PopState,
    key: QueueKey,
}

impl Drop for QueueLock<'_> {
    fn drop(&mut self) {
        self.state.locks.borrow_mut().remove(&self.key);
    }
}

/// Counts a revive-log append in flight until dropped.
pub struct PendingAppend<'a> {
    state: &'a PopState,
    floor: i64,
}

impl Drop for PendingAppend<'_> {
    fn drop(&mut self) {
        let mut pending = self.state.pending.borrow_mut();
        if let Some(n) = pending.get_mut(&self.floor) {
            *n -= 1;
            if *n == 0 {
                pending.remove(&self.floor);
            }
        }
    }
}

/// Counts a parked pop until dropped.
pub struct Polling<'a> {
    state: &'a PopState,
    key: QueueKey,
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        let mut polling = self.state.polling.borrow_mut();
        if let Some(n) = polling.get_mut(&self.key) {
            *n -= 1;
            if *n <= 0 {
                polling.remove(&self.key);
            }
        }
    }
}

impl PopState {
    /// The queue's pop lock, unless another pop holds it.
    pub fn try_lock(&self, key: &QueueKey) -> Option<QueueLock<'_>> {
        if !self.locks.borrow_mut().insert(key.clone()) {
            return None;
        }
        Some(QueueLock {
            state: self,
            key: key.clone(),
        })
    }

    /// Marks an append in flight that began when the revive queue ended at `floor`.
    pub fn pending_append(&self, floor: i64) -> PendingAppend<'_> {
        *self.pending.borrow_mut().entry(floor).or_insert(0) += 1;
        PendingAppend { state: self, floor }
    }

    pub fn polling(&self, key: QueueKey) -> Polling<'_> {
        *self.polling.borrow_mut().entry(key.clone()).or_insert(0) += 1;
        Polling { state: self, key }
    }

    /// Where replay may start next time, given the revive queue's end: the oldest open check point
    /// or append in flight (whose effect is not applied yet), else the end.
    pub fn settled_offset(&self, end: i64) -> i64 {
        let open = self.cks.borrow().min_revive_offset().unwrap_or(end);
        let pending = self.pending.borrow().keys().next().copied().unwrap_or(end);
        open.min(pending).min(end)
    }

    /// Parked pops of a group on a queue (RocketMQ counts those of the queue and of "any queue").
    pub fn polling_num(&self, key: &QueueKey) -> i32 {
        let polling = self.polling.borrow();
        let any = QueueKey {
            queue_id: -1,
            ..key.clone()
        };
        polling.get(key).copied().unwrap_or(0)
            + if key.queue_id >= 0 {
                polling.get(&any).copied().unwrap_or(0)
            } else {
                0
            }
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    crate::state::topics::now_ms()
}

#[cfg(test)]
mod tests {
    use super::checkpoint::{Ck, CkKey};
    use super::*;

    #[test]
    fn replay_start_waits_for_open_check_points_and_appends_in_flight() {
        let state = PopState::default();
        assert_eq!(state.settled_offset(7), 7);
        let first = state.pending_append(3);
        let second = state.pending_append(5);
        assert_eq!(state.settled_offset(7), 3);
        drop(first);
        assert_eq!(state.settled_offset(7), 5);
        drop(second);
        let key = CkKey {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: 0,
            pop_time: 1,
        };
        state.cks.borrow_mut().insert(Ck::new(key, vec![0], 10, 4));
        assert_eq!(state.settled_offset(9), 4);
        let lock = state.try_lock(&QueueKey::new("g", "T", 0));
        assert!(lock.is_some());
        assert!(state.try_lock(&QueueKey::new("g", "T", 0)).is_none());
        drop(lock);
        assert!(state.try_lock(&QueueKey::new("g", "T", 0)).is_some());
    }
}

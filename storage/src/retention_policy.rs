//! What retention keeps for topics with a policy of their own: the CommitLog floor below which no
//! segment may go (records of compacted queues not compacted yet; messages of a topic whose
//! `reserve.time` outlasts `fileReservedTime` and is not over), and the min offsets of topics whose
//! `reserve.time` is shorter (their older messages stop being served).

use crate::error::StoreError;
use crate::offset::local_of;
use crate::store::MessageStore;

/// Units looked at for the first record of a floor.
const FLOOR_SCAN: i64 = 256;

/// A queue that holds back retention, and from where.
#[derive(Debug, Clone)]
pub(crate) struct Floor {
    pub topic: String,
    pub queue_id: i32,
    /// Shard-local CommitLog offset of the first record to keep.
    pub local: u64,
    /// "compacted" or "reserve.time".
    pub why: &'static str,
}

impl MessageStore {
    /// Where each compacted queue's uncompacted records and each long-`reserve.time` queue's
    /// unexpired messages begin in the CommitLog.
    pub(crate) async fn retention_floors(&self, now_ms: i64) -> Result<Vec<Floor>, StoreError> {
        let policies = self.inner.policies.borrow().clone();
        let reserved = self.inner.tunables.borrow().file_reserved_time_hours;
        let mut out = Vec::new();
        for (topic, queue_id) in self.queues() {
            let max = self.max_offset(&topic, queue_id);
            let (from, why) = if self.compacts(&topic) {
                let cq_min = self
                    .queue(&topic, queue_id)
                    .map_or(0, |q| q.borrow().min_offset);
                let up_to = self.compacted_up_to(&topic, queue_id).unwrap_or(0);
                (up_to.max(cq_min), "compacted")
            } else if let Some(&hours) = policies
                .reserve_hours
                .get(&topic)
                .filter(|h| **h > reserved)
            {
                let since = now_ms.saturating_sub(hours.saturating_mul(3_600_000) as i64);
                (
                    self.offset_by_time(&topic, queue_id, since).await?,
                    "reserve.time",
                )
            } else {
                continue;
            };
            if from >= max {
                continue;
            }
            // The first unit present from there (an empty slot is skipped, never taken as "none").
            let first = self
                .units(&topic, queue_id, from, FLOOR_SCAN)
                .await?
                .and_then(|u| u.into_iter().find_map(|(_, e)| e));
            if let Some(unit) = first {
                out.push(Floor {
                    topic,
                    queue_id,
                    local: local_of(unit.phys),
                    why,
                });
            }
        }
        Ok(out)
    }

    /// Raises the min offset of each queue of a topic whose `reserve.time` is shorter than
    /// `fileReservedTime` past its messages older than that; the bytes go with their segment.
    pub(crate) async fn expire_short_reserve(&self, now_ms: i64) -> Result<(), StoreError> {
        let policies = self.inner.policies.borrow().clone();
        let reserved = self.inner.tunables.borrow().file_reserved_time_hours;
        for (topic, queue_id) in self.queues() {
            let Some(&hours) = policies.reserve_hours.get(&topic) else {
                continue;
            };
            if hours >= reserved || self.compacts(&topic) {
                continue;
            }
            let since = now_ms.saturating_sub(hours.saturating_mul(3_600_000) as i64);
            let first = self.offset_by_time(&topic, queue_id, since).await?;
            let Some(q) = self.queue(&topic, queue_id) else {
                continue;
            };
            let mut q = q.borrow_mut();
            if first > q.min_offset {
                tracing::info!(
                    "shard {}: {topic}/{queue_id}: messages older than reserve.time {hours} h expire; min offset {} -> {first}",
                    self.inner.cfg.shard_id,
                    q.min_offset
                );
                q.min_offset = first.min(q.max_offset);
            }
        }
        Ok(())
    }
}

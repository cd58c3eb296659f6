//! What the broker's maintenance admin codes ask of the store: the units of one ConsumeQueue as
//! they are stored (QUERY_CONSUME_QUEUE, `mqadmin queryCq`), and the ConsumeQueue half of retention
//! run now (CLEAN_EXPIRED_CONSUMEQUEUE, `cleanExpiredCQ`): files whose every unit points below the
//! CommitLog's first offset are deleted and the queues' min offsets raised, queue offsets kept.

use crate::error::StoreError;
use crate::offset::physical;
use crate::store::MessageStore;

/// One stored ConsumeQueue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqUnit {
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl MessageStore {
    /// Whether `(topic, queue_id)` has a ConsumeQueue here.
    pub fn has_consume_queue(&self, topic: &str, queue_id: i32) -> bool {
        self.queue(topic, queue_id).is_some()
    }

    /// Up to `count` stored units of a queue from unit `from` (empty slots skipped; at most 10 000).
    pub async fn consume_queue_units(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        count: i64,
    ) -> Result<Vec<CqUnit>, StoreError> {
        let count = count.clamp(0, 10_000);
        let end = from
            .saturating_add(count)
            .min(self.max_offset(topic, queue_id));
        let mut at = from.max(self.min_offset(topic, queue_id));
        let mut out = Vec::new();
        while at < end {
            let Some(units) = self.units(topic, queue_id, at, end - at).await? else {
                break;
            };
            let Some(last) = units.last().map(|(o, _)| *o) else {
                break;
            };
            out.extend(units.into_iter().filter_map(|(o, e)| {
                e.map(|e| CqUnit {
                    queue_offset: o,
                    physical_offset: e.phys,
                    size: e.size,
                    tags_code: e.tags_code,
                })
            }));
            if last < at {
                break;
            }
            at = last + 1;
        }
        Ok(out)
    }

    /// Deletes every ConsumeQueue file wholly below the CommitLog's first offset and raises the
    /// queues' min offsets to it; answers the files deleted.
    pub async fn clean_expired_consume_queues(&self) -> Result<usize, StoreError> {
        let inner = &*self.inner;
        let _permit = inner
            .maintenance
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("maintenance", e))?;
        let min_phys = physical(inner.cfg.shard_id, inner.log.min_offset());
        let queues = self.queue_handles();
        let mut deleted = 0;
        for q in queues {
            deleted += self.trim_queue(&q, min_phys).await?;
        }
        Ok(deleted)
    }
}

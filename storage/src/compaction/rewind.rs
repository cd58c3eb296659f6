//! Rewinding compacted logs when the CommitLog's tail is cut (`truncate_tail`: a returning old master
//! drops what the new master never got). A compacted log that covers offsets the cut removed may hold
//! a record that is gone now, and may have dropped an older record of the same key that is now the
//! newest again. So the log is rewritten to cover only the offsets below the queue's first
//! ConsumeQueue unit: from there on the ConsumeQueue serves every record again, and the next pass
//! compacts them anew. Run after the ConsumeQueues are cut, and at open (a crash between the cut and
//! the rewind).

use std::rc::Rc;

use super::file::{CompactedLog, LogWriter};
use super::format::Entry;
use crate::error::StoreError;
use crate::layout::compaction_dir;
use crate::store::MessageStore;

impl MessageStore {
    /// Rewinds every compacted log of this shard that covers offsets past its queue's end.
    pub(crate) async fn rewind_compacted_logs(&self) -> Result<(), StoreError> {
        // A pass that runs now finishes first (its log is then rewound too); later ones see the cut.
        let _permit = self
            .inner
            .compaction_lock
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("compaction", e))?;
        let logs: Vec<_> = self
            .inner
            .compacted
            .borrow()
            .iter()
            .map(|((topic, queue_id), log)| (topic.clone(), *queue_id, log.clone()))
            .collect();
        for (topic, queue_id, log) in logs {
            let Some(q) = self.queue(&topic, queue_id) else {
                continue;
            };
            let (min, max) = {
                let q = q.borrow();
                (q.min_offset, q.max_offset)
            };
            if log.up_to <= max {
                continue;
            }
            let up_to = min.min(log.up_to);
            let rewound = self.rewrite_below(&topic, queue_id, &log, up_to).await?;
            tracing::warn!(
                "shard {}: compacted log of {topic}/{queue_id} covered offsets up to {} past the \
                 queue's end {max}; rewound to {up_to} ({} of {} records kept), the ConsumeQueue \
                 serves the rest and the next pass compacts it again",
                self.inner.cfg.shard_id,
                log.up_to,
                rewound.entries.len(),
                log.entries.len()
            );
            self.inner
                .compacted
                .borrow_mut()
                .insert((topic, queue_id), Rc::new(rewound));
        }
        Ok(())
    }

    /// A new log holding `log`'s records below `up_to`, replacing it on disk atomically.
    async fn rewrite_below(
        &self,
        topic: &str,
        queue_id: i32,
        log: &CompactedLog,
        up_to: i64,
    ) -> Result<CompactedLog, StoreError> {
        let kept: Vec<_> = log
            .entries
            .iter()
            .filter(|e| e.queue_offset < up_to)
            .copied()
            .collect();
        let entries = kept
            .iter()
            .map(|e| Entry {
                queue_offset: e.queue_offset,
                size: i32::try_from(e.size).unwrap_or(i32::MAX),
                tags_code: e.tags_code,
            })
            .collect();
        let dir = compaction_dir(&self.inner.cfg.root_dir, topic, queue_id);
        let mut w = LogWriter::create(&dir, up_to, entries, self.inner.cfg.shard_id).await?;
        for e in &kept {
            let rec = log.read(e.pos, e.size as usize).await?;
            w.push(&rec).await?;
        }
        w.finish().await
    }
}

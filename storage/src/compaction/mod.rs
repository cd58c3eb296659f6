//! Compaction topics (`cleanup.policy=COMPACTION`): per queue, a compacted log keeps, for the records
//! below its "compacted up to" queue offset, only the newest record of each key, byte for byte as
//! stored (queue and physical offsets unchanged, so msgIds and offsets stay valid).
//!
//! The key is the whole `KEYS` property, as Apache RocketMQ's `CompactionLog` uses
//! `MessageExt.getKeys()`: `"a b"` is one key, not two. As there, records without keys are not kept,
//! and a key whose newest record has an empty body is dropped (a tombstone).
//!
//! - [`format`]: the file's bytes; [`file`]: loading, atomic replacement, reads;
//! - [`pass`]: one pass (the previous log plus new ConsumeQueue entries up to the flush point, bounded
//!   by `maxOffsetMapSize`), run every `compactionScheduleInternal` ms in the store's low-share
//!   maintenance queue, or on demand with [`MessageStore::compact_now`];
//! - [`read`]: pulls below "compacted up to" are served from the compacted log;
//! - [`rewind`]: a cut CommitLog tail rewinds the compacted logs that covered it.
//!
//! A slave has the same CommitLog and ConsumeQueues as its master, so it compacts its own copy the
//! same way. Retention treats the compaction progress as a floor (see `retention`).

pub(crate) mod file;
pub(crate) mod format;
pub(crate) mod logs;
pub(crate) mod pass;
pub(crate) mod read;
pub(crate) mod rewind;

use std::rc::Rc;

use file::CompactedLog;

use crate::layout::compaction_root;
use crate::policy::TopicPolicies;
use crate::store::MessageStore;

pub use pass::CompactionReport;

impl MessageStore {
    /// Sets which topics are compacted and which have a `reserve.time` of their own (the broker
    /// calls it at start and whenever the shard's topic table changes).
    pub fn set_topic_policies(&self, policies: TopicPolicies) {
        *self.inner.policies.borrow_mut() = policies;
    }

    /// The policies in force.
    pub fn topic_policies(&self) -> TopicPolicies {
        self.inner.policies.borrow().clone()
    }

    /// Whether the queues of `topic` are compacted here (compacted topic and compaction enabled).
    pub(crate) fn compacts(&self, topic: &str) -> bool {
        self.inner.cfg.enable_compaction && self.inner.policies.borrow().is_compacted(topic)
    }

    /// The queue's compacted log, if it has one.
    pub(crate) fn compacted_log(&self, topic: &str, queue_id: i32) -> Option<Rc<CompactedLog>> {
        let logs = self.inner.compacted.borrow();
        if logs.is_empty() {
            return None;
        }
        logs.get(&(topic.to_owned(), queue_id)).cloned()
    }

    /// The queue offset up to which the queue is compacted (None without a compacted log).
    pub fn compacted_up_to(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.compacted_log(topic, queue_id).map(|l| l.up_to)
    }

    /// Drops a topic's compacted logs (with `delete_topic`).
    pub(crate) fn drop_compacted(&self, topic: &str) {
        self.inner
            .compacted
            .borrow_mut()
            .retain(|(t, _), _| t != topic);
        let dir = compaction_root(&self.inner.cfg.root_dir).join(topic);
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!("deleting {} failed: {e}", dir.display());
            }
        }
    }
}

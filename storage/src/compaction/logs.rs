//! The compacted logs of one shard, loaded when the store opens.

use std::collections::HashMap;
use std::rc::Rc;

use super::file::{self, CompactedLog};
use crate::error::StoreError;
use crate::layout::compaction_root;

/// The loaded compacted logs of a shard, by (topic, queue id).
pub(crate) type CompactedLogs = HashMap<(String, i32), Rc<CompactedLog>>;

/// Loads every compacted log under `<root>/compaction`; a damaged one is moved aside with an ERROR
/// line (its queue is then read from the ConsumeQueue, as far as it still reaches).
pub(crate) async fn load_all(root: &std::path::Path) -> Result<CompactedLogs, StoreError> {
    let mut out = CompactedLogs::new();
    let base = compaction_root(root);
    let Ok(topics) = std::fs::read_dir(&base) else {
        return Ok(out);
    };
    for t in topics.flatten() {
        let Some(topic) = t.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let Ok(queues) = std::fs::read_dir(t.path()) else {
            continue;
        };
        for q in queues.flatten() {
            let Some(queue_id) = q.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            match CompactedLog::load(&q.path()).await {
                Ok(Some(log)) => {
                    out.insert((topic.clone(), queue_id), Rc::new(log));
                }
                Ok(None) => {}
                Err(e) => {
                    let path = q.path().join(file::LOG_FILE);
                    tracing::error!(
                        "compacted log {} unusable ({e}); moved aside to {}.corrupt",
                        path.display(),
                        path.display()
                    );
                    let _ = std::fs::rename(&path, path.with_extension("corrupt"));
                }
            }
        }
    }
    Ok(out)
}

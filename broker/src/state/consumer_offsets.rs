//! Consumer offsets of the queues one shard owns, persisted as `config/consumerOffset-<shard>.json`
//! (RocketMQ's ConsumerOffsetSerializeWrapper format).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protocol::body::{offset_table_key, split_offset_table_key, ConsumerOffsetSerializeWrapper};

use crate::error::BrokerError;

/// One shard's committed offsets: `topic@group` -> queueId -> offset.
#[derive(Debug, Default)]
pub struct ConsumerOffsets {
    table: BTreeMap<String, BTreeMap<i32, i64>>,
    dirty: bool,
}

/// The offsets file of a shard.
pub fn offsets_path(root: &Path, shard: usize) -> PathBuf {
    root.join("config")
        .join(format!("consumerOffset-{shard}.json"))
}

impl ConsumerOffsets {
    pub fn load(path: &Path) -> Result<ConsumerOffsets, BrokerError> {
        let Some(bytes) = crate::state::persist::read_optional(path)
            .map_err(|e| BrokerError::io(path.display(), e))?
        else {
            return Ok(ConsumerOffsets::default());
        };
        let wrapper: ConsumerOffsetSerializeWrapper =
            protocol::body::from_json(&bytes).map_err(|e| BrokerError::BadMetadata {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(ConsumerOffsets {
            table: wrapper.offset_table,
            dirty: false,
        })
    }

    pub fn commit(&mut self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let key = offset_table_key(topic, group);
        let queues = self.table.entry(key).or_default();
        if queues.insert(queue_id, offset) != Some(offset) {
            self.dirty = true;
        }
    }

    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .get(&offset_table_key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Every group's committed offset of one queue: (group, offset).
    pub fn positions(&self, topic: &str, queue_id: i32) -> Vec<(String, i64)> {
        self.table
            .iter()
            .filter_map(|(key, queues)| {
                let (t, group) = split_offset_table_key(key)?;
                (t == topic)
                    .then(|| queues.get(&queue_id).map(|o| (group.to_owned(), *o)))
                    .flatten()
            })
            .collect()
    }

    /// Drops every offset of a deleted topic.
    pub fn remove_topic(&mut self, topic: &str) {
        let before = self.table.len();
        self.table
            .retain(|key, _| split_offset_table_key(key).is_none_or(|(t, _)| t != topic));
        self.dirty |= before != self.table.len();
    }

    /// Drops every offset of a deleted subscription group.
    pub fn remove_group(&mut self, group: &str) {
        let before = self.table.len();
        self.table
            .retain(|key, _| split_offset_table_key(key).is_none_or(|(_, g)| g != group));
        self.dirty |= before != self.table.len();
    }

    /// Every entry as (`topic@group`, queue id, offset).
    pub fn entries(&self) -> Vec<(String, i32, i64)> {
        self.table
            .iter()
            .flat_map(|(key, queues)| queues.iter().map(move |(q, o)| (key.clone(), *q, *o)))
            .collect()
    }

    /// The JSON to persist, if anything changed since the last call.
    pub fn take_dirty_json(&mut self) -> Option<Vec<u8>> {
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        Some(self.to_json())
    }

    pub fn to_json(&self) -> Vec<u8> {
        protocol::body::to_json(&ConsumerOffsetSerializeWrapper {
            offset_table: self.table.clone(),
            data_version: None,
        })
    }

    /// Marks the table as needing a write (after a failed persist).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_query_persist_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = offsets_path(dir.path(), 2);
        let mut offsets = ConsumerOffsets::load(&path).unwrap();
        assert_eq!(offsets.query("g", "T", 0), None);
        offsets.commit("g", "T", 0, 42);
        offsets.commit("g", "T", 3, 7);
        offsets.commit("g", "U", 0, 1);
        assert_eq!(offsets.query("g", "T", 0), Some(42));
        let json = offsets.take_dirty_json().unwrap();
        assert!(offsets.take_dirty_json().is_none());
        crate::state::persist::write_atomic(&path, &json).unwrap();
        let mut loaded = ConsumerOffsets::load(&path).unwrap();
        assert_eq!(loaded.query("g", "T", 3), Some(7));
        assert_eq!(loaded.entries().len(), 3);
        loaded.remove_topic("T");
        assert_eq!(loaded.query("g", "T", 0), None);
        assert_eq!(loaded.query("g", "U", 0), Some(1));
        assert!(loaded.take_dirty_json().is_some());
        loaded.commit("h", "U", 0, 5);
        loaded.take_dirty_json();
        loaded.remove_group("g");
        assert_eq!(loaded.query("g", "U", 0), None);
        assert_eq!(loaded.query("h", "U", 0), Some(5));
        assert!(loaded.take_dirty_json().is_some());
    }
}

//! Apache's `store/config` JSON files, checked with our own parsers and written where our broker reads
//! them in a one-shard store: topics.json, subscriptionGroup.json, consumerOffset.json (as
//! consumerOffset-0.json) and delayOffset.json are RocketMQ's formats on both sides, so they are copied
//! byte for byte once they parse.

use std::collections::BTreeMap;
use std::path::Path;

use crate::feature::schedule::offsets as delay_offsets;
use crate::feature::transaction::state::PROGRESS_GROUP;
use crate::state::consumer_offsets::{offsets_path, ConsumerOffsets};
use crate::state::persist::write_atomic;
use crate::state::subscription_groups::SubscriptionGroupTable;
use crate::state::topics::TopicTable;

use super::layout::{DELAY_OFFSETS, GROUPS, NOT_CARRIED, OFFSETS, TOPICS};

/// What was carried.
#[derive(Debug, Default)]
pub struct Carried {
    pub topics: usize,
    pub groups: usize,
    /// (topic, group, queue) entries.
    pub offset_entries: usize,
    pub delay_offsets: BTreeMap<i32, i64>,
    /// Apache files present that are not carried: (file, what it held).
    pub left: Vec<(String, String)>,
}

/// Checks and copies the metadata of `src_root/config` into `dst_root/config`.
pub fn carry(src_root: &Path, dst_root: &Path) -> Result<Carried, String> {
    let src = src_root.join("config");
    let dst = dst_root.join("config");
    let mut out = Carried::default();
    let copy = |name: &str, to: &Path| -> Result<bool, String> {
        let from = src.join(name);
        match crate::state::persist::read_optional(&from) {
            Ok(Some(bytes)) => write_atomic(to, &bytes)
                .map(|()| true)
                .map_err(|e| format!("{}: {e}", to.display())),
            Ok(None) => Ok(false),
            Err(e) => Err(format!("{}: {e}", from.display())),
        }
    };
    let topics = TopicTable::load(&src.join(TOPICS)).map_err(|e| e.to_string())?;
    out.topics = topics.topics.len();
    copy(TOPICS, &dst.join(TOPICS))?;
    let groups = SubscriptionGroupTable::load(&src.join(GROUPS)).map_err(|e| e.to_string())?;
    out.groups = groups.subscription_group_table.len();
    copy(GROUPS, &dst.join(GROUPS))?;
    let mut offsets = ConsumerOffsets::load(&src.join(OFFSETS)).map_err(|e| e.to_string())?;
    out.offset_entries = offsets.entries().len();
    if copy(OFFSETS, &offsets_path(dst_root, 0))? && carry_transaction_progress(&mut offsets) {
        let to = offsets_path(dst_root, 0);
        write_atomic(&to, &offsets.to_json()).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    out.delay_offsets = delay_offsets::load(&src.join(DELAY_OFFSETS))?;
    copy(DELAY_OFFSETS, &delay_offsets::path(dst_root, None))?;
    for (name, what) in NOT_CARRIED {
        if holds_something(&src.join(name)) {
            out.left.push(((*name).to_owned(), (*what).to_owned()));
        }
    }
    Ok(out)
}

/// Apache keeps its transaction checker's progress (the half and op queues' offsets) under the group
/// `MixAll.CID_SYS_RMQ_TRANS`, whose value is `CID_RMQ_SYS_TRANS`; when our checker's group is spelt
/// otherwise, the entries are copied to it, so the imported half messages Apache already checked (and
/// put back as new copies) are not checked, and committed, a second time. True when anything changed.
fn carry_transaction_progress(offsets: &mut ConsumerOffsets) -> bool {
    const APACHE_GROUP: &str = "CID_RMQ_SYS_TRANS";
    if PROGRESS_GROUP == APACHE_GROUP {
        return false;
    }
    let mut changed = false;
    for (key, queue, offset) in offsets.entries() {
        let Some((topic, group)) = protocol::body::split_offset_table_key(&key) else {
            continue;
        };
        if group == APACHE_GROUP && offsets.query(PROGRESS_GROUP, topic, queue).is_none() {
            offsets.commit(PROGRESS_GROUP, topic, queue, offset);
            changed = true;
        }
    }
    changed
}

/// Whether a file not carried holds anything: a JSON file with a non-empty table (its `dataVersion`
/// aside), or any other file with bytes.
fn holds_something(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    if path.extension().is_none_or(|e| e != "json") {
        return !bytes.is_empty();
    }
    let Ok(value) = protocol::body::from_json::<serde_json::Value>(&bytes) else {
        return !bytes.is_empty();
    };
    let Some(fields) = value.as_object() else {
        return !value.is_null();
    };
    fields.iter().any(|(k, v)| {
        k != "dataVersion"
            && match v {
                serde_json::Value::Object(m) => !m.is_empty(),
                serde_json::Value::Array(a) => !a.is_empty(),
                serde_json::Value::Null => false,
                _ => true,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_transaction_progress_reaches_our_checker() {
        let json =
            br#"{"offsetTable":{"RMQ_SYS_TRANS_HALF_TOPIC@CID_RMQ_SYS_TRANS":{0:3},"T@G":{0:1}}}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerOffset.json");
        std::fs::write(&path, json).unwrap();
        let mut offsets = ConsumerOffsets::load(&path).unwrap();
        let changed = carry_transaction_progress(&mut offsets);
        assert_eq!(changed, PROGRESS_GROUP != "CID_RMQ_SYS_TRANS");
        assert_eq!(
            offsets.query(PROGRESS_GROUP, "RMQ_SYS_TRANS_HALF_TOPIC", 0),
            Some(3)
        );
        assert_eq!(offsets.query("G", "T", 0), Some(1));
    }

    #[test]
    fn empty_tables_are_not_reported() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        assert!(!holds_something(&write(
            "consumerFilter.json",
            r#"{"filterDataByTopic":{}}"#
        )));
        assert!(!holds_something(&write(
            "a.json",
            r#"{"dataVersion":{"counter":3},"offsetTable":{}}"#
        )));
        assert!(holds_something(&write(
            "b.json",
            r#"{"messageRequestModeMap":{"T":{"G":{}}}}"#
        )));
        assert!(holds_something(&write("timercheck", "x")));
        assert!(!holds_something(&write("timermetrics", "")));
        assert!(!holds_something(&dir.path().join("absent.json")));
    }
}

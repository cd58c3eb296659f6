//! Recalled timer messages (RECALL_MESSAGE, RocketMQ 5.3.2+). A recall is a marker parked on the
//! timer queue like a timer message: `TIMER_DEL_UNIQKEY` = `<real topic>+<UNIQ_KEY>` of the message it
//! cancels, as Apache's timer store writes it. The timer task reads markers into a per-shard set of
//! recalled keys and skips a due message whose key is in it; markers themselves are never delivered.
//! Markers live in the CommitLog, so a restart reads them again: a marker is always at a higher queue
//! offset than the message it cancels, and the timer task delivers nothing before its scan has caught
//! up with the queue, so a recalled message stays recalled across restarts.

use std::cell::RefCell;
use std::collections::HashMap;

use protocol::header::RecallHandle;
use protocol::message::properties;
use protocol::message::record::MessageRecord;

use protocol::message::properties::TIMER_OUT_MS;

use crate::shard::Shard;
use crate::state::topics::TIMER_TOPIC;

/// The property that makes a parked unit a recall marker (Apache's `TIMER_DEL_UNIQKEY`).
pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
/// The tag of a recall marker (Apache's `_RECALL_TAG_`).
pub const RECALL_TAG: &str = "_RECALL_TAG_";
/// A recalled key whose message never showed up is forgotten this long after its due time (and only
/// once nothing due earlier is pending).
const FORGET_AFTER_MS: i64 = 10 * 60 * 1000;

/// This shard's recalled keys (`topic+uniqKey` -> due time ms).
#[derive(Default)]
pub struct Recalls {
    keys: RefCell<HashMap<String, i64>>,
}

pub fn recalls(shard: &Shard) -> std::rc::Rc<Recalls> {
    shard.extensions.get()
}

/// `<real topic>+<UNIQ_KEY>`, the key a recall and its message share.
pub fn delete_key(topic: &str, uniq_key: &str) -> String {
    format!("{topic}+{uniq_key}")
}

impl Recalls {
    /// A marker read from the timer queue.
    pub fn note(&self, key: &str, due_ms: i64) {
        self.keys.borrow_mut().insert(key.to_owned(), due_ms);
    }

    /// Whether `record` (restored to its real topic) was recalled; the key is forgotten then.
    pub fn take_if_recalled(&self, record: &MessageRecord) -> bool {
        let Some(uniq) = properties::get(&record.properties, properties::UNIQ_KEY) else {
            return false;
        };
        let mut keys = self.keys.borrow_mut();
        if keys.is_empty() {
            return false;
        }
        keys.remove(&delete_key(&record.topic, uniq)).is_some()
    }

    /// Forgets keys whose message never came: due long ago, and nothing due at or before them pending.
    pub fn prune(&self, now: i64, next_due: Option<i64>) {
        let mut keys = self.keys.borrow_mut();
        if keys.is_empty() {
            return;
        }
        keys.retain(|_, due| {
            let stale = *due < now.saturating_sub(FORGET_AFTER_MS);
            let nothing_before = next_due.is_none_or(|n| n > *due);
            !(stale && nothing_before)
        });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.borrow().len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.keys.borrow().is_empty()
    }
}

/// The key a parked unit recalls, if it is a marker.
pub fn marker_key(record: &MessageRecord) -> Option<&str> {
    properties::get(&record.properties, TIMER_DEL_UNIQKEY)
}

/// The recall handle a send answers for a stored record: one for a parked timer message (TIMER_OUT_MS
/// and REAL_TOPIC set, not a retry topic's), with the due time + 1 ms (Apache's "consider of floor"),
/// this broker's name and the message's UNIQ_KEY, as Apache's `attachRecallHandle` builds it.
pub fn handle_of(record: &MessageRecord, broker_name: &str) -> Option<String> {
    if record.topic != TIMER_TOPIC {
        return None;
    }
    let props = &record.properties;
    let due: i64 = properties::get(props, TIMER_OUT_MS)?.trim().parse().ok()?;
    let real_topic = properties::get(props, properties::REAL_TOPIC)?;
    if real_topic.starts_with(crate::state::topics::RETRY_GROUP_TOPIC_PREFIX) {
        return None;
    }
    // Java's String.join writes a missing id as "null".
    let id = properties::get(props, properties::UNIQ_KEY).unwrap_or("null");
    Some(
        RecallHandle {
            topic: real_topic.to_owned(),
            broker_name: broker_name.to_owned(),
            timestamp: due.saturating_add(1).to_string(),
            message_id: id.to_owned(),
        }
        .encode(),
    )
}

/// The marker a recall parks on timer queue `queue_id`: due at the handle's time, body "0", tag
/// `_RECALL_TAG_`, as Apache's RecallMessageProcessor builds it (there it is parked by the send path).
pub fn marker(
    handle: &RecallHandle,
    due_ms: i64,
    producer_group: &str,
    queue_id: i32,
    template: MessageRecord,
) -> MessageRecord {
    let now = crate::state::topics::now_ms();
    let pairs = [
        (properties::TAGS, RECALL_TAG.to_owned()),
        (
            TIMER_DEL_UNIQKEY,
            delete_key(&handle.topic, &handle.message_id),
        ),
        (properties::UNIQ_KEY, handle.message_id.clone()),
        (properties::TIMER_DELIVER_MS, handle.timestamp.clone()),
        (properties::PRODUCER_GROUP, producer_group.to_owned()),
        (TIMER_OUT_MS, due_ms.to_string()),
        (properties::REAL_TOPIC, handle.topic.clone()),
        (properties::REAL_QUEUE_ID, "0".to_owned()),
    ];
    MessageRecord {
        topic: TIMER_TOPIC.to_owned(),
        queue_id,
        body: bytes::Bytes::from_static(b"0"),
        properties: properties::encode(pairs.iter().map(|(k, v)| (*k, v.as_str()))),
        born_timestamp: now,
        ..template
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(props: &[(&str, &str)]) -> MessageRecord {
        MessageRecord {
            topic: TIMER_TOPIC.to_owned(),
            properties: properties::encode(props.iter().copied()),
            ..MessageRecord::default()
        }
    }

    #[test]
    fn a_parked_timer_message_gets_a_handle_others_do_not() {
        let rec = parked(&[
            ("TIMER_OUT_MS", "1000"),
            ("REAL_TOPIC", "T"),
            ("UNIQ_KEY", "ID1"),
        ]);
        let h = RecallHandle::decode(&handle_of(&rec, "broker-a-0").unwrap()).unwrap();
        assert_eq!(
            (
                h.topic.as_str(),
                h.broker_name.as_str(),
                h.timestamp.as_str()
            ),
            ("T", "broker-a-0", "1001")
        );
        assert_eq!(h.message_id, "ID1");
        let retry = parked(&[("TIMER_OUT_MS", "1000"), ("REAL_TOPIC", "%RETRY%g")]);
        assert_eq!(handle_of(&retry, "b"), None);
        let plain = MessageRecord {
            topic: "T".into(),
            ..rec.clone()
        };
        assert_eq!(handle_of(&plain, "b"), None);
    }

    #[test]
    fn recalled_keys_are_taken_once_and_pruned_when_stale() {
        let r = Recalls::default();
        let handle = RecallHandle {
            topic: "T".into(),
            broker_name: "b".into(),
            timestamp: "1001".into(),
            message_id: "ID1".into(),
        };
        let m = marker(&handle, 1000, "g", 3, MessageRecord::default());
        assert_eq!((m.topic.as_str(), m.queue_id), (TIMER_TOPIC, 3));
        assert_eq!(marker_key(&m), Some("T+ID1"));
        r.note(marker_key(&m).unwrap(), 1000);
        let target = MessageRecord {
            topic: "T".into(),
            properties: properties::encode([("UNIQ_KEY", "ID1")]),
            ..MessageRecord::default()
        };
        let other_topic = MessageRecord {
            topic: "U".into(),
            ..target.clone()
        };
        assert!(!r.take_if_recalled(&other_topic));
        assert!(r.take_if_recalled(&target));
        assert!(!r.take_if_recalled(&target));
        r.note("T+ID2", 1000);
        // Something due earlier is still pending: kept however old.
        r.prune(1000 + FORGET_AFTER_MS + 1, Some(999));
        assert_eq!(r.len(), 1);
        r.prune(1000 + FORGET_AFTER_MS - 1, None);
        assert_eq!(r.len(), 1);
        r.prune(1000 + FORGET_AFTER_MS + 1, None);
        assert!(r.is_empty());
    }
}

//! The two rewrites of a delayed message: parking (real topic/queue -> SCHEDULE_TOPIC_XXXX queue
//! level-1, with REAL_TOPIC / REAL_QID kept in properties, as RocketMQ does) and delivery (back to the
//! real topic and queue, DELAY removed, the other properties kept).

use std::net::SocketAddr;

use protocol::message::edited_properties::EditedProperties;
use protocol::message::properties;
use protocol::message::record::{sys_flag, MessageRecord};

use crate::state::topics::SCHEDULE_TOPIC;

/// The DELAY level of a send's properties (0 when absent, not a number or not positive).
pub fn delay_level_in(props: &EditedProperties<'_>) -> i32 {
    level_of(props.get(properties::DELAY))
}

fn level_of(value: Option<&str>) -> i32 {
    value
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|level| *level > 0)
        .unwrap_or(0)
}

/// Parks a record with a DELAY level > 0 in the schedule topic (level clamped to `max_level`); other
/// records, prepared or rolled-back transactional ones, and a broker without levels are left alone.
pub fn park_if_delayed(mut record: MessageRecord, max_level: usize) -> MessageRecord {
    let base = std::mem::take(&mut record.properties);
    let mut props = EditedProperties::new(&base);
    park_delayed(&mut record, &mut props, max_level);
    let text = (!props.is_unchanged()).then(|| props.encode());
    record.properties = text.unwrap_or(base);
    record
}

/// [`park_if_delayed`] on a send being built: the record's properties are `props` (encoded once, by
/// the caller, after every feature has edited them).
pub fn park_delayed<'a>(
    record: &mut MessageRecord,
    props: &mut EditedProperties<'a>,
    max_level: usize,
) {
    let level = delay_level_in(props);
    let kind = sys_flag::transaction_type(record.sys_flag);
    let transactional =
        kind != sys_flag::TRANSACTION_NOT_TYPE && kind != sys_flag::TRANSACTION_COMMIT;
    let Ok(max_level) = i32::try_from(max_level) else {
        return;
    };
    if level <= 0 || transactional || max_level < 1 || record.topic == SCHEDULE_TOPIC {
        return;
    }
    let level = level.min(max_level);
    props.set_number(properties::DELAY, i64::from(level));
    // The real topic moves into the property (no copy); the record takes the schedule topic.
    let real_topic = std::mem::replace(&mut record.topic, SCHEDULE_TOPIC.to_owned());
    props.set(properties::REAL_TOPIC, real_topic);
    props.set_number(properties::REAL_QUEUE_ID, i64::from(record.queue_id));
    record.queue_id = level - 1;
}

/// RocketMQ does not delay batches ("TimeDelayLevel is not supported for batching"): a batch whose
/// header or any message asks for a DELAY level is refused rather than delivered early.
pub fn refuse_delayed_batch(
    header_delay: Option<&str>,
    entries: &[protocol::message::batch::BatchMessage],
) -> Result<(), String> {
    let delayed = |delay: Option<&str>| {
        delay
            .and_then(|v| v.trim().parse::<i32>().ok())
            .is_some_and(|level| level > 0)
    };
    if delayed(header_delay)
        || entries
            .iter()
            .any(|e| delayed(properties::get(&e.properties, properties::DELAY)))
    {
        return Err("TimeDelayLevel is not supported for batching".to_owned());
    }
    Ok(())
}

/// The queue id a send reply names: the real queue for a parked (delayed or timer) record, else the
/// record's own.
pub fn reply_queue_id(record: &MessageRecord) -> i32 {
    if record.topic == SCHEDULE_TOPIC || record.topic == crate::state::topics::TIMER_TOPIC {
        if let Some(qid) = properties::get(&record.properties, properties::REAL_QUEUE_ID)
            .and_then(|v| v.trim().parse::<i32>().ok())
        {
            return qid;
        }
    }
    record.queue_id
}

/// Rebuilds a due record (decoded from the schedule or timer topic) for its real topic and queue,
/// without the properties named in `drop`. Err names what is missing: such a record cannot ever be
/// delivered and is skipped.
pub fn unpark(
    parked: MessageRecord,
    store_host: SocketAddr,
    drop: &[&str],
) -> Result<MessageRecord, String> {
    let topic = properties::get(&parked.properties, properties::REAL_TOPIC)
        .filter(|t| crate::state::topics::validate_topic_name(t).is_ok())
        .ok_or("no valid REAL_TOPIC property")?
        .to_owned();
    let queue_id = properties::get(&parked.properties, properties::REAL_QUEUE_ID)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|q| *q >= 0)
        .ok_or("no valid REAL_QID property")?;
    let props = drop.iter().fold(parked.properties.clone(), |p, key| {
        properties::without(&p, key)
    });
    Ok(MessageRecord {
        topic,
        queue_id,
        properties: props,
        // Host bits are the encoder's; the record is stored on its own.
        sys_flag: parked.sys_flag
            & !(sys_flag::BORNHOST_V6
                | sys_flag::STOREHOST_V6
                | sys_flag::INNER_BATCH
                | sys_flag::NEED_UNWRAP),
        store_host,
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp: 0,
        ..parked
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(topic: &str, queue_id: i32, props: &str) -> MessageRecord {
        MessageRecord {
            topic: topic.to_owned(),
            queue_id,
            properties: props.to_owned(),
            body: bytes::Bytes::from_static(b"body"),
            ..MessageRecord::default()
        }
    }

    fn props(pairs: &[(&str, &str)]) -> String {
        properties::encode(pairs.iter().copied())
    }

    #[test]
    fn parks_clamps_and_restores() {
        let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let original = record(
            "T",
            3,
            &props(&[("DELAY", "40"), ("TAGS", "a"), ("k", "v")]),
        );
        let parked = park_if_delayed(original.clone(), 18);
        assert_eq!(parked.topic, SCHEDULE_TOPIC);
        assert_eq!(parked.queue_id, 17);
        assert_eq!(properties::get(&parked.properties, "DELAY"), Some("18"));
        assert_eq!(properties::get(&parked.properties, "REAL_TOPIC"), Some("T"));
        assert_eq!(properties::get(&parked.properties, "REAL_QID"), Some("3"));
        assert_eq!(reply_queue_id(&parked), 3);
        let back = unpark(parked, host, &[properties::DELAY]).unwrap();
        assert_eq!((back.topic.as_str(), back.queue_id), ("T", 3));
        assert_eq!(properties::get(&back.properties, "DELAY"), None);
        assert_eq!(properties::get(&back.properties, "TAGS"), Some("a"));
        assert_eq!(properties::get(&back.properties, "k"), Some("v"));
        assert_eq!(back.body, original.body);
        assert_eq!(back.store_host, host);
    }

    #[test]
    fn leaves_undelayed_and_transactional_records() {
        for p in [
            "",
            "DELAY\u{1}0\u{2}",
            "DELAY\u{1}x\u{2}",
            "DELAY\u{1}-3\u{2}",
        ] {
            assert_eq!(park_if_delayed(record("T", 1, p), 18).topic, "T", "{p:?}");
        }
        let mut prepared = record("T", 1, &props(&[("DELAY", "2")]));
        prepared.sys_flag = sys_flag::TRANSACTION_PREPARED;
        assert_eq!(park_if_delayed(prepared, 18).topic, "T");
        assert_eq!(
            park_if_delayed(record("T", 1, &props(&[("DELAY", "2")])), 0).topic,
            "T"
        );
        let mut committed = record("T", 1, &props(&[("DELAY", "2")]));
        committed.sys_flag = sys_flag::TRANSACTION_COMMIT;
        assert_eq!(park_if_delayed(committed, 18).queue_id, 1);
    }

    #[test]
    fn unpark_refuses_records_without_a_destination() {
        let host: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(unpark(record(SCHEDULE_TOPIC, 0, ""), host, &[]).is_err());
        let bad_qid = props(&[("REAL_TOPIC", "T"), ("REAL_QID", "-1")]);
        assert!(unpark(record(SCHEDULE_TOPIC, 0, &bad_qid), host, &[]).is_err());
        let bad_topic = props(&[("REAL_TOPIC", "a b"), ("REAL_QID", "1")]);
        assert!(unpark(record(SCHEDULE_TOPIC, 0, &bad_topic), host, &[]).is_err());
    }
}

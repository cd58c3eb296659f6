//! The receipt handle of a popped message (`extraInfo`, RocketMQ's `ExtraInfoUtil`) and the three
//! per-queue strings of a POP_MESSAGE response it is rebuilt from.
//!
//! `extraInfo` is space separated: `ckQueueOffset popTime invisibleTime reviveQid retry brokerName
//! queueId queueOffset`, where `retry` is "0" for the topic itself, "1" for its pop retry topic
//! `%RETRY%group_topic` and "2" for `%RETRY%group+topic`. `startOffsetInfo`, `msgOffsetInfo` and
//! `orderCountInfo` are `;`-separated entries `retry queueId value` keyed `retry@queueId` (order
//! counts may also be keyed per message: `retry qo<queueId>%<offset> count`).

use std::collections::HashMap;
use std::fmt;

/// Prefix of retry topics (`%RETRY%`).
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
const SEPARATOR: char = ' ';

/// Which topic a receipt handle's message is in, relative to the topic the consumer asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryMark {
    /// "0": the topic itself.
    Normal,
    /// "1": `%RETRY%group_topic`.
    RetryV1,
    /// "2": `%RETRY%group+topic`.
    RetryV2,
}

impl RetryMark {
    /// The mark of a topic a message was read from.
    pub fn of_topic(topic: &str) -> RetryMark {
        if !topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            RetryMark::Normal
        } else if topic.contains('+') {
            RetryMark::RetryV2
        } else {
            RetryMark::RetryV1
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RetryMark::Normal => "0",
            RetryMark::RetryV1 => "1",
            RetryMark::RetryV2 => "2",
        }
    }

    pub fn parse(text: &str) -> Option<RetryMark> {
        match text {
            "0" => Some(RetryMark::Normal),
            "1" => Some(RetryMark::RetryV1),
            "2" => Some(RetryMark::RetryV2),
            _ => None,
        }
    }

    /// The topic a message with this mark is really in, for a consumer of `topic` in `group`.
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            RetryMark::Normal => topic.to_owned(),
            RetryMark::RetryV1 => pop_retry_topic(topic, group),
            RetryMark::RetryV2 => format!("{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"),
        }
    }
}

/// The pop retry topic of a group and topic, as RocketMQ 5 names it by default
/// (`KeyBuilder.buildPopRetryTopicV1`): `%RETRY%group_topic`.
pub fn pop_retry_topic(topic: &str, group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}")
}

/// A parsed receipt handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    /// The first offset of the check point the message belongs to.
    pub ck_queue_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    /// `POP_ORDER_REVIVE_QUEUE` (999) for an ordered pop.
    pub revive_qid: i32,
    pub retry: RetryMark,
    pub broker_name: String,
    pub queue_id: i32,
    /// The message's own queue offset (absent in handles of clients before 4.9.3's format).
    pub queue_offset: Option<i64>,
}

/// Why a receipt handle does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal extraInfo {text:?}: {why}")]
pub struct ExtraInfoError {
    pub text: String,
    pub why: &'static str,
}

impl ExtraInfo {
    pub fn parse(text: &str) -> Result<ExtraInfo, ExtraInfoError> {
        let fail = |why| ExtraInfoError {
            text: text.chars().take(200).collect(),
            why,
        };
        let parts: Vec<&str> = text.split(SEPARATOR).collect();
        if parts.len() < 7 {
            return Err(fail("fewer than 7 fields"));
        }
        let field = |i: usize| parts.get(i).copied().unwrap_or("");
        let num = |i: usize, why| field(i).parse::<i64>().map_err(|_| fail(why));
        Ok(ExtraInfo {
            ck_queue_offset: num(0, "ckQueueOffset is not a number")?,
            pop_time: num(1, "popTime is not a number")?,
            invisible_time: num(2, "invisibleTime is not a number")?,
            revive_qid: field(3)
                .parse()
                .map_err(|_| fail("reviveQid is not a number"))?,
            retry: RetryMark::parse(field(4)).ok_or_else(|| fail("retry mark is not 0, 1 or 2"))?,
            broker_name: field(5).to_owned(),
            queue_id: field(6)
                .parse()
                .map_err(|_| fail("queueId is not a number"))?,
            queue_offset: match parts.get(7) {
                Some(o) => Some(o.parse().map_err(|_| fail("queueOffset is not a number"))?),
                None => None,
            },
        })
    }

    /// Whether the handle is of an ordered (FIFO) pop.
    pub fn is_order(&self) -> bool {
        self.revive_qid == super::pop::POP_ORDER_REVIVE_QUEUE
    }
}

impl fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry.as_str(),
            self.broker_name,
            self.queue_id
        )?;
        if let Some(o) = self.queue_offset {
            write!(f, " {o}")?;
        }
        Ok(())
    }
}

fn push_entry(out: &mut String, topic: &str, key: &str, value: &str) {
    if !out.is_empty() {
        out.push(';');
    }
    out.push_str(RetryMark::of_topic(topic).as_str());
    out.push(SEPARATOR);
    out.push_str(key);
    out.push(SEPARATOR);
    out.push_str(value);
}

/// Appends a queue's start offset (the check point's `ckQueueOffset`) to `startOffsetInfo`.
pub fn push_start_offset_info(out: &mut String, topic: &str, queue_id: i32, start_offset: i64) {
    push_entry(out, topic, &queue_id.to_string(), &start_offset.to_string());
}

/// Appends a queue's popped offsets to `msgOffsetInfo`.
pub fn push_msg_offset_info(out: &mut String, topic: &str, queue_id: i32, offsets: &[i64]) {
    let list: Vec<String> = offsets.iter().map(i64::to_string).collect();
    push_entry(out, topic, &queue_id.to_string(), &list.join(","));
}

/// Appends a queue's (smallest) delivery count to `orderCountInfo`.
pub fn push_queue_order_count(out: &mut String, topic: &str, queue_id: i32, count: i32) {
    push_entry(out, topic, &queue_id.to_string(), &count.to_string());
}

/// Appends one message's delivery count to `orderCountInfo`.
pub fn push_offset_order_count(
    out: &mut String,
    topic: &str,
    queue_id: i32,
    offset: i64,
    count: i32,
) {
    push_entry(
        out,
        topic,
        &queue_offset_key(queue_id, offset),
        &count.to_string(),
    );
}

/// The key of one message in `orderCountInfo` entries: `qo<queueId>%<offset>`.
pub fn queue_offset_key(queue_id: i32, offset: i64) -> String {
    format!("qo{queue_id}%{offset}")
}

/// The map key of a queue of `topic` in the parsed infos: `retry@queueId`.
pub fn info_key(topic: &str, queue_id: i32) -> String {
    format!("{}@{queue_id}", RetryMark::of_topic(topic).as_str())
}

/// The map key of one message in a parsed `orderCountInfo`: `retry@qo<queueId>%<offset>`.
pub fn info_offset_key(topic: &str, queue_id: i32, offset: i64) -> String {
    format!(
        "{}@{}",
        RetryMark::of_topic(topic).as_str(),
        queue_offset_key(queue_id, offset)
    )
}

fn parse_entries<T>(
    text: &str,
    value: impl Fn(&str) -> Option<T>,
) -> Result<HashMap<String, T>, String> {
    let mut map = HashMap::new();
    for entry in text.split(';').filter(|e| !e.is_empty()) {
        let parts: Vec<&str> = entry.split(SEPARATOR).collect();
        let [mark, key, v] = parts.as_slice() else {
            return Err(format!("entry {entry:?} has not 3 fields"));
        };
        let v = value(v).ok_or_else(|| format!("entry {entry:?} has a bad value"))?;
        if map.insert(format!("{mark}@{key}"), v).is_some() {
            return Err(format!("entry {entry:?} is a duplicate"));
        }
    }
    Ok(map)
}

/// Parses `startOffsetInfo`.
pub fn parse_start_offset_info(text: &str) -> Result<HashMap<String, i64>, String> {
    parse_entries(text, |v| v.parse().ok())
}

/// Parses `msgOffsetInfo`.
pub fn parse_msg_offset_info(text: &str) -> Result<HashMap<String, Vec<i64>>, String> {
    parse_entries(text, |v| {
        v.split(',')
            .map(|o| o.parse().ok())
            .collect::<Option<Vec<i64>>>()
    })
}

/// Parses `orderCountInfo`.
pub fn parse_order_count_info(text: &str) -> Result<HashMap<String, i32>, String> {
    parse_entries(text, |v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipt_handles_round_trip_in_rocketmqs_format() {
        let info = ExtraInfo {
            ck_queue_offset: 10,
            pop_time: 1_700_000_000_000,
            invisible_time: 60_000,
            revive_qid: 0,
            retry: RetryMark::of_topic("%RETRY%g_T"),
            broker_name: "broker-a-0".into(),
            queue_id: 0,
            queue_offset: Some(12),
        };
        let text = info.to_string();
        assert_eq!(text, "10 1700000000000 60000 0 1 broker-a-0 0 12");
        assert_eq!(ExtraInfo::parse(&text).unwrap(), info);
        assert_eq!(info.retry.real_topic("T", "g"), "%RETRY%g_T");
        let old = ExtraInfo::parse("5 1 2 999 0 b 3").unwrap();
        assert!(old.is_order());
        assert_eq!(old.queue_offset, None);
        assert!(ExtraInfo::parse("5 1 2 x 0 b 3").is_err());
        assert!(ExtraInfo::parse("5 1 2 0 7 b 3").is_err());
        assert!(ExtraInfo::parse("").is_err());
    }

    #[test]
    fn offset_infos_build_and_parse() {
        let mut start = String::new();
        push_start_offset_info(&mut start, "T", 1, 7);
        push_start_offset_info(&mut start, "%RETRY%g_T", 0, 3);
        assert_eq!(start, "0 1 7;1 0 3");
        let parsed = parse_start_offset_info(&start).unwrap();
        assert_eq!(parsed[&info_key("T", 1)], 7);
        assert_eq!(parsed["1@0"], 3);
        let mut msgs = String::new();
        push_msg_offset_info(&mut msgs, "T", 1, &[7, 8, 10]);
        assert_eq!(parse_msg_offset_info(&msgs).unwrap()["0@1"], vec![7, 8, 10]);
        let mut counts = String::new();
        push_offset_order_count(&mut counts, "T", 2, 5, 1);
        push_queue_order_count(&mut counts, "T", 2, 1);
        let c = parse_order_count_info(&counts).unwrap();
        assert_eq!(c[&info_offset_key("T", 2, 5)], 1);
        assert_eq!(c["0@2"], 1);
        assert!(parse_start_offset_info("0 1").is_err());
        assert!(parse_start_offset_info("0 1 7;0 1 8").is_err());
    }
}

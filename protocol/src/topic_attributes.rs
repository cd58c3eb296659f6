//! Topic attributes as RocketMQ 5.x defines them (`TopicAttributes`, `AttributeParser`,
//! `AttributeUtil`): the four attributes, their values, which may change after creation, the
//! `+key=value,-key` modification strings of UPDATE_AND_CREATE_TOPIC, and the message type of a topic
//! and of a message.
//!
//! A topic's stored attributes use the bare key (`message.type`); a modification string and the
//! request body of UPDATE_AND_CREATE_TOPIC_LIST use `+key` to add or change and `-key` to delete.

use std::collections::BTreeMap;

use crate::body::TopicConfig;
use crate::message::properties;

/// `queue.type`: `SimpleCQ` (default) or `BatchCQ`; fixed at creation.
pub const QUEUE_TYPE: &str = "queue.type";
/// `cleanup.policy`: `DELETE` (default, retention by age) or `COMPACTION`; fixed at creation.
pub const CLEANUP_POLICY: &str = "cleanup.policy";
/// `message.type`: see [`TopicMessageType`]; may change.
pub const MESSAGE_TYPE: &str = "message.type";
/// `reserve.time`: hours the topic's messages are kept (-1: the broker's `fileReservedTime`); may change.
pub const RESERVE_TIME: &str = "reserve.time";

/// The values an attribute takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeValues {
    /// One of a set (`EnumAttribute`).
    OneOf(&'static [&'static str]),
    /// A decimal i64 within `min..=max` (`LongRangeAttribute`).
    Range { min: i64, max: i64 },
}

/// One topic attribute: name, whether it may change after creation, values, default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    pub name: &'static str,
    pub changeable: bool,
    pub values: AttributeValues,
    pub default: &'static str,
}

impl Attribute {
    /// Checks a value, with Apache's error texts.
    pub fn verify(&self, value: &str) -> Result<(), String> {
        match self.values {
            AttributeValues::OneOf(set) => {
                if set.contains(&value) {
                    Ok(())
                } else {
                    Err(format!("value is not in set: [{}]", set.join(", ")))
                }
            }
            AttributeValues::Range { min, max } => {
                let v: i64 = value
                    .parse()
                    .map_err(|_| format!("For input string: \"{value}\""))?;
                if v < min || v > max {
                    Err(format!("value is not in range({min}, {max})"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Every topic attribute of RocketMQ 5.x (`TopicAttributes.ALL`).
pub const TOPIC_ATTRIBUTES: &[Attribute] = &[
    Attribute {
        name: QUEUE_TYPE,
        changeable: false,
        values: AttributeValues::OneOf(&["BatchCQ", "SimpleCQ"]),
        default: "SimpleCQ",
    },
    Attribute {
        name: CLEANUP_POLICY,
        changeable: false,
        values: AttributeValues::OneOf(&["DELETE", "COMPACTION"]),
        default: "DELETE",
    },
    Attribute {
        name: MESSAGE_TYPE,
        changeable: true,
        values: AttributeValues::OneOf(&[
            "UNSPECIFIED",
            "NORMAL",
            "FIFO",
            "DELAY",
            "TRANSACTION",
            "MIXED",
        ]),
        default: "NORMAL",
    },
    Attribute {
        name: RESERVE_TIME,
        changeable: true,
        values: AttributeValues::Range {
            min: -1,
            max: i64::MAX,
        },
        default: "-1",
    },
];

/// The attribute called `name`.
pub fn attribute(name: &str) -> Option<&'static Attribute> {
    TOPIC_ATTRIBUTES.iter().find(|a| a.name == name)
}

/// Parses a modification string, `+k1=v1,+k2=v2,-k3` (Apache's `AttributeParser.parseToMap`): keys
/// keep their sign. Empty input is no change.
pub fn parse_modification(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    if s.is_empty() {
        return Ok(out);
    }
    for kv in s.split(',') {
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => {
                if !k.contains('+') {
                    return Err(format!("add/alter attribute format is wrong: {k}"));
                }
                (k, v)
            }
            None => {
                if !kv.contains('-') {
                    return Err(format!("delete attribute format is wrong: {kv}"));
                }
                (kv, "")
            }
        };
        if out.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(format!("key duplication: {key}"));
        }
    }
    Ok(out)
}

/// Writes signed attributes back as a modification string (`AttributeParser.parseToString`).
pub fn modification_string(attributes: &BTreeMap<String, String>) -> String {
    attributes
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Applies signed attributes to a topic's current ones (Apache's `AttributeUtil.alterCurrentAttributes`):
/// at creation only `+key`; later `+key` adds or changes a changeable attribute and `-key` deletes one
/// that is set. Every key must be a topic attribute and every value valid; the texts are Apache's.
pub fn alter(
    create: bool,
    current: &BTreeMap<String, String>,
    signed: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut result = current.clone();
    let mut seen = std::collections::BTreeSet::new();
    let mut deletes = Vec::new();
    let mut sets = Vec::new();
    for (key, value) in signed {
        let mut chars = key.chars();
        let sign = chars.next();
        let real = chars.as_str();
        if real.is_empty() || real.contains('+') || real.contains('-') {
            return Err("kv string format wrong.".to_owned());
        }
        if !seen.insert(real) {
            return Err(format!("alter duplication key. key: {real}"));
        }
        match sign {
            Some('+') => sets.push((real, value.as_str())),
            Some('-') if !create => {
                if !current.contains_key(real) {
                    return Err(format!("attempt to delete a nonexistent key: {real}"));
                }
                deletes.push(real);
            }
            _ if create => {
                return Err(format!(
                    "only add attribute is supported while creating topic. key: {real}"
                ))
            }
            _ => return Err(format!("wrong format key: {real}")),
        }
    }
    for (real, value) in &sets {
        let attr = attribute(real).ok_or_else(|| format!("unsupported key: {real}"))?;
        if !create && !attr.changeable {
            return Err(format!(
                "attempt to update an unchangeable attribute. key: {real}"
            ));
        }
        attr.verify(value)?;
    }
    for real in &deletes {
        let attr = attribute(real).ok_or_else(|| format!("unsupported key: {real}"))?;
        if !attr.changeable {
            return Err(format!(
                "attempt to update an unchangeable attribute. key: {real}"
            ));
        }
    }
    for (real, value) in sets {
        result.insert(real.to_owned(), value.to_owned());
    }
    for real in deletes {
        result.remove(real);
    }
    Ok(result)
}

/// A topic's or a message's type (`TopicMessageType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicMessageType {
    Unspecified,
    Normal,
    Fifo,
    Delay,
    Transaction,
    Mixed,
}

impl TopicMessageType {
    pub fn parse(s: &str) -> Option<TopicMessageType> {
        Some(match s {
            "UNSPECIFIED" => TopicMessageType::Unspecified,
            "NORMAL" => TopicMessageType::Normal,
            "FIFO" => TopicMessageType::Fifo,
            "DELAY" => TopicMessageType::Delay,
            "TRANSACTION" => TopicMessageType::Transaction,
            "MIXED" => TopicMessageType::Mixed,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TopicMessageType::Unspecified => "UNSPECIFIED",
            TopicMessageType::Normal => "NORMAL",
            TopicMessageType::Fifo => "FIFO",
            TopicMessageType::Delay => "DELAY",
            TopicMessageType::Transaction => "TRANSACTION",
            TopicMessageType::Mixed => "MIXED",
        }
    }

    /// A message's type from its properties (`TopicMessageType.parseFromMessageProperty`):
    /// transaction, then delay or timer, then a sharding key (FIFO), else normal.
    pub fn of_message<'a>(get: impl Fn(&str) -> Option<&'a str>) -> TopicMessageType {
        if get(properties::TRANSACTION_PREPARED) == Some("true") {
            TopicMessageType::Transaction
        } else if [
            properties::DELAY,
            properties::TIMER_DELIVER_MS,
            properties::TIMER_DELAY_SEC,
            properties::TIMER_DELAY_MS,
        ]
        .iter()
        .any(|k| get(k).is_some())
        {
            TopicMessageType::Delay
        } else if get(properties::SHARDING_KEY).is_some() {
            TopicMessageType::Fifo
        } else {
            TopicMessageType::Normal
        }
    }
}

impl std::fmt::Display for TopicMessageType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TopicConfig {
    /// The topic's `message.type` (NORMAL when unset or not a known type, as Apache reads it).
    pub fn message_type(&self) -> TopicMessageType {
        self.attributes
            .get(MESSAGE_TYPE)
            .and_then(|v| TopicMessageType::parse(v))
            .unwrap_or(TopicMessageType::Normal)
    }

    /// Whether `cleanup.policy=COMPACTION`: the newest record per key is kept instead of aging out.
    pub fn is_compacted(&self) -> bool {
        self.attributes.get(CLEANUP_POLICY).map(String::as_str) == Some("COMPACTION")
    }

    /// `reserve.time` in hours when set to a positive value (otherwise the broker's `fileReservedTime`).
    pub fn reserve_time_hours(&self) -> Option<u64> {
        self.attributes
            .get(RESERVE_TIME)
            .and_then(|v| v.parse::<i64>().ok())
            .and_then(|h| u64::try_from(h).ok())
            .filter(|h| *h > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn modification_strings_parse_as_apache_parses_them() {
        assert_eq!(
            parse_modification("+message.type=FIFO,-reserve.time").unwrap(),
            map(&[("+message.type", "FIFO"), ("-reserve.time", "")])
        );
        assert!(parse_modification("").unwrap().is_empty());
        assert_eq!(
            parse_modification("message.type=FIFO").unwrap_err(),
            "add/alter attribute format is wrong: message.type"
        );
        assert_eq!(
            parse_modification("reserve.time").unwrap_err(),
            "delete attribute format is wrong: reserve.time"
        );
        assert!(parse_modification("+a=1,+a=2")
            .unwrap_err()
            .starts_with("key duplication"));
        let m = map(&[("+message.type", "FIFO"), ("-reserve.time", "")]);
        assert_eq!(parse_modification(&modification_string(&m)).unwrap(), m);
    }

    #[test]
    fn creation_takes_only_additions_of_known_valid_attributes() {
        let none = BTreeMap::new();
        let created = alter(
            true,
            &none,
            &map(&[("+cleanup.policy", "COMPACTION"), ("+message.type", "FIFO")]),
        )
        .unwrap();
        assert_eq!(
            created,
            map(&[("cleanup.policy", "COMPACTION"), ("message.type", "FIFO")])
        );
        assert_eq!(
            alter(true, &none, &map(&[("-message.type", "")])).unwrap_err(),
            "only add attribute is supported while creating topic. key: message.type"
        );
        assert_eq!(
            alter(true, &none, &map(&[("+color", "red")])).unwrap_err(),
            "unsupported key: color"
        );
        assert!(alter(true, &none, &map(&[("+message.type", "ORDERED")]))
            .unwrap_err()
            .starts_with("value is not in set"));
        assert_eq!(
            alter(true, &none, &map(&[("+reserve.time", "-2")])).unwrap_err(),
            "value is not in range(-1, 9223372036854775807)"
        );
        assert!(alter(true, &none, &map(&[("+reserve.time", "x")])).is_err());
    }

    #[test]
    fn updates_follow_changeability() {
        let cur = map(&[("cleanup.policy", "COMPACTION"), ("message.type", "FIFO")]);
        assert_eq!(
            alter(false, &cur, &map(&[("+cleanup.policy", "DELETE")])).unwrap_err(),
            "attempt to update an unchangeable attribute. key: cleanup.policy"
        );
        let changed = alter(
            false,
            &cur,
            &map(&[("+message.type", "NORMAL"), ("+reserve.time", "24")]),
        )
        .unwrap();
        assert_eq!(changed.get("message.type").unwrap(), "NORMAL");
        assert_eq!(changed.get("reserve.time").unwrap(), "24");
        let deleted = alter(false, &changed, &map(&[("-reserve.time", "")])).unwrap();
        assert!(!deleted.contains_key("reserve.time"));
        assert_eq!(
            alter(false, &deleted, &map(&[("-reserve.time", "")])).unwrap_err(),
            "attempt to delete a nonexistent key: reserve.time"
        );
        assert_eq!(
            alter(false, &cur, &map(&[("message.type", "FIFO")])).unwrap_err(),
            "wrong format key: essage.type"
        );
        // Nothing asked: the current attributes stay.
        assert_eq!(alter(false, &cur, &BTreeMap::new()).unwrap(), cur);
    }

    #[test]
    fn message_types_of_topics_and_messages() {
        let mut tc = TopicConfig::new("T", 4);
        assert_eq!(tc.message_type(), TopicMessageType::Normal);
        tc.attributes.insert(MESSAGE_TYPE.into(), "FIFO".into());
        assert_eq!(tc.message_type(), TopicMessageType::Fifo);
        assert!(!tc.is_compacted());
        tc.attributes.insert(CLEANUP_POLICY.into(), "COMPACTION".into());
        assert!(tc.is_compacted());
        assert_eq!(tc.reserve_time_hours(), None);
        tc.attributes.insert(RESERVE_TIME.into(), "48".into());
        assert_eq!(tc.reserve_time_hours(), Some(48));

        let props = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| *v)
        };
        assert_eq!(
            TopicMessageType::of_message(props(&[("TRAN_MSG", "true"), ("DELAY", "3")])),
            TopicMessageType::Transaction
        );
        assert_eq!(
            TopicMessageType::of_message(props(&[("TIMER_DELAY_MS", "5"), ("__SHARDINGKEY", "k")])),
            TopicMessageType::Delay
        );
        assert_eq!(
            TopicMessageType::of_message(props(&[("__SHARDINGKEY", "k")])),
            TopicMessageType::Fifo
        );
        assert_eq!(
            TopicMessageType::of_message(props(&[("KEYS", "k")])),
            TopicMessageType::Normal
        );
    }
}

//! A send header read in place: [`SendHeader`] has the fields of [`SendMessageRequestHeader`], its text
//! fields borrowed from the request's extFields, so the broker reads a send's header without copying
//! its topic, producer group, default topic, properties and broker name.

use super::fields::{HeaderError, HeaderValue};
use super::send::SendMessageRequestHeader;
use crate::code::request_code;
use crate::ext_fields::ExtFields;

/// The wire names of one form of the send header, in [`SendMessageRequestHeader`]'s field order.
struct Names {
    producer_group: &'static str,
    topic: &'static str,
    default_topic: &'static str,
    default_topic_queue_nums: &'static str,
    queue_id: &'static str,
    sys_flag: &'static str,
    born_timestamp: &'static str,
    flag: &'static str,
    properties: &'static str,
    reconsume_times: &'static str,
    unit_mode: &'static str,
    batch: &'static str,
    max_reconsume_times: &'static str,
    broker_name: &'static str,
}

/// SEND_MESSAGE's long names.
const LONG: Names = Names {
    producer_group: "producerGroup",
    topic: "topic",
    default_topic: "defaultTopic",
    default_topic_queue_nums: "defaultTopicQueueNums",
    queue_id: "queueId",
    sys_flag: "sysFlag",
    born_timestamp: "bornTimestamp",
    flag: "flag",
    properties: "properties",
    reconsume_times: "reconsumeTimes",
    unit_mode: "unitMode",
    batch: "batch",
    max_reconsume_times: "maxReconsumeTimes",
    broker_name: "bname",
};

/// SEND_MESSAGE_V2's one-letter names.
const SHORT: Names = Names {
    producer_group: "a",
    topic: "b",
    default_topic: "c",
    default_topic_queue_nums: "d",
    queue_id: "e",
    sys_flag: "f",
    born_timestamp: "g",
    flag: "h",
    properties: "i",
    reconsume_times: "j",
    unit_mode: "k",
    batch: "m",
    max_reconsume_times: "l",
    broker_name: "n",
};

/// A send request's header, its text fields borrowed from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendHeader<'a> {
    pub producer_group: &'a str,
    pub topic: &'a str,
    pub default_topic: &'a str,
    pub default_topic_queue_nums: i32,
    pub queue_id: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub flag: i32,
    pub properties: Option<&'a str>,
    pub reconsume_times: Option<i32>,
    pub unit_mode: Option<bool>,
    pub batch: Option<bool>,
    pub max_reconsume_times: Option<i32>,
    pub broker_name: Option<&'a str>,
}

fn required<'a>(fields: &'a ExtFields, name: &'static str) -> Result<&'a str, HeaderError> {
    fields.get(name).ok_or(HeaderError::Missing(name))
}

impl<'a> SendHeader<'a> {
    /// Reads the header as [`SendMessageRequestHeader::parse`] does: the same form is chosen, the
    /// same values are accepted and the same first error is returned.
    pub fn parse(code: i32, fields: &'a ExtFields) -> Result<Self, HeaderError> {
        let short = match code {
            request_code::SEND_MESSAGE_V2
            | request_code::SEND_BATCH_MESSAGE
            | request_code::SEND_REPLY_MESSAGE_V2 => {
                fields.contains_key("a") || !fields.contains_key("producerGroup")
            }
            _ => !fields.contains_key("producerGroup") && fields.contains_key("a"),
        };
        let n = if short { &SHORT } else { &LONG };
        // Read in the declaration order of the owned headers, so a request with several bad fields
        // is refused naming the same one. The short form reads maxReconsumeTimes (l) before batch (m).
        let producer_group = required(fields, n.producer_group)?;
        let topic = required(fields, n.topic)?;
        let default_topic = required(fields, n.default_topic)?;
        let default_topic_queue_nums = i32::read(fields, n.default_topic_queue_nums)?;
        let queue_id = i32::read(fields, n.queue_id)?;
        let sys_flag = i32::read(fields, n.sys_flag)?;
        let born_timestamp = i64::read(fields, n.born_timestamp)?;
        let flag = i32::read(fields, n.flag)?;
        let properties = fields.get(n.properties);
        let reconsume_times = Option::<i32>::read(fields, n.reconsume_times)?;
        let unit_mode = Option::<bool>::read(fields, n.unit_mode)?;
        let (batch, max_reconsume_times) = if short {
            let max = Option::<i32>::read(fields, n.max_reconsume_times)?;
            (Option::<bool>::read(fields, n.batch)?, max)
        } else {
            let batch = Option::<bool>::read(fields, n.batch)?;
            (batch, Option::<i32>::read(fields, n.max_reconsume_times)?)
        };
        let broker_name = fields.get(n.broker_name);
        Ok(SendHeader {
            producer_group,
            topic,
            default_topic,
            default_topic_queue_nums,
            queue_id,
            sys_flag,
            born_timestamp,
            flag,
            properties,
            reconsume_times,
            unit_mode,
            batch,
            max_reconsume_times,
            broker_name,
        })
    }

    /// Whether the body is a batch: code 320, or `batch=true` on code 10/310.
    pub fn is_batch(&self, code: i32) -> bool {
        code == request_code::SEND_BATCH_MESSAGE || self.batch == Some(true)
    }

    /// The owned header with the same values.
    pub fn to_owned_header(&self) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.producer_group.to_owned(),
            topic: self.topic.to_owned(),
            default_topic: self.default_topic.to_owned(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: self.queue_id,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            flag: self.flag,
            properties: self.properties.map(str::to_owned),
            reconsume_times: self.reconsume_times,
            unit_mode: self.unit_mode,
            batch: self.batch,
            max_reconsume_times: self.max_reconsume_times,
            broker_name: self.broker_name.map(str::to_owned),
        }
    }
}

impl SendMessageRequestHeader {
    /// The header borrowed as a [`SendHeader`].
    pub fn as_view(&self) -> SendHeader<'_> {
        SendHeader {
            producer_group: &self.producer_group,
            topic: &self.topic,
            default_topic: &self.default_topic,
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: self.queue_id,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            flag: self.flag,
            properties: self.properties.as_deref(),
            reconsume_times: self.reconsume_times,
            unit_mode: self.unit_mode,
            batch: self.batch,
            max_reconsume_times: self.max_reconsume_times,
            broker_name: self.broker_name.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::fields::CommandHeader;

    fn v2_fields() -> ExtFields {
        [
            ("a", "pg"),
            ("b", "TopicTest"),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", "3"),
            ("f", "0"),
            ("g", "1700000000000"),
            ("h", "0"),
            ("i", "TAGS\u{1}A\u{2}"),
            ("j", " 2 "),
            ("k", "false"),
            ("l", ""),
            ("m", "TRUE"),
            ("n", "broker-a"),
        ]
        .into_iter()
        .collect()
    }

    /// Both readers on the same fields: the same header or the same error.
    fn same(code: i32, fields: &ExtFields) {
        let owned = SendMessageRequestHeader::parse(code, fields);
        let view = SendHeader::parse(code, fields);
        match (&owned, &view) {
            (Ok(o), Ok(v)) => {
                assert_eq!(v.to_owned_header(), *o);
                assert_eq!(o.as_view(), *v);
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("owned {owned:?} and view {view:?} disagree"),
        }
    }

    #[test]
    fn the_view_reads_what_the_owned_header_reads() {
        use request_code::*;
        let short = v2_fields();
        let long = SendMessageRequestHeader::parse(SEND_MESSAGE_V2, &short)
            .unwrap()
            .to_ext_fields();
        for code in [
            SEND_MESSAGE,
            SEND_MESSAGE_V2,
            SEND_BATCH_MESSAGE,
            SEND_REPLY_MESSAGE,
            SEND_REPLY_MESSAGE_V2,
        ] {
            same(code, &short);
            same(code, &long);
            for fields in [&short, &long] {
                // Every field missing in turn, and every field with a value numbers refuse.
                let names: Vec<String> = fields.iter().map(|(k, _)| k.to_owned()).collect();
                for name in &names {
                    let mut missing = fields.clone();
                    missing.remove(name);
                    same(code, &missing);
                    let mut bad = fields.clone();
                    bad.insert(name, "x1");
                    same(code, &bad);
                }
                // Two bad fields: the same one is named.
                let mut two = fields.clone();
                for name in ["l", "m", "batch", "maxReconsumeTimes", "d", "defaultTopicQueueNums"] {
                    two.insert(name, "x");
                }
                same(code, &two);
            }
        }
        let v = SendHeader::parse(SEND_MESSAGE_V2, &short).unwrap();
        assert_eq!(v.topic, "TopicTest");
        assert_eq!(v.reconsume_times, Some(2));
        assert_eq!(v.max_reconsume_times, None);
        assert!(v.is_batch(SEND_MESSAGE_V2));
        assert_eq!(v.properties, Some("TAGS\u{1}A\u{2}"));
    }
}

//! Send headers: SEND_MESSAGE (long names), SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE (names a..n), and the send response.

use super::fields::{command_header, CommandHeader, HeaderError};
use crate::code::request_code;
use crate::ext_fields::ExtFields;

command_header! {
    /// SEND_MESSAGE (10) header, RocketMQ's `SendMessageRequestHeader`.
    pub struct SendMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        /// True when the body is a batch (the C++ client sends batches as code 10 with this set).
        batch: Option<bool> = "batch",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
        /// From RocketMQ's `RpcRequestHeader`.
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    /// SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) header: the same fields under one-letter names.
    pub struct SendMessageRequestHeaderV2 {
        /// producerGroup
        a: String = "a",
        /// topic
        b: String = "b",
        /// defaultTopic
        c: String = "c",
        /// defaultTopicQueueNums
        d: i32 = "d",
        /// queueId
        e: i32 = "e",
        /// sysFlag
        f: i32 = "f",
        /// bornTimestamp
        g: i64 = "g",
        /// flag
        h: i32 = "h",
        /// properties
        i: Option<String> = "i",
        /// reconsumeTimes
        j: Option<i32> = "j",
        /// unitMode
        k: Option<bool> = "k",
        /// consumeRetryTimes (maxReconsumeTimes in the long form)
        l: Option<i32> = "l",
        /// batch
        m: Option<bool> = "m",
        /// brokerName
        n: Option<String> = "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        SendMessageRequestHeader {
            producer_group: v2.a,
            topic: v2.b,
            default_topic: v2.c,
            default_topic_queue_nums: v2.d,
            queue_id: v2.e,
            sys_flag: v2.f,
            born_timestamp: v2.g,
            flag: v2.h,
            properties: v2.i,
            reconsume_times: v2.j,
            unit_mode: v2.k,
            max_reconsume_times: v2.l,
            batch: v2.m,
            broker_name: v2.n,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        SendMessageRequestHeaderV2 {
            a: v1.producer_group,
            b: v1.topic,
            c: v1.default_topic,
            d: v1.default_topic_queue_nums,
            e: v1.queue_id,
            f: v1.sys_flag,
            g: v1.born_timestamp,
            h: v1.flag,
            i: v1.properties,
            j: v1.reconsume_times,
            k: v1.unit_mode,
            l: v1.max_reconsume_times,
            m: v1.batch,
            n: v1.broker_name,
        }
    }
}

impl SendMessageRequestHeader {
    /// Reads the send header of a SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE
    /// or SEND_REPLY_MESSAGE_V2 request in whichever form it came: the short names for 310/320/325 and
    /// the long names for 10/324, falling back
    /// to the other form when the expected one's first field is absent (seen from some clients).
    pub fn parse(code: i32, fields: &ExtFields) -> Result<Self, HeaderError> {
        let short = match code {
            request_code::SEND_MESSAGE_V2
            | request_code::SEND_BATCH_MESSAGE
            | request_code::SEND_REPLY_MESSAGE_V2 => {
                fields.contains_key("a") || !fields.contains_key("producerGroup")
            }
            _ => !fields.contains_key("producerGroup") && fields.contains_key("a"),
        };
        if short {
            SendMessageRequestHeaderV2::from_ext_fields(fields).map(Into::into)
        } else {
            SendMessageRequestHeader::from_ext_fields(fields)
        }
    }

    /// Whether the body is a batch: code 320, or `batch=true` on code 10/310.
    pub fn is_batch(&self, code: i32) -> bool {
        code == request_code::SEND_BATCH_MESSAGE || self.batch == Some(true)
    }
}

command_header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT (326) header, RocketMQ's `ReplyMessageRequestHeader`: a reply the
    /// broker pushes to the client that sent the request message.
    pub struct ReplyMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: bool = "unitMode",
        /// `ip:port` of the replying client.
        born_host: String = "bornHost",
        /// `ip:port` of the broker.
        store_host: String = "storeHost",
        store_timestamp: i64 = "storeTimestamp",
    }
}

command_header! {
    /// Response header of every send: `msgId` is the offsetMsgId.
    pub struct SendMessageResponseHeader {
        msg_id: String = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<String> = "transactionId",
        batch_uniq_id: Option<String> = "batchUniqId",
        recall_handle: Option<String> = "recallHandle",
    }
}

impl SendMessageResponseHeader {
    /// The extFields of a send's answer, the msgId written in place by `write_msg_id` (a send's
    /// answer is built once per message: this saves the msgId its own `String`).
    pub fn ext_fields_with(
        write_msg_id: impl FnOnce(&mut String),
        queue_id: i32,
        queue_offset: i64,
    ) -> ExtFields {
        // msgId, queueId, queueOffset and the two fields the broker adds (MSG_REGION, TRACE_ON).
        let mut out = ExtFields::with_capacity(5, 128);
        out.insert_with("msgId", write_msg_id);
        out.insert_display("queueId", queue_id);
        out.insert_display("queueOffset", queue_offset);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("j", "0"),
            ("k", "false"),
            ("m", "true"),
            ("n", "broker-a"),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn v2_short_names_become_the_long_form() {
        let h =
            SendMessageRequestHeader::parse(request_code::SEND_MESSAGE_V2, &v2_fields()).unwrap();
        assert_eq!(h.producer_group, "pg");
        assert_eq!(h.topic, "TopicTest");
        assert_eq!(h.default_topic, "TBW102");
        assert_eq!(h.default_topic_queue_nums, 4);
        assert_eq!(h.queue_id, 3);
        assert_eq!(h.born_timestamp, 1_700_000_000_000);
        assert_eq!(h.properties.as_deref(), Some("TAGS\u{1}A\u{2}"));
        assert_eq!(h.max_reconsume_times, None);
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        assert!(h.is_batch(request_code::SEND_MESSAGE_V2));
        let long = h.to_ext_fields();
        assert_eq!(long.get("producerGroup"), Some("pg"));
        assert_eq!(long.get("bornTimestamp"), Some("1700000000000"));
        assert_eq!(long.get("bname"), Some("broker-a"));
        assert_eq!(
            SendMessageRequestHeaderV2::from(h).to_ext_fields(),
            v2_fields()
        );
    }

    #[test]
    fn response_fields_written_in_place_read_back() {
        let fields = SendMessageResponseHeader::ext_fields_with(|t| t.push_str("AB,CD"), 3, -1);
        let h = SendMessageResponseHeader::from_ext_fields(&fields).unwrap();
        assert_eq!(h.msg_id, "AB,CD");
        assert_eq!(h.queue_id, 3);
        assert_eq!(h.queue_offset, -1);
        assert_eq!(fields.len(), 3);
    }

    #[test]
    fn code_10_with_long_names_and_fallbacks() {
        let long = SendMessageRequestHeader::from(
            SendMessageRequestHeaderV2::from_ext_fields(&v2_fields()).unwrap(),
        )
        .to_ext_fields();
        let h = SendMessageRequestHeader::parse(request_code::SEND_MESSAGE, &long).unwrap();
        assert_eq!(h.topic, "TopicTest");
        // Short names on code 10 and long names on code 310 are both understood.
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_MESSAGE, &v2_fields()).unwrap(),
            h
        );
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_MESSAGE_V2, &long).unwrap(),
            h
        );
        // Replies carry the same headers: 325 the short names, 324 the long ones.
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_REPLY_MESSAGE_V2, &v2_fields())
                .unwrap(),
            h
        );
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_REPLY_MESSAGE, &long).unwrap(),
            h
        );
        let mut missing = v2_fields();
        missing.remove("b");
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_REPLY_MESSAGE_V2, &missing),
            Err(HeaderError::Missing("b"))
        );
        assert_eq!(
            SendMessageRequestHeader::parse(request_code::SEND_MESSAGE_V2, &missing),
            Err(HeaderError::Missing("b"))
        );
    }
}

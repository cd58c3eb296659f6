//! RECALL_MESSAGE (370, RocketMQ 5.3.2+): the headers and the recall handle a send response carries
//! for a timer message (`recallHandle`): `v1 <topic> <brokerName> <timestamp> <messageId>`, joined by
//! spaces and written in URL-safe Base64 with padding, as Apache's `RecallMessageHandle.HandleV1` does.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;

use super::fields::command_header;

command_header! {
    /// RECALL_MESSAGE (370): recall the timer message `recallHandle` names, of `topic`.
    pub struct RecallMessageRequestHeader {
        producer_group: Option<String> = "producerGroup",
        topic: String = "topic",
        recall_handle: String = "recallHandle",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    /// The answer to RECALL_MESSAGE: the recalled message's id (its UNIQ_KEY).
    pub struct RecallMessageResponseHeader {
        msg_id: String = "msgId",
    }
}

/// Java's URL-safe Base64: written with padding, read with or without it.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Apache's answer to a handle it cannot read.
pub const INVALID_HANDLE: &str = "recall handle is invalid";

/// A version 1 recall handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    pub topic: String,
    pub broker_name: String,
    /// The due time plus 1 ms, as text (Apache reads it leniently: a bad number is "invalid time").
    pub timestamp: String,
    /// The message's UNIQ_KEY.
    pub message_id: String,
}

impl RecallHandle {
    /// The handle text a send response carries.
    pub fn encode(&self) -> String {
        let raw = format!(
            "v1 {} {} {} {}",
            self.topic, self.broker_name, self.timestamp, self.message_id
        );
        URL_SAFE.encode(raw.as_bytes())
    }

    /// Reads a handle; `Err(INVALID_HANDLE)` as Apache answers for an empty, undecodable or
    /// short handle, or one of another version.
    pub fn decode(handle: &str) -> Result<RecallHandle, &'static str> {
        if handle.is_empty() {
            return Err(INVALID_HANDLE);
        }
        let bytes = URL_SAFE
            .decode(handle.as_bytes())
            .map_err(|_| INVALID_HANDLE)?;
        let raw = String::from_utf8_lossy(&bytes);
        let mut items: Vec<&str> = raw.split(' ').collect();
        // Java's `split` drops trailing empty strings.
        while items.last().is_some_and(|s| s.is_empty()) {
            items.pop();
        }
        match items.as_slice() {
            ["v1", topic, broker_name, timestamp, message_id, ..] => Ok(RecallHandle {
                topic: (*topic).to_owned(),
                broker_name: (*broker_name).to_owned(),
                timestamp: (*timestamp).to_owned(),
                message_id: (*message_id).to_owned(),
            }),
            _ => Err(INVALID_HANDLE),
        }
    }

    /// The timestamp as a number (Apache's `NumberUtils.toLong(.., -1)`).
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp.trim().parse().unwrap_or(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_read_as_javas_base64_writes_them() {
        let h = RecallHandle {
            topic: "TopicA".into(),
            broker_name: "broker-a".into(),
            timestamp: "1733500000001".into(),
            message_id: "7F00000100002A9F0000000000000001".into(),
        };
        // Java: Base64.getUrlEncoder().encodeToString("v1 TopicA broker-a 1733500000001 7F00...01")
        let text = h.encode();
        assert_eq!(
            text,
            "djEgVG9waWNBIGJyb2tlci1hIDE3MzM1MDAwMDAwMDEgN0YwMDAwMDEwMDAwMkE5RjAwMDAwMDAwMDAwMDAwMDE="
        );
        assert_eq!(RecallHandle::decode(&text), Ok(h.clone()));
        // Without its padding too, as Java's decoder reads it.
        assert_eq!(RecallHandle::decode(text.trim_end_matches('=')), Ok(h));
        assert_eq!(RecallHandle::decode(""), Err(INVALID_HANDLE));
        assert_eq!(RecallHandle::decode("not base64!"), Err(INVALID_HANDLE));
        let short = URL_SAFE.encode("v1 TopicA broker-a 1");
        assert_eq!(RecallHandle::decode(&short), Err(INVALID_HANDLE));
        let v2 = URL_SAFE.encode("v2 TopicA broker-a 1 id");
        assert_eq!(RecallHandle::decode(&v2), Err(INVALID_HANDLE));
        let trailing = URL_SAFE.encode("v1 TopicA broker-a 1 ");
        assert_eq!(RecallHandle::decode(&trailing), Err(INVALID_HANDLE));
        let bad_time = URL_SAFE.encode("v1 T b x id");
        assert_eq!(RecallHandle::decode(&bad_time).unwrap().timestamp_ms(), -1);
    }
}

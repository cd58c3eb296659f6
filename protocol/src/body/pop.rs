//! BATCH_ACK_MESSAGE (200151) body (RocketMQ's `BatchAckMessageRequestBody` of `BatchAck`s): per
//! check point, the offsets acked as a bit set over `startOffset` (fastjson writes Java's
//! `BitSet.toByteArray()` as a base64 string).

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The BATCH_ACK_MESSAGE body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    #[serde(default)]
    pub broker_name: Option<String>,
    #[serde(default)]
    pub acks: Vec<BatchAck>,
}

/// The acks of one check point: offsets `startOffset + i` for every bit `i` set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct BatchAck {
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    /// The topic the consumer asked for; `retry` says whether the messages are in its retry topic.
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    /// The receipt handle's retry mark ("0", "1" or "2").
    #[serde(rename = "r", alias = "retry")]
    pub retry: String,
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    #[serde(rename = "rq", alias = "reviveQueueId")]
    pub revive_queue_id: i32,
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    #[serde(
        rename = "b",
        alias = "bitSet",
        default,
        serialize_with = "write_bit_set",
        deserialize_with = "read_bit_set"
    )]
    pub bit_set: Vec<u32>,
}

/// Java's `BitSet.toByteArray()`: bit i is bit (i % 8) of byte i / 8, trailing zero bytes dropped.
pub fn bit_set_bytes(bits: &[u32]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for &bit in bits {
        let i = (bit / 8) as usize;
        if bytes.len() <= i {
            bytes.resize(i + 1, 0u8);
        }
        if let Some(b) = bytes.get_mut(i) {
            *b |= 1 << (bit % 8);
        }
    }
    bytes
}

/// The set bits of a `BitSet.toByteArray()`, ascending.
pub fn bit_set_bits(bytes: &[u8]) -> Vec<u32> {
    let mut bits = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        for j in 0..8u32 {
            if b & (1 << j) != 0 {
                bits.push(i as u32 * 8 + j);
            }
        }
    }
    bits
}

fn write_bit_set<S: Serializer>(bits: &[u32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bit_set_bytes(bits)))
}

fn read_bit_set<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    let text = Option::<String>::deserialize(d)?.unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(serde::de::Error::custom)?;
    // At most 64 KiB of bit set (half a million offsets): more is not a check point.
    if bytes.len() > 65_536 {
        return Err(serde::de::Error::custom("bit set too large"));
    }
    Ok(bit_set_bits(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_ack_reads_fastjsons_short_names_and_base64_bit_set() {
        // Bits 0, 2 and 9: bytes [0b101, 0b10] = "BQI=".
        let json = r#"{"acks":[{"b":"BQI=","c":"g","it":60000,"pt":17,"q":1,"r":"0","rq":0,"so":40,"t":"T"}],"brokerName":"broker-a-0"}"#;
        let body: BatchAckMessageRequestBody = serde_json::from_str(json).unwrap();
        assert_eq!(body.broker_name.as_deref(), Some("broker-a-0"));
        let ack = &body.acks[0];
        assert_eq!(ack.bit_set, vec![0, 2, 9]);
        assert_eq!((ack.start_offset, ack.queue_id, ack.pop_time), (40, 1, 17));
        let back: BatchAckMessageRequestBody =
            serde_json::from_str(&serde_json::to_string(&body).unwrap()).unwrap();
        assert_eq!(back, body);
        assert!(
            serde_json::from_str::<BatchAckMessageRequestBody>(r#"{"acks":[{"b":"!!"}]}"#).is_err()
        );
    }
}

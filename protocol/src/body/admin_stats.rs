//! Admin statistics bodies: TopicStatsTable (GET_TOPIC_STATS_INFO), ConsumeStats (GET_CONSUME_STATS),
//! ResetOffsetBody / ResetOffsetBodyForC (INVOKE_BROKER_TO_RESET_OFFSET, RESET_CONSUMER_CLIENT_OFFSET)
//! and ConsumerConnection (GET_CONSUMER_CONNECTION_LIST). Their `offsetTable`s are keyed by
//! MessageQueue objects as fastjson writes them (see `object_keys`); fields are in fastjson's
//! alphabetical order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::consumer::MessageQueue;
use super::heartbeat::SubscriptionData;
use super::json_body::BodyError;
use super::object_keys::{from_fastjson, queue_keys, write_queue_map};

/// Bounds of one queue (TopicOffset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    #[serde(default)]
    pub last_update_timestamp: i64,
    #[serde(default)]
    pub max_offset: i64,
    #[serde(default)]
    pub min_offset: i64,
}

/// GET_TOPIC_STATS_INFO response body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicStatsTable {
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
    pub topic_put_tps: f64,
}

/// One queue's progress for a consumer group (OffsetWrapper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    #[serde(default)]
    pub broker_offset: i64,
    #[serde(default)]
    pub consumer_offset: i64,
    #[serde(default)]
    pub last_timestamp: i64,
    #[serde(default)]
    pub pull_offset: i64,
}

/// GET_CONSUME_STATS response body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumeStats {
    pub consume_tps: f64,
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
}

/// INVOKE_BROKER_TO_RESET_OFFSET response body, and RESET_CONSUMER_CLIENT_OFFSET's body for
/// clients other than C++.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResetOffsetBody {
    pub offset_table: BTreeMap<MessageQueue, i64>,
}

/// A queue with its reset offset, as C++ clients read it (MessageQueueForC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueForC {
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub offset: i64,
    #[serde(default)]
    pub queue_id: i32,
    #[serde(default)]
    pub topic: String,
}

/// RESET_CONSUMER_CLIENT_OFFSET's body for C++ clients: a list instead of an object-keyed map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResetOffsetBodyForC {
    #[serde(default)]
    pub offset_table: Vec<MessageQueueForC>,
}

impl ResetOffsetBodyForC {
    pub fn from_body(body: &ResetOffsetBody) -> ResetOffsetBodyForC {
        ResetOffsetBodyForC {
            offset_table: body
                .offset_table
                .iter()
                .map(|(mq, offset)| MessageQueueForC {
                    broker_name: mq.broker_name.clone(),
                    offset: *offset,
                    queue_id: mq.queue_id,
                    topic: mq.topic.clone(),
                })
                .collect(),
        }
    }
}

/// One client connection of a group (Connection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    #[serde(default)]
    pub client_addr: String,
    #[serde(rename = "clientId", default)]
    pub client_id: String,
    #[serde(default)]
    pub language: String,
    #[serde(default)]
    pub version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST response body (ConsumerConnection). Enum fields are written as
/// Java's enum names (`CONSUME_PASSIVELY`, `CLUSTERING`, `CONSUME_FROM_LAST_OFFSET`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
    #[serde(default)]
    pub consume_from_where: String,
    #[serde(default)]
    pub consume_type: String,
    #[serde(default)]
    pub message_model: String,
    #[serde(default)]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
}

fn number(v: f64) -> String {
    // fastjson writes doubles with a fraction (0.0); NaN/infinite are not JSON numbers.
    if v.is_finite() {
        serde_json::to_string(&v).unwrap_or_else(|_| "0.0".into())
    } else {
        "0.0".into()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTable<V> {
    #[serde(default = "BTreeMap::new")]
    offset_table: BTreeMap<String, V>,
    #[serde(default)]
    topic_put_tps: f64,
    #[serde(default)]
    consume_tps: f64,
}

impl TopicStatsTable {
    /// The body as Java's broker writes it.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = String::from("{\"offsetTable\":");
        write_queue_map(&mut out, &self.offset_table);
        out.push_str(",\"topicPutTps\":");
        out.push_str(&number(self.topic_put_tps));
        out.push('}');
        out.into_bytes()
    }

    pub fn from_json(body: &[u8]) -> Result<TopicStatsTable, BodyError> {
        let raw: RawTable<TopicOffset> = from_fastjson(body)?;
        Ok(TopicStatsTable {
            offset_table: queue_keys(raw.offset_table)?,
            topic_put_tps: raw.topic_put_tps,
        })
    }
}

impl ConsumeStats {
    /// The body as Java's broker writes it.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = String::from("{\"consumeTps\":");
        out.push_str(&number(self.consume_tps));
        out.push_str(",\"offsetTable\":");
        write_queue_map(&mut out, &self.offset_table);
        out.push('}');
        out.into_bytes()
    }

    pub fn from_json(body: &[u8]) -> Result<ConsumeStats, BodyError> {
        let raw: RawTable<OffsetWrapper> = from_fastjson(body)?;
        Ok(ConsumeStats {
            consume_tps: raw.consume_tps,
            offset_table: queue_keys(raw.offset_table)?,
        })
    }

    /// Sum over queues of broker offset minus consumer offset (Java's computeTotalDiff).
    pub fn total_diff(&self) -> i64 {
        self.offset_table.values().fold(0i64, |acc, w| {
            acc.saturating_add(w.broker_offset.saturating_sub(w.consumer_offset))
        })
    }
}

impl ResetOffsetBody {
    /// The body as Java writes it.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = String::from("{\"offsetTable\":");
        write_queue_map(&mut out, &self.offset_table);
        out.push('}');
        out.into_bytes()
    }

    pub fn from_json(body: &[u8]) -> Result<ResetOffsetBody, BodyError> {
        let raw: RawTable<i64> = from_fastjson(body)?;
        Ok(ResetOffsetBody {
            offset_table: queue_keys(raw.offset_table)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(topic: &str, broker: &str, queue_id: i32) -> MessageQueue {
        MessageQueue {
            topic: topic.into(),
            broker_name: broker.into(),
            queue_id,
        }
    }

    /// What Java's broker (fastjson, sorted fields) writes for a two-queue topic.
    const JAVA_TOPIC_STATS: &str = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000123,"maxOffset":5,"minOffset":0},{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}},"topicPutTps":0.0}"#;

    const JAVA_CONSUME_STATS: &str = r#"{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":1700000000100,"pullOffset":3},{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":2,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0}}}"#;

    const JAVA_RESET: &str = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:2,{"brokerName":"broker-a","queueId":1,"topic":"T"}:0}}"#;

    #[test]
    fn topic_stats_match_java_shape() {
        let mut t = TopicStatsTable::default();
        t.offset_table.insert(
            mq("T", "broker-a", 1),
            TopicOffset {
                last_update_timestamp: 0,
                max_offset: 0,
                min_offset: 0,
            },
        );
        t.offset_table.insert(
            mq("T", "broker-a", 0),
            TopicOffset {
                last_update_timestamp: 1_700_000_000_123,
                max_offset: 5,
                min_offset: 0,
            },
        );
        assert_eq!(String::from_utf8(t.to_json()).unwrap(), JAVA_TOPIC_STATS);
        assert_eq!(
            TopicStatsTable::from_json(JAVA_TOPIC_STATS.as_bytes()).unwrap(),
            t
        );
    }

    #[test]
    fn consume_stats_match_java_shape() {
        let mut s = ConsumeStats {
            consume_tps: 1.5,
            ..ConsumeStats::default()
        };
        s.offset_table.insert(
            mq("T", "broker-a", 0),
            OffsetWrapper {
                broker_offset: 5,
                consumer_offset: 3,
                last_timestamp: 1_700_000_000_100,
                pull_offset: 3,
            },
        );
        s.offset_table.insert(
            mq("T", "broker-a", 1),
            OffsetWrapper {
                broker_offset: 2,
                ..OffsetWrapper::default()
            },
        );
        assert_eq!(String::from_utf8(s.to_json()).unwrap(), JAVA_CONSUME_STATS);
        let back = ConsumeStats::from_json(JAVA_CONSUME_STATS.as_bytes()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.total_diff(), 4);
    }

    #[test]
    fn reset_bodies_match_java_shapes() {
        let mut r = ResetOffsetBody::default();
        r.offset_table.insert(mq("T", "broker-a", 0), 2);
        r.offset_table.insert(mq("T", "broker-a", 1), 0);
        assert_eq!(String::from_utf8(r.to_json()).unwrap(), JAVA_RESET);
        assert_eq!(
            ResetOffsetBody::from_json(JAVA_RESET.as_bytes()).unwrap(),
            r
        );
        let c = ResetOffsetBodyForC::from_body(&r);
        assert_eq!(
            String::from_utf8(super::super::to_json(&c)).unwrap(),
            r#"{"offsetTable":[{"brokerName":"broker-a","offset":2,"queueId":0,"topic":"T"},{"brokerName":"broker-a","offset":0,"queueId":1,"topic":"T"}]}"#
        );
    }

    #[test]
    fn bad_bodies_are_errors() {
        for bad in [
            "",
            "{",
            r#"{"offsetTable":{{"brokerName":"b","queueId":"x","topic":"T"}:1}}"#,
            r#"{"offsetTable":{"notaqueue":1}}"#,
            r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:"x"}}"#,
        ] {
            assert!(ResetOffsetBody::from_json(bad.as_bytes()).is_err(), "{bad}");
        }
        // An empty table is fine.
        assert!(
            ConsumeStats::from_json(br#"{"consumeTps":0.0,"offsetTable":{}}"#)
                .unwrap()
                .offset_table
                .is_empty()
        );
    }
}

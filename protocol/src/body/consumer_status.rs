//! GetConsumerStatusBody: a client's answer to GET_CONSUMER_STATUS_FROM_CLIENT (its queues' offsets,
//! `messageQueueTable`) and the broker's to INVOKE_BROKER_TO_GET_CONSUMER_STATUS (every client's,
//! `consumerTable`), with fastjson's MessageQueue-object map keys.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::consumer::MessageQueue;
use super::json_body::BodyError;
use super::object_keys::{from_fastjson, queue_keys, write_queue_map};

/// Queue offsets per MessageQueue.
pub type QueueOffsets = BTreeMap<MessageQueue, i64>;

/// GetConsumerStatusBody.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetConsumerStatusBody {
    pub message_queue_table: QueueOffsets,
    /// Client id -> its queue offsets.
    pub consumer_table: BTreeMap<String, QueueOffsets>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(default)]
    message_queue_table: BTreeMap<String, i64>,
    #[serde(default)]
    consumer_table: BTreeMap<String, BTreeMap<String, i64>>,
}

impl GetConsumerStatusBody {
    /// The body as Java writes it.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = String::from("{\"consumerTable\":{");
        for (n, (client, table)) in self.consumer_table.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(client).unwrap_or_else(|_| "\"\"".into()));
            out.push(':');
            write_queue_map(&mut out, table);
        }
        out.push_str("},\"messageQueueTable\":");
        write_queue_map(&mut out, &self.message_queue_table);
        out.push('}');
        out.into_bytes()
    }

    pub fn from_json(body: &[u8]) -> Result<GetConsumerStatusBody, BodyError> {
        let raw: Raw = from_fastjson(body)?;
        Ok(GetConsumerStatusBody {
            message_queue_table: queue_keys(raw.message_queue_table)?,
            consumer_table: raw
                .consumer_table
                .into_iter()
                .map(|(client, table)| Ok((client, queue_keys(table)?)))
                .collect::<Result<_, BodyError>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fastjson's output for a client holding two queues.
    const JAVA_CLIENT: &str = r#"{"consumerTable":{},"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:5,{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}"#;

    #[test]
    fn a_clients_answer_reads_and_the_brokers_writes_back() {
        let client = GetConsumerStatusBody::from_json(JAVA_CLIENT.as_bytes()).unwrap();
        assert_eq!(client.message_queue_table.len(), 2);
        assert_eq!(client.message_queue_table.values().sum::<i64>(), 12);
        assert_eq!(
            String::from_utf8(client.to_json()).unwrap(),
            JAVA_CLIENT,
            "written as fastjson writes it"
        );
        let broker = GetConsumerStatusBody {
            consumer_table: BTreeMap::from([("1.2.3.4@x".to_owned(), client.message_queue_table)]),
            ..GetConsumerStatusBody::default()
        };
        let back = GetConsumerStatusBody::from_json(&broker.to_json()).unwrap();
        assert_eq!(back, broker);
        assert!(GetConsumerStatusBody::from_json(b"{\"messageQueueTable\":{\"x\":1}}").is_err());
    }
}

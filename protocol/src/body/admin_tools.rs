//! Bodies of the admin answers Apache's mqadmin reads for `statsAll`, `producerConnection` and
//! `brokerConsumeStats`: BrokerStatsData (VIEW_BROKER_STATS_DATA), GroupList
//! (QUERY_TOPIC_CONSUME_BY_WHO), ProducerConnection (GET_PRODUCER_CONNECTION_LIST) and
//! ConsumeStatsList (GET_BROKER_CONSUME_STATS).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::admin_stats::{Connection, ConsumeStats};

/// One window of a statistics item (BrokerStatsItem).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct BrokerStatsItem {
    #[serde(default)]
    pub avgpt: f64,
    #[serde(default)]
    pub sum: u64,
    #[serde(default)]
    pub tps: f64,
}

/// VIEW_BROKER_STATS_DATA response body: the item over the last minute, hour and day.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    #[serde(default)]
    pub stats_day: BrokerStatsItem,
    #[serde(default)]
    pub stats_hour: BrokerStatsItem,
    #[serde(default)]
    pub stats_minute: BrokerStatsItem,
}

/// QUERY_TOPIC_CONSUME_BY_WHO response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    #[serde(default)]
    pub group_list: BTreeSet<String>,
}

/// GET_PRODUCER_CONNECTION_LIST response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
}

/// GET_BROKER_CONSUME_STATS response body: per subscription group, its ConsumeStats.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumeStatsList {
    pub broker_addr: String,
    /// (group, its stats), in the order written.
    pub consume_stats_list: Vec<(String, Vec<ConsumeStats>)>,
    pub total_diff: i64,
}

impl ConsumeStatsList {
    /// The body as Java's broker writes it: `consumeStatsList` is a list of one-entry maps
    /// `{group: [ConsumeStats...]}` whose offset tables are keyed by MessageQueue objects.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = String::from("{\"brokerAddr\":");
        out.push_str(&serde_json::to_string(&self.broker_addr).unwrap_or_else(|_| "\"\"".into()));
        out.push_str(",\"consumeStatsList\":[");
        for (n, (group, stats)) in self.consume_stats_list.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push('{');
            out.push_str(&serde_json::to_string(group).unwrap_or_else(|_| "\"\"".into()));
            out.push_str(":[");
            for (m, s) in stats.iter().enumerate() {
                if m > 0 {
                    out.push(',');
                }
                out.push_str(&String::from_utf8_lossy(&s.to_json()));
            }
            out.push_str("]}");
        }
        out.push_str("],\"totalDiff\":");
        out.push_str(&self.total_diff.to_string());
        out.push('}');
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{MessageQueue, OffsetWrapper};

    #[test]
    fn stats_data_and_lists_in_java_field_names() {
        let data = BrokerStatsData {
            stats_minute: BrokerStatsItem {
                sum: 120,
                tps: 2.0,
                avgpt: 1.5,
            },
            ..Default::default()
        };
        let json = String::from_utf8(crate::body::to_json(&data)).unwrap();
        assert!(
            json.contains("\"statsMinute\":{\"avgpt\":1.5,\"sum\":120,\"tps\":2.0}"),
            "{json}"
        );
        assert!(json.contains("\"statsDay\""), "{json}");
        let back: BrokerStatsData = crate::body::from_json(json.as_bytes()).unwrap();
        assert_eq!(back, data);

        let groups = GroupList {
            group_list: ["G1".to_owned(), "G2".to_owned()].into(),
        };
        let json = String::from_utf8(crate::body::to_json(&groups)).unwrap();
        assert_eq!(json, "{\"groupList\":[\"G1\",\"G2\"]}");

        let producers = ProducerConnection {
            connection_set: vec![Connection {
                client_addr: "127.0.0.1:5000".into(),
                client_id: "c1".into(),
                language: "JAVA".into(),
                version: 395,
            }],
        };
        let json = String::from_utf8(crate::body::to_json(&producers)).unwrap();
        assert!(
            json.starts_with(
                "{\"connectionSet\":[{\"clientAddr\":\"127.0.0.1:5000\",\"clientId\":\"c1\""
            ),
            "{json}"
        );
    }

    #[test]
    fn consume_stats_list_as_java_writes_it() {
        let mut stats = ConsumeStats::default();
        stats.offset_table.insert(
            MessageQueue {
                topic: "T".into(),
                broker_name: "b".into(),
                queue_id: 0,
            },
            OffsetWrapper {
                broker_offset: 10,
                consumer_offset: 4,
                last_timestamp: 7,
                pull_offset: 0,
            },
        );
        let list = ConsumeStatsList {
            broker_addr: "127.0.0.1:10911".into(),
            consume_stats_list: vec![("G\"1".into(), vec![stats.clone()]), ("G2".into(), vec![])],
            total_diff: 6,
        };
        let json = String::from_utf8(list.to_json()).unwrap();
        // Queue keys are MessageQueue objects written as object keys, as fastjson does.
        let value: serde_json::Value =
            crate::body::from_fastjson(json.as_bytes()).expect("fastjson");
        assert_eq!(value["brokerAddr"], "127.0.0.1:10911");
        assert_eq!(value["totalDiff"], 6);
        let first = &value["consumeStatsList"][0]["G\"1"][0];
        assert_eq!(first["offsetTable"].as_object().map(|o| o.len()), Some(1));
        assert!(value["consumeStatsList"][1]["G2"]
            .as_array()
            .is_some_and(|a| a.is_empty()));
        let first_text = json
            .split("[{\"consumeTps\"")
            .nth(1)
            .and_then(|rest| rest.split("]},").next())
            .expect("first group's stats");
        let first_json = format!("{{\"consumeTps\"{first_text}");
        assert_eq!(
            ConsumeStats::from_json(first_json.as_bytes()).unwrap(),
            stats
        );
    }
}

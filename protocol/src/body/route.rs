//! Route data served by the name server (GET_ROUTEINFO_BY_TOPIC): TopicRouteData, QueueData, BrokerData.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The id of the master in `BrokerData::broker_addrs`.
pub const MASTER_ID: i64 = 0;

/// One broker group (a master and its slaves) as routes and cluster info describe it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    #[serde(default)]
    pub cluster: String,
    #[serde(default)]
    pub broker_name: String,
    /// brokerId (0 = master) to "host:port". Written with quoted keys; unquoted ones parse too.
    #[serde(default)]
    pub broker_addrs: BTreeMap<i64, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
    /// RocketMQ 5.x clients fail without this field; always written.
    #[serde(default)]
    pub enable_acting_master: bool,
}

impl BrokerData {
    /// The master's address, if the master is registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }
}

/// The queues one broker group serves for a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub read_queue_nums: i32,
    #[serde(default)]
    pub write_queue_nums: i32,
    /// PermName bits: 0x4 read, 0x2 write, 0x1 inherit.
    #[serde(default)]
    pub perm: i32,
    #[serde(default)]
    pub topic_sys_flag: i32,
}

/// Where a topic lives: its queues per broker and those brokers' addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    #[serde(default)]
    pub queue_datas: Vec<QueueData>,
    #[serde(default)]
    pub broker_datas: Vec<BrokerData>,
    /// brokerAddr to filter-server addresses (legacy; written empty).
    #[serde(default)]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// Static-topic mapping (RocketMQ 5); kept as raw JSON, omitted when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_by_broker: Option<serde_json::Value>,
}

impl TopicRouteData {
    /// The master address of the broker group `broker_name` in this route, if it has a live master.
    pub fn master_addr_of(&self, broker_name: &str) -> Option<&str> {
        self.broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| b.master_addr())
    }
}

/// Permission bits of topics and queues (RocketMQ's `PermName`).
pub mod perm {
    pub const PRIORITY: i32 = 0x8;
    pub const READ: i32 = 0x4;
    pub const WRITE: i32 = 0x2;
    pub const INHERIT: i32 = 0x1;

    pub fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }

    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }
}

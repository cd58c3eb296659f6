//! Cluster-wide listings: ClusterInfo (GET_BROKER_CLUSTER_INFO), TopicList, KVTable.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::route::BrokerData;

/// Every broker group and which cluster it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// brokerName to its addresses.
    #[serde(default)]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// clusterName to its brokerNames.
    #[serde(default)]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// A list of topic names (GET_ALL_TOPIC_LIST_FROM_NAMESERVER and friends).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    #[serde(default)]
    pub topic_list: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
}

/// A string table (broker runtime info, KV config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct KVTable {
    #[serde(default)]
    pub table: BTreeMap<String, String>,
}

//! Bodies of the HA and store-maintenance admin codes, as Apache RocketMQ 5's classes serialize them
//! (fastjson: fields in name order, nulls left out): HARuntimeInfo (GET_BROKER_HA_STATUS, `haStatus`),
//! EpochEntryCache (GET_BROKER_EPOCH_CACHE, `getBrokerEpoch`), SubscriptionGroupList
//! (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, `updateSubGroupList`) and QueryConsumeQueueResponseBody
//! (QUERY_CONSUME_QUEUE, `queryCq`).

use serde::{Deserialize, Serialize};

use super::heartbeat::SubscriptionData;

/// GET_BROKER_HA_STATUS response body (`HARuntimeInfo`): a master's slaves, or a slave's master.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HaRuntimeInfo {
    #[serde(default)]
    pub ha_client_runtime_info: HaClientRuntimeInfo,
    #[serde(default)]
    pub ha_connection_info: Vec<HaConnectionRuntimeInfo>,
    #[serde(default)]
    pub in_sync_slave_nums: i32,
    #[serde(default)]
    pub master: bool,
    #[serde(default)]
    pub master_commit_log_max_offset: i64,
}

/// One slave connection of a master (`HARuntimeInfo.HAConnectionRuntimeInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HaConnectionRuntimeInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// The master's log end less the slave's ack.
    #[serde(default)]
    pub diff: i64,
    #[serde(default)]
    pub in_sync: bool,
    #[serde(default)]
    pub slave_ack_offset: i64,
    #[serde(default)]
    pub transfer_from_where: i64,
    #[serde(default)]
    pub transferred_byte_in_second: i64,
}

/// A slave's replication client (`HARuntimeInfo.HAClientRuntimeInfo`; Apache writes no
/// `isActivated`: it has no getter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HaClientRuntimeInfo {
    #[serde(default)]
    pub last_read_timestamp: i64,
    #[serde(default)]
    pub last_write_timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_addr: Option<String>,
    #[serde(default)]
    pub master_flush_offset: i64,
    #[serde(default)]
    pub max_offset: i64,
    #[serde(default)]
    pub transferred_byte_in_second: i64,
}

/// One epoch of a replica's log (`EpochEntry`): `endOffset` is the next epoch's start, Java's
/// `Long.MAX_VALUE` for the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntryJson {
    pub end_offset: i64,
    pub epoch: i32,
    pub start_offset: i64,
}

impl EpochEntryJson {
    /// Java's `EpochEntry.toString()`, which `getBrokerEpoch` prints.
    pub fn java_text(&self) -> String {
        format!(
            "EpochEntry{{epoch={}, startOffset={}, endOffset={}}}",
            self.epoch, self.start_offset, self.end_offset
        )
    }
}

/// GET_BROKER_EPOCH_CACHE response body (`EpochEntryCache`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntryCache {
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub cluster_name: String,
    #[serde(default)]
    pub epoch_list: Vec<EpochEntryJson>,
    #[serde(default)]
    pub max_offset: i64,
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST request body (`SubscriptionGroupList`); `G` is the
/// group config type of the side that reads or writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupList<G> {
    pub group_config_list: Vec<G>,
}

/// One ConsumeQueue unit as QUERY_CONSUME_QUEUE shows it (`ConsumeQueueData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeQueueData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bit_map: Option<String>,
    #[serde(default)]
    pub eval: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_data_json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    #[serde(default)]
    pub physic_offset: i64,
    #[serde(default)]
    pub physic_size: i32,
    #[serde(default)]
    pub tags_code: i64,
}

fn java_string(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("null")
}

impl ConsumeQueueData {
    /// Java's `ConsumeQueueData.toString()`, which `queryCq` prints.
    pub fn java_text(&self) -> String {
        format!(
            "ConsumeQueueData{{physicOffset={}, physicSize={}, tagsCode={}, extendDataJson='{}', bitMap='{}', eval={}, msg='{}'}}",
            self.physic_offset,
            self.physic_size,
            self.tags_code,
            java_string(&self.extend_data_json),
            java_string(&self.bit_map),
            self.eval,
            java_string(&self.msg)
        )
    }
}

/// QUERY_CONSUME_QUEUE response body (`QueryConsumeQueueResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct QueryConsumeQueueResponseBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_data: Option<String>,
    #[serde(default)]
    pub max_queue_index: i64,
    #[serde(default)]
    pub min_queue_index: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_data: Option<Vec<ConsumeQueueData>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_data: Option<SubscriptionData>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<T: Serialize>(v: &T) -> String {
        String::from_utf8(crate::body::to_json(v).to_vec()).unwrap_or_default()
    }

    #[test]
    fn ha_runtime_info_has_apaches_fields() {
        let master = HaRuntimeInfo {
            master: true,
            master_commit_log_max_offset: 4096,
            in_sync_slave_nums: 1,
            ha_connection_info: vec![HaConnectionRuntimeInfo {
                addr: Some("127.0.0.1:40000".into()),
                slave_ack_offset: 4000,
                diff: 96,
                in_sync: true,
                transferred_byte_in_second: 2048,
                transfer_from_where: 0,
            }],
            ha_client_runtime_info: HaClientRuntimeInfo::default(),
        };
        assert_eq!(
            text(&master),
            concat!(
                r#"{"haClientRuntimeInfo":{"lastReadTimestamp":0,"lastWriteTimestamp":0,"masterFlushOffset":0,"maxOffset":0,"transferredByteInSecond":0},"#,
                r#""haConnectionInfo":[{"addr":"127.0.0.1:40000","diff":96,"inSync":true,"slaveAckOffset":4000,"transferFromWhere":0,"transferredByteInSecond":2048}],"#,
                r#""inSyncSlaveNums":1,"master":true,"masterCommitLogMaxOffset":4096}"#
            )
        );
        // What Apache's broker writes for a slave (its `isActivated` has no getter, so it is absent).
        let apache = br#"{"haClientRuntimeInfo":{"lastReadTimestamp":1700000000000,"lastWriteTimestamp":1700000000001,"masterAddr":"10.0.0.1:10912","masterFlushOffset":0,"maxOffset":123,"transferredByteInSecond":5},"haConnectionInfo":[],"inSyncSlaveNums":0,"master":false,"masterCommitLogMaxOffset":0}"#;
        let slave: HaRuntimeInfo = crate::body::from_json(apache).unwrap_or_default();
        assert!(!slave.master);
        assert_eq!(
            slave.ha_client_runtime_info.master_addr.as_deref(),
            Some("10.0.0.1:10912")
        );
        assert_eq!(slave.ha_client_runtime_info.max_offset, 123);
        assert_eq!(text(&slave).as_bytes(), &apache[..]);
    }

    #[test]
    fn epoch_cache_and_its_java_text() {
        let cache = EpochEntryCache {
            cluster_name: "C".into(),
            broker_name: "broker-a".into(),
            broker_id: 1,
            epoch_list: vec![EpochEntryJson {
                epoch: 1,
                start_offset: 0,
                end_offset: i64::MAX,
            }],
            max_offset: 200,
        };
        assert_eq!(
            text(&cache),
            r#"{"brokerId":1,"brokerName":"broker-a","clusterName":"C","epochList":[{"endOffset":9223372036854775807,"epoch":1,"startOffset":0}],"maxOffset":200}"#
        );
        assert_eq!(
            cache.epoch_list[0].java_text(),
            "EpochEntry{epoch=1, startOffset=0, endOffset=9223372036854775807}"
        );
    }

    #[test]
    fn consume_queue_body_leaves_nulls_out() {
        let body = QueryConsumeQueueResponseBody {
            max_queue_index: 3,
            min_queue_index: 0,
            queue_data: Some(vec![ConsumeQueueData {
                physic_offset: 10,
                physic_size: 200,
                tags_code: 42,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            text(&body),
            r#"{"maxQueueIndex":3,"minQueueIndex":0,"queueData":[{"eval":false,"physicOffset":10,"physicSize":200,"tagsCode":42}]}"#
        );
        assert_eq!(
            body.queue_data.unwrap_or_default()[0].java_text(),
            "ConsumeQueueData{physicOffset=10, physicSize=200, tagsCode=42, extendDataJson='null', bitMap='null', eval=false, msg='null'}"
        );
        let list: SubscriptionGroupList<serde_json::Value> = serde_json::from_str(
            r#"{"groupConfigList":[{"groupName":"g1"}]}"#,
        )
        .unwrap_or(SubscriptionGroupList {
            group_config_list: Vec::new(),
        });
        assert_eq!(list.group_config_list.len(), 1);
    }
}

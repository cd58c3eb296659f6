//! Name-server headers: broker registration and unregistration, data-version query, route lookup.

use super::fields::command_header;

command_header! {
    /// REGISTER_BROKER (103); the body is a `body::RegisterBrokerBody`.
    pub struct RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: String = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        enable_acting_master: Option<bool> = "enableActingMaster",
        /// Whether the body is compressed (RocketMQ's own zlib layout); absent means false.
        compressed: Option<bool> = "compressed",
        /// `UtilAll.crc32` (CRC32 masked to 31 bits) of the body; absent or 0 means unchecked.
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

command_header! {
    /// REGISTER_BROKER response.
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> = "haServerAddr",
        master_addr: Option<String> = "masterAddr",
    }
}

command_header! {
    /// UNREGISTER_BROKER (104).
    pub struct UnregisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// QUERY_DATA_VERSION (322); the body is a `body::DataVersion`.
    pub struct QueryDataVersionRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// QUERY_DATA_VERSION response.
    pub struct QueryDataVersionResponseHeader {
        changed: bool = "changed",
    }
}

command_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105).
    pub struct GetRouteInfoRequestHeader {
        topic: String = "topic",
        /// Newer clients ask for standard JSON (quoted map keys).
        accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
    }
}

command_header! {
    /// PUT_KV_CONFIG (100).
    pub struct PutKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
        value: String = "value",
    }
}

command_header! {
    /// GET_KV_CONFIG (101) and DELETE_KV_CONFIG (102).
    pub struct KvConfigKeyRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
    }
}

command_header! {
    /// GET_KV_CONFIG response.
    pub struct GetKvConfigResponseHeader {
        value: Option<String> = "value",
    }
}

command_header! {
    /// GET_KVLIST_BY_NAMESPACE (219); the answer's body is a `body::KVTable`.
    pub struct GetKvListByNamespaceRequestHeader {
        namespace: String = "namespace",
    }
}

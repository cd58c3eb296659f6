//! Message lookup headers: VIEW_MESSAGE_BY_ID and QUERY_MESSAGE (by key).

use super::fields::command_header;

command_header! {
    /// VIEW_MESSAGE_BY_ID (33): the physical offset decoded from an offsetMsgId.
    pub struct ViewMessageRequestHeader {
        topic: Option<String> = "topic",
        offset: i64 = "offset",
    }
}

command_header! {
    /// QUERY_MESSAGE (12): messages of `topic` whose KEYS or UNIQ_KEY equal `key`.
    pub struct QueryMessageRequestHeader {
        topic: String = "topic",
        key: String = "key",
        max_num: i32 = "maxNum",
        begin_timestamp: i64 = "beginTimestamp",
        end_timestamp: i64 = "endTimestamp",
    }
}

command_header! {
    /// QUERY_MESSAGE response.
    pub struct QueryMessageResponseHeader {
        index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

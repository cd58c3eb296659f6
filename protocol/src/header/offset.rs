//! Offset headers: consumer offsets (query/update) and queue offsets (max, min, earliest store time, search by time).

use super::fields::command_header;

command_header! {
    /// QUERY_CONSUMER_OFFSET (14) request.
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
    }
}

command_header! {
    /// QUERY_CONSUMER_OFFSET response.
    pub struct QueryConsumerOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    /// UPDATE_CONSUMER_OFFSET (15) request (often sent oneway).
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
    }
}

command_header! {
    /// GET_MAX_OFFSET (30) request.
    pub struct GetMaxOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        /// Java's default is true.
        committed: Option<bool> = "committed",
    }
}

command_header! {
    /// GET_MAX_OFFSET response.
    pub struct GetMaxOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    /// GET_MIN_OFFSET (31) request.
    pub struct GetMinOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    /// GET_MIN_OFFSET response.
    pub struct GetMinOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    /// GET_EARLIEST_MSG_STORETIME (32) request.
    pub struct GetEarliestMsgStoretimeRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    /// GET_EARLIEST_MSG_STORETIME response.
    pub struct GetEarliestMsgStoretimeResponseHeader {
        timestamp: i64 = "timestamp",
    }
}

command_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29) request.
    pub struct SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
        /// "LOWER" (default) or "UPPER".
        boundary_type: Option<String> = "boundaryType",
    }
}

command_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP response.
    pub struct SearchOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

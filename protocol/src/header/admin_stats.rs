//! Admin statistics headers: topic stats (GET_TOPIC_STATS_INFO), consume stats (GET_CONSUME_STATS),
//! consumer connections (GET_CONSUMER_CONNECTION_LIST) and offset resets (INVOKE_BROKER_TO_RESET_OFFSET,
//! RESET_CONSUMER_CLIENT_OFFSET).

use super::fields::command_header;

command_header! {
    /// GET_TOPIC_STATS_INFO (202) request.
    pub struct GetTopicStatsInfoRequestHeader {
        topic: String = "topic",
    }
}

command_header! {
    /// GET_CONSUME_STATS (208) request. Without `topic` (and `topicList`), every topic the group has
    /// committed offsets for.
    pub struct GetConsumeStatsRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: Option<String> = "topic",
        /// `;`-separated topics; when present, `topic` is ignored (RocketMQ 5).
        topic_list: Option<String> = "topicList",
    }
}

command_header! {
    /// GET_CONSUMER_CONNECTION_LIST (203) request.
    pub struct GetConsumerConnectionListRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET (222) request, and the header of the RESET_CONSUMER_CLIENT_OFFSET
    /// (220) the broker pushes to the group's clients. Java's field is named `isForce` on the wire.
    pub struct ResetOffsetRequestHeader {
        group: String = "group",
        topic: String = "topic",
        /// -1 or absent: every queue.
        queue_id: Option<i32> = "queueId",
        /// An exact target offset, for one queue (`queueId` >= 0).
        offset: Option<i64> = "offset",
        /// Epoch ms; -1 means the queue's max offset.
        timestamp: i64 = "timestamp",
        is_force: Option<bool> = "isForce",
    }
}

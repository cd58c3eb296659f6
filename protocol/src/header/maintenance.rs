//! Headers of the store-maintenance admin requests: QUERY_CONSUME_QUEUE (`queryCq`) and
//! RESET_MASTER_FLUSH_OFFSET (`resetMasterFlushOffset`), Apache RocketMQ 5's fields.

use super::fields::command_header;

command_header! {
    /// QUERY_CONSUME_QUEUE (321) request: `count` units of a queue from unit `index`; with a
    /// `consumerGroup`, its subscription to the topic too.
    pub struct QueryConsumeQueueRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        index: i64 = "index",
        count: i32 = "count",
        consumer_group: Option<String> = "consumerGroup",
    }
}

command_header! {
    /// RESET_MASTER_FLUSH_OFFSET (908) request.
    pub struct ResetMasterFlushOffsetHeader {
        master_flush_offset: i64 = "masterFlushOffset",
    }
}

//! Consumer-group headers: consumer list, ids-changed notice, client unregistration, send-back for retry.

use super::fields::command_header;

command_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38) request.
    pub struct GetConsumerListByGroupRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// NOTIFY_CONSUMER_IDS_CHANGED (40), broker to client, oneway.
    pub struct NotifyConsumerIdsChangedRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    /// UNREGISTER_CLIENT (35) request.
    pub struct UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

command_header! {
    /// CONSUMER_SEND_MSG_BACK (36): a consumer returns a message for retry (or the DLQ).
    pub struct ConsumerSendMsgBackRequestHeader {
        /// Physical (CommitLog) offset of the message.
        offset: i64 = "offset",
        group: String = "group",
        delay_level: i32 = "delayLevel",
        origin_msg_id: Option<String> = "originMsgId",
        origin_topic: Option<String> = "originTopic",
        unit_mode: Option<bool> = "unitMode",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

command_header! {
    /// LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42) carry their data in the body
    /// (`body::LockBatchRequestBody` / `body::UnlockBatchRequestBody`); this header has no fields.
    pub struct LockBatchMqRequestHeader {}
}

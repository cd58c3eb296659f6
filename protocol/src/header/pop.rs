//! Headers of RocketMQ 5's POP consumption: POP_MESSAGE, PEEK_MESSAGE, ACK_MESSAGE,
//! CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION and POLLING_INFO (field names of Apache's
//! `PopMessageRequestHeader` and its siblings). `queueId` -1 means "any queue of the topic".

use super::fields::command_header;

/// Values of `PopMessageRequestHeader::init_mode` (RocketMQ's `ConsumeInitMode`): where a group
/// without an offset starts.
pub mod consume_init_mode {
    /// At the queue's first message.
    pub const MIN: i32 = 0;
    /// At the queue's last message (the newest one is still delivered).
    pub const MAX: i32 = 1;
}

/// The `reviveQid` of an ordered (FIFO) pop (RocketMQ's `KeyBuilder.POP_ORDER_REVIVE_QUEUE`).
pub const POP_ORDER_REVIVE_QUEUE: i32 = 999;

command_header! {
    /// POP_MESSAGE (200050) request header.
    pub struct PopMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        /// -1: any queue.
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        invisible_time: i64 = "invisibleTime",
        /// How long the broker may hold the request when nothing is there (ms).
        poll_time: i64 = "pollTime",
        /// The client's clock when it sent the request (ms).
        born_time: i64 = "bornTime",
        init_mode: i32 = "initMode",
        /// "TAG" (default) or "SQL92".
        exp_type: Option<String> = "expType",
        exp: Option<String> = "exp",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

command_header! {
    /// POP_MESSAGE response header. The three `*Info` strings let the client rebuild each message's
    /// receipt handle (`extra_info`).
    pub struct PopMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        /// Messages left behind in the queues this pop looked at.
        rest_num: i64 = "restNum",
        start_offset_info: Option<String> = "startOffsetInfo",
        msg_offset_info: Option<String> = "msgOffsetInfo",
        order_count_info: Option<String> = "orderCountInfo",
    }
}

command_header! {
    /// PEEK_MESSAGE (200052) request header: messages from the group's position, nothing changes.
    pub struct PeekMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
    }
}

command_header! {
    /// ACK_MESSAGE (200051) request header. `topic` and `queueId` are the real ones the message came
    /// from (the pop retry topic for a retried message); `extraInfo` is the receipt handle.
    pub struct AckMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME (200053) request header.
    pub struct ChangeInvisibleTimeRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        invisible_time: i64 = "invisibleTime",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME response header: the new check point's pop time. The new receipt
    /// handle is the old one with `ckQueueOffset` = the message's offset and these values.
    pub struct ChangeInvisibleTimeResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
    }
}

command_header! {
    /// NOTIFICATION (200054) request header: wait until the queue (or any, -1) has a message to pop.
    pub struct NotificationRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        poll_time: i64 = "pollTime",
        born_time: i64 = "bornTime",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
    }
}

command_header! {
    /// NOTIFICATION response header.
    pub struct NotificationResponseHeader {
        has_msg: bool = "hasMsg",
        polling_full: Option<bool> = "pollingFull",
    }
}

command_header! {
    /// POLLING_INFO (200055) request header.
    pub struct PollingInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    /// POLLING_INFO response header: how many pops of the group wait on the queue.
    pub struct PollingInfoResponseHeader {
        polling_num: i32 = "pollingNum",
    }
}

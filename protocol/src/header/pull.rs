//! PULL_MESSAGE request and response headers, and the pull request's sysFlag bits.

use super::fields::command_header;

/// Bits of `PullMessageRequestHeader::sys_flag` (RocketMQ's `PullSysFlag`).
pub mod pull_sys_flag {
    /// The request carries `commitOffset` to store for the group.
    pub const COMMIT_OFFSET: i32 = 0x1;
    /// The broker may hold the request (long polling) up to `suspendTimeoutMillis`.
    pub const SUSPEND: i32 = 0x2;
    /// The request carries `subscription` (the consumer's expression).
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const CLASS_FILTER: i32 = 0x8;
    pub const LITE_PULL_MESSAGE: i32 = 0x10;
}

/// Values of `PullMessageResponseHeader::forbidden_type` (RocketMQ 5's `ForbiddenType`): what refused
/// a pull answered NO_PERMISSION.
pub mod forbidden_type {
    pub const BROKER_FORBIDDEN: i32 = 1;
    pub const GROUP_FORBIDDEN: i32 = 2;
    pub const TOPIC_FORBIDDEN: i32 = 3;
    pub const BROADCASTING_DISABLE_FORBIDDEN: i32 = 4;
    pub const SUBSCRIPTION_FORBIDDEN: i32 = 5;
}

command_header! {
    /// PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361) request header.
    pub struct PullMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: i64 = "commitOffset",
        suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        subscription: Option<String> = "subscription",
        sub_version: i64 = "subVersion",
        /// "TAG" (default) or "SQL92".
        expression_type: Option<String> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
    }
}

command_header! {
    /// PULL_MESSAGE response header.
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
        offset_delta: Option<i64> = "offsetDelta",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        group_sys_flag: Option<i32> = "groupSysFlag",
        forbidden_type: Option<i32> = "forbiddenType",
    }
}

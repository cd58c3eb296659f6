//! Topic admin headers: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER / DELETE_TOPIC_IN_NAMESRV.

use super::fields::command_header;

command_header! {
    /// UPDATE_AND_CREATE_TOPIC (17).
    pub struct CreateTopicRequestHeader {
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        read_queue_nums: i32 = "readQueueNums",
        write_queue_nums: i32 = "writeQueueNums",
        /// PermName bits: 0x2 write, 0x4 read, 0x1 inherit.
        perm: i32 = "perm",
        /// "SINGLE_TAG" or "MULTI_TAG".
        topic_filter_type: String = "topicFilterType",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        order: Option<bool> = "order",
        attributes: Option<String> = "attributes",
        force: Option<bool> = "force",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_BROKER (215) and DELETE_TOPIC_IN_NAMESRV (216).
    pub struct DeleteTopicRequestHeader {
        topic: String = "topic",
    }
}

command_header! {
    /// GET_TOPIC_CONFIG (351): one topic's config; `lo` asks for its static-topic mapping too.
    pub struct GetTopicConfigRequestHeader {
        topic: String = "topic",
        lo: Option<bool> = "lo",
    }
}

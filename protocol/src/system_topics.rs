//! Apache RocketMQ's system topics (`TopicValidator.SYSTEM_TOPIC_SET` and the `rmq_sys_` prefix):
//! left out of exports and user listings, labelled `is_system` in metrics.

/// The fixed part of Apache's `TopicValidator.SYSTEM_TOPIC_SET`.
pub const SYSTEM_TOPICS: [&str; 10] = [
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

/// Whether `topic` is one of Apache's system topics (the fixed set, or `rmq_sys_...`). A broker also
/// counts its cluster's and its own name as system topics; callers that know them check those too.
pub fn is_system_topic(topic: &str) -> bool {
    SYSTEM_TOPICS.contains(&topic) || topic.starts_with("rmq_sys_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_set_and_prefix() {
        assert!(is_system_topic("RMQ_SYS_TRANS_HALF_TOPIC"));
        assert!(is_system_topic("rmq_sys_wheel_timer"));
        assert!(!is_system_topic("Orders"));
        assert!(!is_system_topic("RMQ_SYS_X"));
    }
}

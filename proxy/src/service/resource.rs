//! The resources RPCs name (`apache.rocketmq.v2.Resource`), checked as Apache's proxy checks them.

use crate::pb::{Code, Resource};
use crate::status::ProxyError;

/// The topic's name; ILLEGAL_TOPIC when the request names none.
pub fn topic_name(topic: &Option<Resource>) -> Result<&str, ProxyError> {
    topic
        .as_ref()
        .map(|r| r.name.as_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ProxyError::Code(Code::IllegalTopic, "topic is required".into()))
}

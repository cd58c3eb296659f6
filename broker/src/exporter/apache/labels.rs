//! Label values as Apache's broker writes them: a client's version (`MQVersion.getVersionDesc`,
//! lower-cased), system topics and groups (`TopicValidator.isSystemTopic`,
//! `BrokerMetricsManager.isSystemGroup`), request and response code names (`RemotingHelper`).

/// Ordinal of `V4_0_0_SNAPSHOT` in `MQVersion.Version`; from there every x.y.z of 4.x and 5.x has a
/// SNAPSHOT ordinal followed by the release's.
const V4_0_0_SNAPSHOT: i32 = 212;
/// Ordinal of `HIGHER_VERSION` (after `V5_9_9`).
const HIGHER_VERSION: i32 = V4_0_0_SNAPSHOT + 400;

/// `MQVersion.getVersionDesc(version).toLowerCase()` for 4.x and 5.x clients ("v5_1_0"); older
/// clients (3.x, whose ordinals are irregular) get their ordinal.
pub fn version_desc(ordinal: i32) -> String {
    if ordinal >= HIGHER_VERSION {
        return "higher_version".to_owned();
    }
    if ordinal < V4_0_0_SNAPSHOT {
        return ordinal.to_string();
    }
    let k = ordinal - V4_0_0_SNAPSHOT;
    let release = k / 2;
    let (major, minor, patch) = (4 + release / 100, (release / 10) % 10, release % 10);
    let snapshot = if k % 2 == 0 { "_snapshot" } else { "" };
    format!("v{major}_{minor}_{patch}{snapshot}")
}

pub use protocol::system_topics::is_system_topic;

/// Apache's system groups: `CID_RMQ_SYS_` in any case.
pub fn is_system_group(group: &str) -> bool {
    group
        .get(..12)
        .is_some_and(|p| p.eq_ignore_ascii_case("CID_RMQ_SYS_"))
}

/// A request code's label: its RocketMQ name lower-cased, else the number.
pub fn request_code(code: i32) -> String {
    protocol::code::request_name(code).map_or_else(|| code.to_string(), str::to_ascii_lowercase)
}

/// A response code's label: its RocketMQ name lower-cased, else the number.
pub fn response_code(code: i32) -> String {
    protocol::code::response_name(code).map_or_else(|| code.to_string(), str::to_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_in_apache_form() {
        // Ordinals from Apache's MQVersion.Version.
        assert_eq!(version_desc(401), "v4_9_4");
        assert_eq!(version_desc(433), "v5_1_0");
        assert_eq!(version_desc(412), "v5_0_0_snapshot");
        assert_eq!(version_desc(212), "v4_0_0_snapshot");
        assert_eq!(version_desc(611), "v5_9_9");
        assert_eq!(version_desc(612), "higher_version");
        assert_eq!(version_desc(121), "121");
        assert!(is_system_topic("RMQ_SYS_TRANS_HALF_TOPIC"));
        assert!(is_system_topic("rmq_sys_x"));
        assert!(!is_system_topic("Orders"));
        assert!(is_system_group("cid_rmq_sys_x"));
        assert!(!is_system_group("CID"));
        assert_eq!(request_code(310), "send_message_v2");
        assert_eq!(request_code(99_999), "99999");
        assert_eq!(response_code(0), "success");
    }
}

//! RocketMQ's `MQVersion` names (`V4_9_4`) for the version ordinals clients send in their requests.

/// Ordinal of `V4_0_0_SNAPSHOT`; from there every `X_Y_Z` has a SNAPSHOT and a release ordinal.
const V4_0_0_SNAPSHOT: i32 = 212;
/// Ordinal of `HIGHER_VERSION`, the last name (after `V5_9_9`).
const HIGHER_VERSION: i32 = 612;

/// The name RocketMQ's tools print for a client's version ordinal; releases before 4.0.0 (whose
/// ordinals follow no pattern) print as their ordinal.
pub fn version_desc(ordinal: i32) -> String {
    if ordinal >= HIGHER_VERSION {
        return "HIGHER_VERSION".to_owned();
    }
    if ordinal < V4_0_0_SNAPSHOT {
        return ordinal.to_string();
    }
    let i = ordinal - V4_0_0_SNAPSHOT;
    let (major, rest) = (4 + i / 200, i % 200);
    let name = format!("V{major}_{}_{}", rest / 20, rest % 20 / 2);
    if rest % 2 == 0 {
        name + "_SNAPSHOT"
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_name_as_rocketmq_does() {
        assert_eq!(version_desc(401), "V4_9_4");
        assert_eq!(version_desc(409), "V4_9_8");
        assert_eq!(version_desc(212), "V4_0_0_SNAPSHOT");
        assert_eq!(version_desc(412), "V5_0_0_SNAPSHOT");
        assert_eq!(version_desc(612), "HIGHER_VERSION");
        assert_eq!(version_desc(100), "100");
    }
}

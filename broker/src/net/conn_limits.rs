//! The limits each client connection is served under, from the broker config: in-flight requests,
//! pending response bytes, write stalls, idleness (`serverChannelMaxIdleTimeSeconds`) and slow frames.
//! A value of 0 turns a time limit off.

use remoting::ConnectionLimits;

use crate::config::BrokerConfig;

/// Requests of one connection handled at once; beyond this the connection is not read (back-pressure).
/// Parked long-poll pulls count, so it is generous.
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 1024;

pub fn connection_limits(cfg: &BrokerConfig) -> ConnectionLimits {
    ConnectionLimits::from_keys(
        MAX_IN_FLIGHT_PER_CONNECTION,
        cfg.server_channel_max_idle_time_seconds,
        cfg.server_frame_timeout_seconds,
        cfg.server_write_stall_timeout_seconds,
        cfg.server_max_pending_response_bytes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;
    use std::time::Duration;

    #[test]
    fn keys_reach_the_limits() {
        let pairs = [
            ("serverChannelMaxIdleTimeSeconds", "7"),
            ("serverWriteStallTimeoutSeconds", "0"),
            ("serverFrameTimeoutSeconds", "3"),
            ("serverMaxPendingResponseBytes", "1048576"),
            ("serverMaxConnectionsPerShard", "12"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let (cfg, issues) = BrokerConfig::from_pairs(pairs).unwrap();
        assert!(issues.is_empty(), "{issues:?}");
        let l = connection_limits(&cfg);
        assert_eq!(l.idle_timeout, Some(Duration::from_secs(7)));
        assert_eq!(l.write_stall_timeout, None);
        assert_eq!(l.frame_timeout, Some(Duration::from_secs(3)));
        assert_eq!(l.max_pending_response_bytes, 1048576);
        assert_eq!(cfg.server_max_connections_per_shard, 12);
        // RocketMQ's default idle limit.
        let d = connection_limits(&BrokerConfig::default());
        assert_eq!(d.idle_timeout, Some(Duration::from_secs(120)));
    }
}

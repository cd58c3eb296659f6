//! Controller-mode keys (RocketMQ 5's automatic failover): where the controllers are, how often the
//! broker heartbeats them and checks its SyncStateSet, and when a send needs every in-sync replica.
//! Apache's names; defaults are Apache's except where noted.

/// The controller-mode part of the broker's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerModeConfig {
    /// `enableControllerMode`: the controllers choose this broker's role; `brokerRole` and
    /// `brokerId` in the file are then ignored.
    pub enabled: bool,
    /// `controllerAddr`: the controllers, `;` separated.
    pub controller_addr: Vec<String>,
    /// `brokerHeartbeatInterval` (ms): heartbeats to every controller.
    pub broker_heartbeat_interval_ms: u64,
    /// `controllerHeartBeatTimeoutMills` (ms): silence after which the controller takes this broker
    /// for dead. Ours 3000 (Apache 10000), so a failover fits in 5 s.
    pub controller_heartbeat_timeout_ms: u64,
    /// `syncBrokerMetadataPeriod` (ms): how often the broker asks the controller who the master is
    /// (in case it missed a role-change notice). Ours 2000 (Apache 5000).
    pub sync_broker_metadata_period_ms: u64,
    /// `checkSyncStateSetPeriod` (ms): how often a master looks for replicas to drop from or add to
    /// its SyncStateSet. Ours 1000 (Apache 5000): a replica that caught up joins within a second.
    pub check_sync_state_set_period_ms: u64,
    /// `brokerElectionPriority`: lower is preferred when several replicas are equally caught up.
    pub broker_election_priority: i32,
    /// `haMaxTimeSlaveNotCatchup` (ms): a replica that has not held all of the master's log for this
    /// long leaves the SyncStateSet.
    pub ha_max_time_slave_not_catchup_ms: u64,
    /// `allAckInSyncStateSet`: a send is acknowledged only once every member of the SyncStateSet
    /// has it (otherwise the master alone acknowledges, Apache's default).
    pub all_ack_in_sync_state_set: bool,
    /// `minInSyncReplicas`: with fewer in-sync replicas (the master included), sends are refused
    /// ("in-sync replicas not enough") instead of acknowledged unsafely.
    pub min_in_sync_replicas: usize,
    /// `readUnCommitted`: with `allAckInSyncStateSet`, readers see a record as soon as the master
    /// stored it; when false (Apache's default) only once every member of the SyncStateSet has it
    /// (the confirm offset). No effect outside controller mode.
    pub read_un_committed: bool,
}

impl Default for ControllerModeConfig {
    fn default() -> Self {
        ControllerModeConfig {
            enabled: false,
            controller_addr: Vec::new(),
            broker_heartbeat_interval_ms: 1000,
            controller_heartbeat_timeout_ms: 3000,
            sync_broker_metadata_period_ms: 2000,
            check_sync_state_set_period_ms: 1000,
            broker_election_priority: i32::MAX,
            ha_max_time_slave_not_catchup_ms: 15_000,
            all_ack_in_sync_state_set: false,
            min_in_sync_replicas: 1,
            read_un_committed: false,
        }
    }
}

/// Why a controller-mode value was refused.
pub type KeyError = &'static str;

fn number<T: std::str::FromStr>(v: &str) -> Result<T, KeyError> {
    v.trim().parse().map_err(|_| "not a number in range")
}

fn boolean(v: &str) -> Result<bool, KeyError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false"),
    }
}

impl ControllerModeConfig {
    /// Applies `key` if it is a controller-mode key: `None` when it is not one of them.
    pub fn set(&mut self, key: &str, v: &str) -> Option<Result<(), KeyError>> {
        let result = match key {
            "enableControllerMode" => boolean(v).map(|b| self.enabled = b),
            "controllerAddr" => {
                self.controller_addr = v
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                Ok(())
            }
            "brokerHeartbeatInterval" => number(v).map(|n| self.broker_heartbeat_interval_ms = n),
            "controllerHeartBeatTimeoutMills" => {
                number(v).map(|n| self.controller_heartbeat_timeout_ms = n)
            }
            "syncBrokerMetadataPeriod" => {
                number(v).map(|n| self.sync_broker_metadata_period_ms = n)
            }
            "checkSyncStateSetPeriod" => number(v).map(|n| self.check_sync_state_set_period_ms = n),
            "brokerElectionPriority" => number(v).map(|n| self.broker_election_priority = n),
            "haMaxTimeSlaveNotCatchup" => {
                number(v).map(|n| self.ha_max_time_slave_not_catchup_ms = n)
            }
            "allAckInSyncStateSet" => boolean(v).map(|b| self.all_ack_in_sync_state_set = b),
            "minInSyncReplicas" => number(v).map(|n| self.min_in_sync_replicas = n),
            "readUnCommitted" => boolean(v).map(|b| self.read_un_committed = b),
            _ => return None,
        };
        Some(result)
    }

    /// Checks the values once the whole file is read.
    pub fn validate(&self) -> Result<(), (&'static str, String, KeyError)> {
        if self.enabled && self.controller_addr.is_empty() {
            return Err((
                "controllerAddr",
                String::new(),
                "controller mode needs the controllers' addresses",
            ));
        }
        for (key, value) in [
            ("brokerHeartbeatInterval", self.broker_heartbeat_interval_ms),
            (
                "syncBrokerMetadataPeriod",
                self.sync_broker_metadata_period_ms,
            ),
            (
                "checkSyncStateSetPeriod",
                self.check_sync_state_set_period_ms,
            ),
        ] {
            if value == 0 {
                return Err((key, "0".into(), "must be at least 1 ms"));
            }
        }
        Ok(())
    }

    /// The keys and values, for GET_BROKER_CONFIG.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("enableControllerMode", self.enabled.to_string()),
            ("controllerAddr", self.controller_addr.join(";")),
            (
                "brokerHeartbeatInterval",
                self.broker_heartbeat_interval_ms.to_string(),
            ),
            (
                "controllerHeartBeatTimeoutMills",
                self.controller_heartbeat_timeout_ms.to_string(),
            ),
            (
                "syncBrokerMetadataPeriod",
                self.sync_broker_metadata_period_ms.to_string(),
            ),
            (
                "checkSyncStateSetPeriod",
                self.check_sync_state_set_period_ms.to_string(),
            ),
            (
                "brokerElectionPriority",
                self.broker_election_priority.to_string(),
            ),
            (
                "haMaxTimeSlaveNotCatchup",
                self.ha_max_time_slave_not_catchup_ms.to_string(),
            ),
            (
                "allAckInSyncStateSet",
                self.all_ack_in_sync_state_set.to_string(),
            ),
            ("minInSyncReplicas", self.min_in_sync_replicas.to_string()),
            ("readUnCommitted", self.read_un_committed.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_applied_and_checked() {
        let mut c = ControllerModeConfig::default();
        assert_eq!(c.set("enableControllerMode", "true"), Some(Ok(())));
        assert_eq!(c.set("controllerAddr", "a:9878; b:9878;"), Some(Ok(())));
        assert_eq!(c.controller_addr, vec!["a:9878", "b:9878"]);
        assert_eq!(
            c.set("allAckInSyncStateSet", "yes"),
            Some(Err("expected true or false"))
        );
        assert_eq!(c.set("minInSyncReplicas", "2"), Some(Ok(())));
        assert_eq!(c.min_in_sync_replicas, 2);
        assert_eq!(c.set("brokerRole", "SLAVE"), None);
        assert!(c.validate().is_ok());
        c.controller_addr.clear();
        assert!(c.validate().is_err());
    }
}

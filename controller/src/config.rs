//! Controller settings: Apache RocketMQ 5's `ControllerConfig` keys read from a flat `key = value` file.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::config_keys;
use apache_keys::Class;

/// Scan for silent brokers every this many ms. Apache's default is 5000; 1000 keeps master death to
/// new master within the 5 s goal with the default heartbeat timeout.
pub const DEFAULT_SCAN_NOT_ACTIVE_BROKER_INTERVAL_MS: u64 = 1000;
/// A broker whose heartbeat carries no `heartbeatTimeoutMills` is dead after this many ms of
/// silence (Apache's broker sends its `controllerHeartBeatTimeoutMills`, default 10000 there).
pub const DEFAULT_HEARTBEAT_TIMEOUT_MS: u64 = 3000;

/// Raft snapshot every this many entries (`raftSnapshotLogs`).
pub const DEFAULT_RAFT_SNAPSHOT_LOGS: u64 = 500;

/// Connection limits, under the broker's key names and with its defaults. The controller serves on
/// one executor, so `serverMaxConnectionsPerShard` caps all its connections.
pub use remoting::limit_defaults::{
    FRAME_TIMEOUT_SECONDS as DEFAULT_FRAME_TIMEOUT_SECONDS, IDLE_SECONDS as DEFAULT_IDLE_SECONDS,
    MAX_CONNECTIONS as DEFAULT_MAX_CONNECTIONS,
    MAX_PENDING_RESPONSE_BYTES as DEFAULT_MAX_PENDING_RESPONSE_BYTES,
    WRITE_STALL_SECONDS as DEFAULT_WRITE_STALL_SECONDS,
};
/// Requests of one connection handled at once.
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 64;

/// One controller peer of `controllerDLegerPeers`: `n<id>-host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub id: u64,
    pub addr: SocketAddr,
}

/// What one controller runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `controllerDLegerGroup`: the raft group's name, reported by GET_METADATA_INFO.
    pub group: String,
    /// `controllerDLegerPeers`: every controller of the group. Each serves brokers, admin tools and
    /// its peers' raft messages on this one address.
    pub peers: Vec<Peer>,
    /// `controllerDLegerSelfId`: which peer this process is.
    pub self_id: u64,
    /// `controllerStorePath`: the raft log, vote and snapshot.
    pub store_path: PathBuf,
    pub scan_not_active_broker_interval: Duration,
    /// `controllerHeartBeatTimeoutMills`: silence after which a broker is dead, for heartbeats
    /// that carry no `heartbeatTimeoutMills` of their own.
    pub heartbeat_timeout: Duration,
    /// `enableElectUncleanMaster`: elect a replica outside the SyncStateSet when none in it is alive.
    pub enable_elect_unclean_master: bool,
    /// `notifyBrokerRoleChanged`: send NOTIFY_BROKER_ROLE_CHANGED to a group's brokers after an election.
    pub notify_broker_role_changed: bool,
    /// `raftSnapshotLogs` (ours): take a raft snapshot every this many log entries, and keep as
    /// many entries behind it.
    pub raft_snapshot_logs: u64,
    /// `serverMaxConnectionsPerShard`: connections served at once; more are closed at accept. Read
    /// at start; a name server with an embedded controller uses its own setting instead.
    pub max_connections: usize,
    /// `serverChannelMaxIdleTimeSeconds`, `serverFrameTimeoutSeconds`,
    /// `serverWriteStallTimeoutSeconds`, `serverMaxPendingResponseBytes`: what each connection is
    /// served under (read at start, as `max_connections`).
    pub limits: remoting::ConnectionLimits,
    /// `tls.*`: TLS on the port (read at start). `enforcing` is refused: peers' raft messages
    /// arrive in plaintext.
    pub tls: remoting::tls::TlsSettings,
}

impl ControllerConfig {
    /// This controller's own listening address.
    pub fn self_addr(&self) -> Option<SocketAddr> {
        self.peers
            .iter()
            .find(|p| p.id == self.self_id)
            .map(|p| p.addr)
    }

    /// The config as `key=value` lines (GET_CONTROLLER_CONFIG's body).
    pub fn to_properties(&self) -> String {
        let peers: Vec<String> = self
            .peers
            .iter()
            .map(|p| format!("n{}-{}", p.id, p.addr))
            .collect();
        let mut lines = BTreeMap::new();
        lines.insert("controllerDLegerGroup", self.group.clone());
        lines.insert("controllerDLegerPeers", peers.join(";"));
        lines.insert("controllerDLegerSelfId", format!("n{}", self.self_id));
        lines.insert("controllerStorePath", self.store_path.display().to_string());
        lines.insert(
            "scanNotActiveBrokerInterval",
            self.scan_not_active_broker_interval.as_millis().to_string(),
        );
        lines.insert(
            "controllerHeartBeatTimeoutMills",
            self.heartbeat_timeout.as_millis().to_string(),
        );
        lines.insert(
            "enableElectUncleanMaster",
            self.enable_elect_unclean_master.to_string(),
        );
        lines.insert(
            "notifyBrokerRoleChanged",
            self.notify_broker_role_changed.to_string(),
        );
        lines.insert("raftSnapshotLogs", self.raft_snapshot_logs.to_string());
        lines
            .into_iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect()
    }

    /// Applies one `key = value`; unknown or malformed settings are an error.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let bool_of = |v: &str| {
            v.parse::<bool>()
                .map_err(|_| format!("{key}: expected true or false, got {v:?}"))
        };
        // 0 turns a connection time limit off.
        let secs_of = |v: &str| match v.parse::<u64>() {
            Ok(s) => Ok((s > 0).then(|| Duration::from_secs(s))),
            Err(_) => Err(format!("{key}: expected seconds (0 = no limit), got {v:?}")),
        };
        let ms_of = |v: &str| match v.parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(format!("{key}: expected milliseconds > 0, got {v:?}")),
        };
        if remoting::tls::SERVER_KEYS.contains(&key) {
            return match self.tls.set(key, value) {
                Some(Err(e)) => Err(format!("{key}: {e}")),
                _ => Ok(()),
            };
        }
        match key {
            "controllerDLegerGroup" => self.group = value.to_string(),
            "controllerDLegerPeers" => self.peers = parse_peers(value)?,
            "controllerDLegerSelfId" => self.self_id = parse_node_id(value)?,
            "controllerStorePath" => self.store_path = PathBuf::from(value),
            "scanNotActiveBrokerInterval" => self.scan_not_active_broker_interval = ms_of(value)?,
            "controllerHeartBeatTimeoutMills" => self.heartbeat_timeout = ms_of(value)?,
            "enableElectUncleanMaster" => self.enable_elect_unclean_master = bool_of(value)?,
            "notifyBrokerRoleChanged" => self.notify_broker_role_changed = bool_of(value)?,
            "raftSnapshotLogs" => match value.parse::<u64>() {
                Ok(n) if n > 0 => self.raft_snapshot_logs = n,
                _ => return Err(format!("{key}: expected a count > 0, got {value:?}")),
            },
            "serverMaxConnectionsPerShard" => match value.parse::<usize>() {
                Ok(n) if n > 0 => self.max_connections = n,
                _ => return Err(format!("{key}: expected a count > 0, got {value:?}")),
            },
            "serverChannelMaxIdleTimeSeconds" => self.limits.idle_timeout = secs_of(value)?,
            "serverFrameTimeoutSeconds" => self.limits.frame_timeout = secs_of(value)?,
            "serverWriteStallTimeoutSeconds" => self.limits.write_stall_timeout = secs_of(value)?,
            "serverMaxPendingResponseBytes" => match value.parse::<u64>() {
                Ok(n) => self.limits.max_pending_response_bytes = n.max(64 * 1024),
                Err(_) => return Err(format!("{key}: expected a byte count, got {value:?}")),
            },
            _ => return Err(format!("unknown controller setting {key}")),
        }
        Ok(())
    }

    /// Applies one key of a config file: keys `set` reads are applied, the others classified
    /// (`config_keys`). `Ok(Some(warning))` for a key not used or not known.
    pub fn read_key(&mut self, key: &str, value: &str) -> Result<Option<String>, String> {
        match config_keys::class_of(key) {
            Some(Class::Applied) => self.set(key, value).map(|()| None),
            class => apache_keys::unapplied(class, key, value),
        }
    }

    /// Reads a Java-properties-like file (`key = value` or `key=value`, `#` comments, TOML-style
    /// quotes tolerated) over the defaults, then checks it. Keys not used or not known are logged.
    pub fn from_file_text(text: &str) -> Result<Self, String> {
        let (config, warnings) = Self::from_file_text_reporting(text)?;
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok(config)
    }

    /// `from_file_text`, answering the warnings instead of logging them.
    pub fn from_file_text_reporting(text: &str) -> Result<(Self, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut listen_port = None;
        let mut config = ControllerConfig::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
                return Err(format!("line {}: expected key = value", n + 1));
            };
            let value = value.trim().trim_matches('"');
            if key.trim() == "listenPort" {
                listen_port = Some(value.to_owned());
            }
            if let Some(warning) = config
                .read_key(key.trim(), value)
                .map_err(|e| format!("line {}: {e}", n + 1))?
            {
                warnings.push(warning);
            }
        }
        config.check()?;
        // Brokers reach the controller at its peer address; a different listenPort would leave
        // them knocking at a port nobody serves.
        if let (Some(port), Some(addr)) = (listen_port, config.self_addr()) {
            if port.trim() != addr.port().to_string() {
                return Err(format!(
                    "config key `listenPort` has an invalid value `{port}`: the controller \
                     listens on its controllerDLegerPeers address {addr}; remove the key or \
                     set it to {}",
                    addr.port()
                ));
            }
        }
        Ok((config, warnings))
    }

    /// A config that can run: peers given, the self id among them, a store path.
    pub fn check(&self) -> Result<(), String> {
        if self.peers.is_empty() {
            return Err("controllerDLegerPeers is empty".into());
        }
        if self.self_addr().is_none() {
            return Err(format!(
                "controllerDLegerSelfId n{} is not in controllerDLegerPeers",
                self.self_id
            ));
        }
        if self.store_path.as_os_str().is_empty() {
            return Err("controllerStorePath is empty".into());
        }
        if self.tls.server_mode == remoting::tls::ServerMode::Enforcing {
            return Err(
                "tls.server.mode = enforcing is refused for the controller: the \
                        controllers' raft messages to each other are plaintext on this port; use \
                        permissive (TLS clients are served) or disabled"
                    .into(),
            );
        }
        Ok(())
    }
}

impl Default for ControllerConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        ControllerConfig {
            group: "DefaultControllerGroup".into(),
            peers: Vec::new(),
            self_id: 0,
            store_path: home.join("DledgerController"),
            scan_not_active_broker_interval: Duration::from_millis(
                DEFAULT_SCAN_NOT_ACTIVE_BROKER_INTERVAL_MS,
            ),
            heartbeat_timeout: Duration::from_millis(DEFAULT_HEARTBEAT_TIMEOUT_MS),
            enable_elect_unclean_master: false,
            notify_broker_role_changed: true,
            raft_snapshot_logs: DEFAULT_RAFT_SNAPSHOT_LOGS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            limits: remoting::ConnectionLimits::from_keys(
                MAX_IN_FLIGHT_PER_CONNECTION,
                DEFAULT_IDLE_SECONDS,
                DEFAULT_FRAME_TIMEOUT_SECONDS,
                DEFAULT_WRITE_STALL_SECONDS,
                DEFAULT_MAX_PENDING_RESPONSE_BYTES,
            ),
            tls: remoting::tls::TlsSettings::default(),
        }
    }
}

/// `n0` -> 0 (DLedger's peer ids; the number is the raft node id).
pub fn parse_node_id(text: &str) -> Result<u64, String> {
    text.trim()
        .strip_prefix('n')
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| format!("controller id {text:?}: expected n<number>, e.g. n0"))
}

/// `n0-127.0.0.1:9877;n1-127.0.0.1:9878` -> peers.
pub fn parse_peers(text: &str) -> Result<Vec<Peer>, String> {
    let mut peers: Vec<Peer> = Vec::new();
    for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (id, addr) = item
            .split_once('-')
            .ok_or_else(|| format!("peer {item:?}: expected n<id>-host:port"))?;
        let id = parse_node_id(id)?;
        let addr: SocketAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("peer {item:?}: {addr:?} is not an ip:port"))?;
        if peers.iter().any(|p| p.id == id) {
            return Err(format!("peer id n{id} given twice"));
        }
        peers.push(Peer { id, addr });
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_server_keys_are_read_enforcing_and_client_tls_refused() {
        let peers = "controllerDLegerPeers = n0-127.0.0.1:1\n";
        let c = ControllerConfig::from_file_text(&format!(
            "{peers}tls.server.mode = disabled\ntls.server.need.client.auth = optional\n"
        ))
        .unwrap();
        assert_eq!(c.tls.server_mode, remoting::tls::ServerMode::Disabled);
        assert_eq!(c.tls.need_client_auth, remoting::tls::ClientAuth::Optional);
        for (line, expected) in [
            ("tls.server.mode = enforcing", "raft"),
            ("tls.enable = true", "tls.enable"),
            ("tls.server.mod = permissive", "tls.server.mod"),
            ("tls.server.keyPassword = x", "encrypted"),
        ] {
            let err = ControllerConfig::from_file_text(&format!("{peers}{line}\n")).unwrap_err();
            assert!(err.contains(expected), "{line}: {err}");
        }
        let (_, warnings) = ControllerConfig::from_file_text_reporting(&format!(
            "{peers}tls.client.certPath = /x.pem\n"
        ))
        .unwrap();
        assert!(
            warnings[0].contains("makes no TLS connections"),
            "{warnings:?}"
        );
    }

    #[test]
    fn reads_apaches_keys_and_refuses_unknown_ones() {
        let c = ControllerConfig::from_file_text(
            "# comment\ncontrollerDLegerGroup = group1\ncontrollerDLegerPeers = n0-127.0.0.1:9877;n1-127.0.0.1:9878;n2-127.0.0.1:9879\ncontrollerDLegerSelfId = n1\ncontrollerStorePath = /tmp/c1\nenableElectUncleanMaster = true\nscanNotActiveBrokerInterval=500\n",
        )
        .unwrap();
        assert_eq!(c.self_id, 1);
        assert_eq!(c.peers.len(), 3);
        assert_eq!(c.self_addr().unwrap().port(), 9878);
        assert!(c.enable_elect_unclean_master);
        assert_eq!(
            c.scan_not_active_broker_interval,
            Duration::from_millis(500)
        );
        // A typo is reported and ignored, as the broker does; an Apache key not used says why.
        let (_, warnings) = ControllerConfig::from_file_text_reporting(
            "controllerDLegerPeers = n0-127.0.0.1:1\nbogus = 1\ncontrollerThreadPoolNums = 4\n",
        )
        .unwrap();
        assert_eq!(warnings[0], "unknown config key `bogus` ignored");
        assert!(
            warnings[1].contains("`controllerThreadPoolNums` is accepted but not used"),
            "{warnings:?}"
        );
        let err = ControllerConfig::from_file_text(
            "controllerDLegerPeers = n0-127.0.0.1:1\njRaftInitConf = 127.0.0.1:1\n",
        )
        .unwrap_err();
        assert!(
            err.contains("jRaftInitConf") && err.contains("controllerDLegerPeers"),
            "{err}"
        );
        let err = ControllerConfig::from_file_text(
            "controllerDLegerPeers = n0-127.0.0.1:1\ncontrollerDLegerSelfId = n4\n",
        )
        .unwrap_err();
        assert!(err.contains("not in controllerDLegerPeers"), "{err}");
    }

    #[test]
    fn connection_keys_reach_the_limits() {
        let peers = "controllerDLegerPeers = n0-127.0.0.1:9877\ncontrollerDLegerSelfId = n0\n";
        let d = ControllerConfig::from_file_text(peers).unwrap();
        assert_eq!(d.max_connections, DEFAULT_MAX_CONNECTIONS);
        assert_eq!(d.limits.idle_timeout, Some(Duration::from_secs(120)));
        let c = ControllerConfig::from_file_text(&format!(
            "{peers}serverMaxConnectionsPerShard = 12\nserverChannelMaxIdleTimeSeconds = 7\n\
             serverFrameTimeoutSeconds = 3\nserverWriteStallTimeoutSeconds = 0\n\
             serverMaxPendingResponseBytes = 1048576\n"
        ))
        .unwrap();
        assert_eq!(c.max_connections, 12);
        assert_eq!(c.limits.idle_timeout, Some(Duration::from_secs(7)));
        assert_eq!(c.limits.frame_timeout, Some(Duration::from_secs(3)));
        assert_eq!(c.limits.write_stall_timeout, None);
        assert_eq!(c.limits.max_pending_response_bytes, 1_048_576);
        let err =
            ControllerConfig::from_file_text(&format!("{peers}serverMaxConnectionsPerShard = 0\n"))
                .unwrap_err();
        assert!(err.contains("serverMaxConnectionsPerShard"), "{err}");
    }
}

//! Name-server settings and the command line that sets them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::config_file::FileSettings;

/// Apache RocketMQ's defaults: every address on port 9876, brokers silent for 120 s dropped, scan
/// every 10 s.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9876";
pub const DEFAULT_BROKER_EXPIRE_MS: u64 = 120_000;
pub const DEFAULT_SCAN_INTERVAL_MS: u64 = 10_000;

/// Connection limits, under the broker's key names and with its defaults (0 turns a time limit off).
/// The name server runs one executor, so `serverMaxConnectionsPerShard` caps all its connections.
pub use remoting::limit_defaults::{
    FRAME_TIMEOUT_SECONDS as DEFAULT_FRAME_TIMEOUT_SECONDS, IDLE_SECONDS as DEFAULT_IDLE_SECONDS,
    MAX_CONNECTIONS as DEFAULT_MAX_CONNECTIONS,
    MAX_PENDING_RESPONSE_BYTES as DEFAULT_MAX_PENDING_RESPONSE_BYTES,
    WRITE_STALL_SECONDS as DEFAULT_WRITE_STALL_SECONDS,
};
/// Requests of one connection handled at once (brokers and clients send few; this bounds memory).
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 64;

/// What one name server runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvConfig {
    /// Address to listen on; port 0 picks a free one (the bound address is printed).
    pub listen: SocketAddr,
    /// A broker silent this long is dropped (unless it registered its own `heartbeatTimeoutMillis`).
    pub broker_expire: Duration,
    /// How often silent brokers are looked for.
    pub scan_interval: Duration,
    /// The KV config file (Apache's `kvConfigPath`, default `~/namesrv/kvConfig.json`).
    pub kv_config_path: PathBuf,
    /// Where UPDATE_NAMESRV_CONFIG writes the settings it changed, read again at start (Apache's
    /// `configStorePath`, default `~/namesrv/namesrv.properties`).
    pub config_store_path: PathBuf,
    /// Routes of topics with an ORDER_TOPIC_CONFIG KV entry carry it as `orderTopicConf` (Apache's
    /// `orderMessageEnable`, default false). Changeable at runtime.
    pub order_message_enable: bool,
    /// `enableControllerInNamesrv`: run a controller inside this name server.
    pub enable_controller_in_namesrv: bool,
    /// Connections served at once (`serverMaxConnectionsPerShard`); more are closed at accept.
    pub max_connections: usize,
    /// What each connection is served under: idleness, slow frames, write stalls, queued responses.
    pub limits: remoting::ConnectionLimits,
    /// `tls.*` keys of the `-c` file: TLS on the port.
    pub tls: remoting::tls::TlsSettings,
}

/// `~/namesrv/<file>`, as Apache's name server places its files under `user.home`.
pub fn home_file(file: &str) -> PathBuf {
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join("namesrv").join(file)
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        NamesrvConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 9876)),
            broker_expire: Duration::from_millis(DEFAULT_BROKER_EXPIRE_MS),
            scan_interval: Duration::from_millis(DEFAULT_SCAN_INTERVAL_MS),
            kv_config_path: home_file("kvConfig.json"),
            config_store_path: home_file("namesrv.properties"),
            order_message_enable: false,
            enable_controller_in_namesrv: false,
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

/// `namesrv` command-line arguments. Every flag overrides the same setting of the `-c` file.
#[derive(Debug, Parser)]
#[command(
    name = "namesrv",
    version,
    about = "RocketMQ-compatible name server",
    after_help = "Settings come from the defaults, then the -c file (Apache's namesrv.properties \
                  keys: listenPort, orderMessageEnable, ...), then the flags: a flag given on the \
                  command line overrides the file."
)]
pub struct Args {
    /// Apache's namesrv.properties (`mqnamesrv -c`): NamesrvConfig and NettyServerConfig keys;
    /// the flags below override it.
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Address to listen on (RocketMQ's `-n` works too) [default: 0.0.0.0:9876, or the file's
    /// bindAddress and listenPort].
    #[arg(short = 'n', long = "listen")]
    pub listen: Option<SocketAddr>,
    /// Drop a broker silent for this many milliseconds.
    #[arg(long, default_value_t = DEFAULT_BROKER_EXPIRE_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub broker_expire_ms: u64,
    /// Look for silent brokers every this many milliseconds (the file's
    /// scanNotActiveBrokerInterval) [default: 10000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub scan_interval_ms: Option<u64>,
    /// KV config file [default: ~/namesrv/kvConfig.json].
    #[arg(long = "kvConfigPath")]
    pub kv_config_path: Option<PathBuf>,
    /// Settings changed at runtime are kept here [default: ~/namesrv/namesrv.properties].
    #[arg(long = "configStorePath")]
    pub config_store_path: Option<PathBuf>,
    /// Give ordered topics' routes their ORDER_TOPIC_CONFIG KV entry [default: false].
    #[arg(long = "orderMessageEnable", action = clap::ArgAction::Set)]
    pub order_message_enable: Option<bool>,
    /// Run a controller (controller mode) inside this name server, on its port [default: false].
    #[arg(long = "enableControllerInNamesrv", action = clap::ArgAction::Set)]
    pub enable_controller_in_namesrv: Option<bool>,
    /// The embedded controller's settings: a file of Apache's ControllerConfig keys, whose
    /// `controllerDLegerSelfId` peer has this name server's port.
    #[arg(long = "controllerConfig")]
    pub controller_config: Option<PathBuf>,
    /// Connections served at once; more are closed at accept (the peer sees EOF) [default: see
    /// docs/configuration.md].
    #[arg(long = "serverMaxConnectionsPerShard", value_parser = positive_count)]
    pub server_max_connections: Option<usize>,
    /// Close a connection with no request, response or work in flight for this many seconds (0: never)
    /// [default: 120].
    #[arg(long = "serverChannelMaxIdleTimeSeconds")]
    pub server_channel_max_idle_time_seconds: Option<u64>,
    /// A request frame must arrive whole within this many seconds from its first byte (0: no limit).
    #[arg(long = "serverFrameTimeoutSeconds")]
    pub server_frame_timeout_seconds: Option<u64>,
    /// Close a connection that takes none of its responses for this many seconds (0: no limit).
    #[arg(long = "serverWriteStallTimeoutSeconds")]
    pub server_write_stall_timeout_seconds: Option<u64>,
    /// Response bytes one connection may have waiting to be written before its reading pauses.
    #[arg(long = "serverMaxPendingResponseBytes")]
    pub server_max_pending_response_bytes: Option<u64>,
}

/// A count of at least 1.
fn positive_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a count > 0, got {text:?}")),
    }
}

impl Args {
    /// The embedded controller's config, when `enableControllerInNamesrv` is true in `config`.
    pub fn controller(
        &self,
        namesrv: &NamesrvConfig,
    ) -> Result<Option<controller::ControllerConfig>, String> {
        if !namesrv.enable_controller_in_namesrv {
            return Ok(None);
        }
        let path = self
            .controller_config
            .as_ref()
            .ok_or("enableControllerInNamesrv = true needs --controllerConfig FILE")?;
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let config = controller::ControllerConfig::from_file_text(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let port = config.self_addr().map(|a| a.port());
        if port != Some(namesrv.listen.port()) {
            return Err(format!(
                "{}: the controller's own peer address must have the name server's port {}",
                path.display(),
                namesrv.listen.port()
            ));
        }
        Ok(Some(config))
    }
}

impl Args {
    /// The settings in force: defaults, then the `-c` file, then the flags. Answers the warnings
    /// for the file's keys that are not used or not known.
    pub fn resolve(&self) -> Result<(NamesrvConfig, Vec<String>), String> {
        let (file, warnings) = match &self.config {
            Some(path) => FileSettings::read(path)?,
            None => (FileSettings::default(), Vec::new()),
        };
        let d = NamesrvConfig::default();
        let listen = self.listen.unwrap_or_else(|| {
            SocketAddr::new(
                file.bind_address.unwrap_or(d.listen.ip()),
                file.listen_port.unwrap_or(d.listen.port()),
            )
        });
        let config = NamesrvConfig {
            listen,
            broker_expire: Duration::from_millis(self.broker_expire_ms),
            scan_interval: self
                .scan_interval_ms
                .or(file.scan_interval_ms)
                .map_or(d.scan_interval, Duration::from_millis),
            kv_config_path: self
                .kv_config_path
                .clone()
                .or(file.kv_config_path)
                .unwrap_or(d.kv_config_path),
            config_store_path: self
                .config_store_path
                .clone()
                .or(file.config_store_path)
                .unwrap_or(d.config_store_path),
            order_message_enable: self
                .order_message_enable
                .or(file.order_message_enable)
                .unwrap_or(d.order_message_enable),
            enable_controller_in_namesrv: self
                .enable_controller_in_namesrv
                .or(file.enable_controller_in_namesrv)
                .unwrap_or(false),
            max_connections: self
                .server_max_connections
                .or(file.server_max_connections)
                .unwrap_or(d.max_connections),
            limits: remoting::ConnectionLimits::from_keys(
                MAX_IN_FLIGHT_PER_CONNECTION,
                self.server_channel_max_idle_time_seconds
                    .or(file.idle_seconds)
                    .unwrap_or(DEFAULT_IDLE_SECONDS),
                self.server_frame_timeout_seconds
                    .or(file.frame_timeout_seconds)
                    .unwrap_or(DEFAULT_FRAME_TIMEOUT_SECONDS),
                self.server_write_stall_timeout_seconds
                    .or(file.write_stall_seconds)
                    .unwrap_or(DEFAULT_WRITE_STALL_SECONDS),
                self.server_max_pending_response_bytes
                    .or(file.max_pending_response_bytes)
                    .unwrap_or(DEFAULT_MAX_PENDING_RESPONSE_BYTES),
            ),
            tls: file.tls,
        };
        Ok((config, warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listens_on_every_address_by_default_as_apaches() {
        let args = Args::try_parse_from(["namesrv"]).unwrap();
        assert_eq!(args.resolve().unwrap().0, NamesrvConfig::default());
        assert_eq!(
            NamesrvConfig::default().listen,
            "0.0.0.0:9876".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            NamesrvConfig::default().limits.idle_timeout,
            Some(Duration::from_secs(120))
        );
    }

    #[test]
    fn connection_keys_reach_the_limits() {
        let args = Args::try_parse_from([
            "namesrv",
            "--serverMaxConnectionsPerShard",
            "12",
            "--serverChannelMaxIdleTimeSeconds",
            "7",
            "--serverFrameTimeoutSeconds",
            "3",
            "--serverWriteStallTimeoutSeconds",
            "0",
            "--serverMaxPendingResponseBytes",
            "1048576",
        ])
        .unwrap();
        let c = args.resolve().unwrap().0;
        assert_eq!(c.max_connections, 12);
        assert_eq!(c.limits.idle_timeout, Some(Duration::from_secs(7)));
        assert_eq!(c.limits.frame_timeout, Some(Duration::from_secs(3)));
        assert_eq!(c.limits.write_stall_timeout, None);
        assert_eq!(c.limits.max_pending_response_bytes, 1_048_576);
        assert!(Args::try_parse_from(["namesrv", "--serverMaxConnectionsPerShard", "0"]).is_err());
    }
}

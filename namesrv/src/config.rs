//! Name-server settings and the command line that sets them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Apache RocketMQ's defaults: every address on port 9876, brokers silent for 120 s dropped, scan
/// every 10 s.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9876";
pub const DEFAULT_BROKER_EXPIRE_MS: u64 = 120_000;
pub const DEFAULT_SCAN_INTERVAL_MS: u64 = 10_000;

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
        }
    }
}

/// `namesrv` command-line arguments.
#[derive(Debug, Parser)]
#[command(name = "namesrv", version, about = "RocketMQ-compatible name server")]
pub struct Args {
    /// Address to listen on (RocketMQ's `-n` works too).
    #[arg(short = 'n', long = "listen", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Drop a broker silent for this many milliseconds.
    #[arg(long, default_value_t = DEFAULT_BROKER_EXPIRE_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub broker_expire_ms: u64,
    /// Look for silent brokers every this many milliseconds.
    #[arg(long, default_value_t = DEFAULT_SCAN_INTERVAL_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub scan_interval_ms: u64,
    /// KV config file (default ~/namesrv/kvConfig.json).
    #[arg(long = "kvConfigPath")]
    pub kv_config_path: Option<PathBuf>,
    /// Settings changed at runtime are kept here (default ~/namesrv/namesrv.properties).
    #[arg(long = "configStorePath")]
    pub config_store_path: Option<PathBuf>,
    /// Give ordered topics' routes their ORDER_TOPIC_CONFIG KV entry.
    #[arg(long = "orderMessageEnable", default_value_t = false, action = clap::ArgAction::Set)]
    pub order_message_enable: bool,
    /// Run a controller (controller mode) inside this name server, on its port.
    #[arg(long = "enableControllerInNamesrv", default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_controller_in_namesrv: bool,
    /// The embedded controller's settings: a file of Apache's ControllerConfig keys, whose
    /// `controllerDLegerSelfId` peer has this name server's port.
    #[arg(long = "controllerConfig")]
    pub controller_config: Option<PathBuf>,
}

impl Args {
    /// The embedded controller's config, when `--enableControllerInNamesrv true`.
    pub fn controller(&self) -> Result<Option<controller::ControllerConfig>, String> {
        if !self.enable_controller_in_namesrv {
            return Ok(None);
        }
        let path = self
            .controller_config
            .as_ref()
            .ok_or("--enableControllerInNamesrv true needs --controllerConfig FILE")?;
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let config = controller::ControllerConfig::from_file_text(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let port = config.self_addr().map(|a| a.port());
        if port != Some(self.listen.port()) {
            return Err(format!(
                "{}: the controller's own peer address must have the name server's port {}",
                path.display(),
                self.listen.port()
            ));
        }
        Ok(Some(config))
    }
}

impl From<Args> for NamesrvConfig {
    fn from(args: Args) -> Self {
        NamesrvConfig {
            listen: args.listen,
            broker_expire: Duration::from_millis(args.broker_expire_ms),
            scan_interval: Duration::from_millis(args.scan_interval_ms),
            kv_config_path: args
                .kv_config_path
                .unwrap_or_else(|| home_file("kvConfig.json")),
            config_store_path: args
                .config_store_path
                .unwrap_or_else(|| home_file("namesrv.properties")),
            order_message_enable: args.order_message_enable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listens_on_every_address_by_default_as_apaches() {
        let args = Args::try_parse_from(["namesrv"]).unwrap();
        assert_eq!(NamesrvConfig::from(args), NamesrvConfig::default());
        assert_eq!(
            NamesrvConfig::default().listen,
            "0.0.0.0:9876".parse::<SocketAddr>().unwrap()
        );
    }
}

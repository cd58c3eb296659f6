//! Name-server settings and the command line that sets them.

use std::net::SocketAddr;
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
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        NamesrvConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 9876)),
            broker_expire: Duration::from_millis(DEFAULT_BROKER_EXPIRE_MS),
            scan_interval: Duration::from_millis(DEFAULT_SCAN_INTERVAL_MS),
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
}

impl From<Args> for NamesrvConfig {
    fn from(args: Args) -> Self {
        NamesrvConfig {
            listen: args.listen,
            broker_expire: Duration::from_millis(args.broker_expire_ms),
            scan_interval: Duration::from_millis(args.scan_interval_ms),
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

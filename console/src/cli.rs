//! The console's command line: name servers as Apache's tools take them (`-n` / `NAMESRV_ADDR`), the
//! HTTP listen address (8080 like rocketmq-dashboard), the console's own ACL account for reading, and
//! whether admin actions may be offered at all.

use std::net::SocketAddr;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "console",
    version,
    about = "Web console for RocketMQ-compatible clusters"
)]
pub struct Cli {
    /// Name server address list, e.g. 127.0.0.1:9876;127.0.0.2:9876
    #[arg(short = 'n', long = "namesrv", env = "NAMESRV_ADDR")]
    pub namesrv: String,
    /// Address the web console listens on
    #[arg(long, env = "CONSOLE_LISTEN", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Access key the console reads with when the brokers have ACL on (an account with SUB rights)
    #[arg(long = "accessKey", env = "CONSOLE_ACCESS_KEY")]
    pub access_key: Option<String>,
    /// Secret key of --accessKey
    #[arg(long = "secretKey", env = "CONSOLE_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// Offer admin actions (create topic, reset offsets, drain a broker) to operators who log in with
    /// an ACL account; without it the console is read-only
    #[arg(
        long = "enableAdmin",
        env = "CONSOLE_ENABLE_ADMIN",
        default_value_t = false
    )]
    pub enable_admin: bool,
    /// Timeout of each request to a name server or broker, in milliseconds
    #[arg(long = "timeout-ms", default_value_t = 5000)]
    pub timeout_ms: u64,
}

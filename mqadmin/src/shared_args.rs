//! The flags most commands share: the name-server list (`-n`, or `NAMESRV_ADDR`) and where a
//! change goes (`-b` broker address or `-c` cluster).

use clap::Args;

/// The name-server list every command takes; `NAMESRV_ADDR` when `-n` is absent.
#[derive(Debug, Clone, Args)]
pub struct Namesrv {
    /// Name server address list, e.g. 127.0.0.1:9876;127.0.0.2:9876
    #[arg(short = 'n', long = "namesrvAddr", env = "NAMESRV_ADDR")]
    pub namesrv: String,
}

/// Where a change goes: one broker (`-b`) or every master of a cluster (`-c`).
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct Target {
    /// Broker address (host:port)
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// Cluster name
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
}

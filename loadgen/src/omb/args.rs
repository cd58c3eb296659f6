//! The options of `loadgen omb` (apart from the run, so the command line does not depend on it).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::duration_arg::{parse_count, parse_duration};

/// How often executors report; periods are made of these samples.
pub const SAMPLE: Duration = Duration::from_secs(1);

#[derive(Args, Debug, Clone)]
pub struct OmbArgs {
    /// OpenMessaging Benchmark workload file (YAML), e.g. bench/omb/1-topic-16-partitions-1kb.yaml.
    #[arg(long)]
    pub workload: PathBuf,
    /// Name server address(es), `host:port;host:port`.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    /// glommio executors (one thread each); producers and consumers are dealt out among them.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin executor i to CPU (first_cpu + i).
    #[arg(long)]
    pub first_cpu: Option<usize>,
    /// Write the result (OMB's result-file fields) as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Instead of the file's testDurationMinutes (e.g. `20s` for a short run).
    #[arg(long, value_parser = parse_duration)]
    pub test_duration: Option<Duration>,
    /// Instead of the file's warmupDurationMinutes (1 minute when the file has none, as OMB).
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// Instead of the file's consumerBacklogSizeGB: the backlog to build, in bytes (`64m`: 64 million;
    /// 0: no backlog phase), for short runs.
    #[arg(long, value_parser = parse_count)]
    pub backlog_bytes: Option<u64>,
    /// Report period (OMB prints every 10 s).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub interval: Duration,
    /// Sends outstanding at once over all producers (each gets an equal share, at least 1).
    #[arg(long, default_value_t = 1024)]
    pub inflight: usize,
    /// maxMsgNums of each pull.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-poll hold of a pull that finds nothing new.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub long_poll: Duration,
    /// Request timeout.
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub timeout: Duration,
    /// Topics are `<prefix>-0`, `<prefix>-1`...; subscriptions `<prefix>-sub-<n>` (default: `omb-`
    /// and the start time, so every run has fresh topics and groups).
    #[arg(long)]
    pub topic_prefix: Option<String>,
    /// Use the topics as they are instead of creating them (each must already have
    /// partitionsPerTopic queues in all).
    #[arg(long)]
    pub existing_topics: bool,
    /// Longest the backlog build, and then its drain, may take before the run fails.
    #[arg(long, value_parser = parse_duration, default_value = "30m")]
    pub backlog_limit: Duration,
}

impl OmbArgs {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.threads == 0 || self.inflight == 0 {
            return Err("--threads and --inflight must be at least 1".into());
        }
        if self.interval < SAMPLE {
            return Err(format!("--interval must be at least {}s", SAMPLE.as_secs()));
        }
        if let Some(prefix) = &self.topic_prefix {
            let ok = !prefix.is_empty()
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err("--topic-prefix may hold only letters, digits, '-' and '_'".into());
            }
        }
        Ok(())
    }
}

//! Command-line options of `loadgen produce | consume | e2e | null-broker | verify` (the soak
//! workloads' options are in `workload/`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::duration_arg::{parse_count, parse_duration};

#[derive(Parser, Debug)]
#[command(
    name = "loadgen",
    version,
    about = "Load generator for RocketMQ-compatible brokers: send TPS, MB/s, RT percentiles"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Send messages and report send TPS, MB/s and RT.
    Produce(ProduceArgs),
    /// Pull messages and report consume TPS, MB/s, end-to-end latency and backlog.
    Consume(ConsumeArgs),
    /// Produce and consume together; report end-to-end latency.
    E2e(E2eArgs),
    /// A name server + broker stand-in that answers at once (measures loadgen itself).
    NullBroker(NullBrokerArgs),
    /// Read a topic back and check that every message of `--acked-log` files is stored intact.
    Verify(crate::verify::VerifyArgs),
    /// Transactions (commit, rollback, left to the broker's check-back) with their verdict.
    Transaction(crate::workload::transaction::TransactionArgs),
    /// Sends by sharding key and an orderly consumer holding queue locks, with an in-order verdict.
    Orderly(crate::workload::orderly::OrderlyArgs),
    /// A consumer that hands some messages back until they reach the DLQ, with its verdict.
    RetryDlq(crate::workload::retry_dlq::RetryDlqArgs),
    /// Run an OpenMessaging Benchmark workload file (YAML) and report as OMB does.
    Omb(crate::omb::args::OmbArgs),
}

/// Options every load mode has.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Name server address(es), `host:port;host:port`.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    #[arg(long, default_value = "BenchmarkTest")]
    pub topic: String,
    /// glommio executors (one thread each); load and connections are split among them.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Pin executor i to CPU (first_cpu + i) instead of letting the OS place them.
    #[arg(long)]
    pub first_cpu: Option<usize>,
    /// TCP connections per broker, in total (at least one per executor).
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
    /// How long to measure after the warm-up (default 20s unless --count is given).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many messages (sent, or consumed in `consume`), warm-up included.
    #[arg(long, value_parser = parse_count)]
    pub count: Option<u64>,
    /// Run this long before measuring (its figures are shown, not summed).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Report interval.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,
    /// Write the summary as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Request timeout.
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub timeout: Duration,
    /// Before the run, create the topic with this many queues on every broker master
    /// (UPDATE_AND_CREATE_TOPIC); otherwise an unknown topic is auto-created by the first send.
    #[arg(long)]
    pub create_queues: Option<i32>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// Each of --inflight senders waits for its answer before the next send.
    Sync,
    /// Sends start without waiting, at most --inflight outstanding.
    Async,
    /// No answer expected (RT is the time to hand the request to the connection).
    Oneway,
}

#[derive(Args, Debug, Clone)]
pub struct ProduceOpts {
    /// Message body size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// KEYS property length (0: no keys).
    #[arg(long, default_value_t = 0)]
    pub key_size: usize,
    /// TAGS property length (0: no tag); ignored when --tag is given.
    #[arg(long, default_value_t = 0)]
    pub tag_size: usize,
    /// TAGS property value.
    #[arg(long)]
    pub tag: Option<String>,
    /// Length of one extra user property (0: none).
    #[arg(long, default_value_t = 0)]
    pub property_size: usize,
    /// Send timer messages due this many ms after their send (`TIMER_DELAY_MS`, RocketMQ 5); their
    /// end-to-end latency is then counted from the due time, i.e. it is the delivery's lateness.
    #[arg(long, default_value_t = 0)]
    pub timer_delay_ms: u64,
    #[arg(long, value_enum, default_value_t = SendMode::Sync)]
    pub mode: SendMode,
    /// Requests outstanding at once, in total.
    #[arg(long, default_value_t = 64)]
    pub inflight: usize,
    /// Messages per request (>1: SEND_BATCH_MESSAGE).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Fixed total rate in messages/s (open loop, RT from the intended send time); 0 = as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    #[arg(long, default_value = "loadgen_producer")]
    pub producer_group: String,
    /// Write one line per acknowledged message to this file (for `loadgen verify`).
    #[arg(long)]
    pub acked_log: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// Each queue's min offset.
    Earliest,
    /// Each queue's max offset at start (only new messages).
    Latest,
    /// The group's committed offset (earliest when none).
    Committed,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumeOpts {
    #[arg(long, default_value = "loadgen_consumer")]
    pub consumer_group: String,
    /// Where to start (default: earliest for consume, latest for e2e).
    #[arg(long, value_enum)]
    pub from: Option<StartFrom>,
    /// maxMsgNums of each pull.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: i32,
    /// Long-poll hold the broker may use when a queue has nothing new.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub long_poll: Duration,
    /// Commit consumed offsets to the broker at the end.
    #[arg(long)]
    pub commit: bool,
    /// e2e: after producers stop, keep consuming this long at most to drain what was sent.
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub drain: Duration,
}

#[derive(Args, Debug, Clone)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub produce: ProduceOpts,
}

#[derive(Args, Debug, Clone)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub consume: ConsumeOpts,
}

#[derive(Args, Debug, Clone)]
pub struct E2eArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub produce: ProduceOpts,
    #[command(flatten)]
    pub consume: ConsumeOpts,
}

#[derive(Args, Debug, Clone)]
pub struct NullBrokerArgs {
    /// Address to listen on (port 0: pick a free one); it serves as name server and broker at once.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub listen: String,
    /// glommio executors sharing the port (SO_REUSEPORT); each keeps its own queue counters.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[arg(long)]
    pub first_cpu: Option<usize>,
    /// Read/write queues of every topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Messages every queue holds before anything is sent (for consume tests).
    #[arg(long, default_value_t = 0)]
    pub backlog: i64,
    /// Body size of the messages pulls return.
    #[arg(long, default_value_t = 1024)]
    pub pull_body_size: usize,
    /// Answer every Nth send with --fail-code (0: never).
    #[arg(long, default_value_t = 0)]
    pub fail_every: u64,
    #[arg(long, default_value_t = 2)]
    pub fail_code: i32,
    #[arg(long, default_value = "null-broker")]
    pub broker_name: String,
    /// Exit after this long (for tests; default: run until killed).
    #[arg(long, value_parser = parse_duration)]
    pub exit_after: Option<Duration>,
}

impl CommonArgs {
    /// The measured duration: as given, else 20 s unless a count bounds the run.
    pub fn measured_duration(&self) -> Option<Duration> {
        match (self.duration, self.count) {
            (Some(d), _) => Some(d),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(20)),
        }
    }

    /// Checks what clap cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        if self.interval.is_zero() {
            return Err("--interval must be positive".into());
        }
        if self.count == Some(0) {
            return Err("--count must be positive".into());
        }
        Ok(())
    }
}

impl ProduceOpts {
    pub fn validate(&self) -> Result<(), String> {
        if self.inflight == 0 || self.batch == 0 {
            return Err("--inflight and --batch must be at least 1".into());
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return Err("--rate must be a non-negative number".into());
        }
        if self.batch > 1 && self.mode == SendMode::Oneway {
            return Err("--batch with --mode oneway is not supported".into());
        }
        Ok(())
    }

    /// The TAGS value to send, if any.
    pub fn tags(&self) -> Option<String> {
        match (&self.tag, self.tag_size) {
            (Some(tag), _) => Some(tag.clone()),
            (None, 0) => None,
            (None, n) => Some(crate::payload::tag_of_size(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_parses() {
        let cli = Cli::try_parse_from([
            "loadgen",
            "produce",
            "--namesrv",
            "127.0.0.1:9876",
            "--topic",
            "T",
            "--size",
            "1024",
            "--inflight",
            "64",
            "--duration",
            "20s",
            "--json",
            "out.json",
        ])
        .unwrap();
        let Command::Produce(args) = cli.command else {
            panic!("not produce")
        };
        assert_eq!(args.common.topic, "T");
        assert_eq!(args.produce.size, 1024);
        assert_eq!(args.produce.inflight, 64);
        assert_eq!(
            args.common.measured_duration(),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            args.common.json.as_deref(),
            Some(std::path::Path::new("out.json"))
        );
        assert_eq!(args.produce.mode, SendMode::Sync);
    }

    #[test]
    fn count_without_duration_has_no_time_limit() {
        let cli = Cli::try_parse_from([
            "loadgen", "e2e", "--count", "10k", "--rate", "20000", "--from", "latest",
        ])
        .unwrap();
        let Command::E2e(args) = cli.command else {
            panic!("not e2e")
        };
        assert_eq!(args.common.count, Some(10_000));
        assert_eq!(args.common.measured_duration(), None);
        assert_eq!(args.consume.from, Some(StartFrom::Latest));
        assert!(args.produce.validate().is_ok());
        let bad = ProduceOpts {
            batch: 4,
            mode: SendMode::Oneway,
            ..args.produce.clone()
        };
        assert!(bad.validate().is_err());
        assert!(Cli::try_parse_from(["loadgen", "produce", "--mode", "bogus"]).is_err());
    }
}

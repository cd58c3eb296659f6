//! Soak workloads that check their own outcome at the end of the run: transactions with check-back
//! (`transaction`), ordered consumption under queue locks (`orderly`) and retries into the dead-letter
//! queue (`retry_dlq`). Each runs paced sends for `--duration`, then waits at most `--settle` for the
//! broker to deliver everything, writes its verdict as JSON and exits non-zero when the verdict fails.

pub mod orderly;
pub mod retry_dlq;
pub mod transaction;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use client::pull::{pull_command, PullOptions};
use client::{ClientError, MessageQueue, NameServer, PullResult, PullStatus};
use protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel};
use protocol::body::{ProducerData, SubscriptionData};
use protocol::message::record::RecordView;
use remoting::Client;

use crate::duration_arg::parse_duration;

/// Options every workload has.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Name server address(es), `host:port;host:port`.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    #[arg(long)]
    pub topic: String,
    /// Queues the topic is created with before the run (UPDATE_AND_CREATE_TOPIC on every master).
    #[arg(long, default_value_t = 8)]
    pub create_queues: i32,
    /// Messages sent per second.
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,
    /// How long to send.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub duration: Duration,
    /// After the sends, how long at most to wait for the broker to deliver what the verdict expects.
    #[arg(long, value_parser = parse_duration, default_value = "180s")]
    pub settle: Duration,
    /// Request timeout.
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    pub timeout: Duration,
    /// Body bytes.
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Write the verdict as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl WorkloadArgs {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err("--rate must be positive".into());
        }
        if self.create_queues <= 0 {
            return Err("--create-queues must be positive".into());
        }
        Ok(())
    }
}

/// Runs `f` on a fresh glommio executor of this thread.
pub fn on_executor<F, Fut, R>(f: F) -> Result<R, String>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<R, String>>,
{
    let ex = glommio::LocalExecutorBuilder::default()
        .make()
        .map_err(|e| format!("cannot start executor: {e}"))?;
    ex.run(f())
}

/// Creates the topic with `args.create_queues` queues on every master and waits for its route.
pub async fn create_topic(ns: &NameServer, args: &WorkloadArgs) -> Result<(), String> {
    ns.create_topic(
        &args.topic,
        args.create_queues,
        None,
        Duration::from_secs(35),
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("cannot create topic {}: {e}", args.topic))
}

/// Paces a loop at a fixed rate: the n-th tick is due n / rate seconds after the start.
pub struct Pacer {
    start: Instant,
    rate: f64,
    ticks: u64,
}

impl Pacer {
    pub fn new(rate: f64) -> Pacer {
        Pacer {
            start: Instant::now(),
            rate,
            ticks: 0,
        }
    }

    /// Waits for the next tick (at once when behind).
    pub async fn tick(&mut self) {
        let due = self.start + Duration::from_secs_f64(self.ticks as f64 / self.rate);
        self.ticks += 1;
        let now = Instant::now();
        if due > now {
            glommio::timer::sleep(due - now).await;
        }
    }
}

/// The sequence number in a KEYS value `<prefix>-<seq>`.
pub fn seq_of(keys: Option<&str>, prefix: &str) -> Option<u64> {
    keys?
        .split(' ')
        .find_map(|k| k.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok())
}

/// A body of `size` bytes naming the message.
pub fn body(name: &str, size: usize) -> Vec<u8> {
    let mut b = name.as_bytes().to_vec();
    b.resize(size.max(b.len()), b'.');
    b
}

/// HEART_BEAT data of one client: a producer group and/or a push-style consumer group (consumed
/// passively, clustering) subscribed to `topics` with `*`.
pub fn heartbeat_data(
    client_id: &str,
    producer_group: Option<&str>,
    consumer_group: Option<(&str, &[String])>,
) -> HeartbeatData {
    let now = client::uniq_key::now_millis();
    HeartbeatData {
        client_id: client_id.to_owned(),
        producer_data_set: producer_group
            .map(|g| ProducerData {
                group_name: g.to_owned(),
            })
            .into_iter()
            .collect(),
        consumer_data_set: consumer_group
            .map(|(g, topics)| ConsumerData {
                group_name: g.to_owned(),
                consume_type: ConsumeType::ConsumePassively,
                message_model: MessageModel::Clustering,
                consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
                subscription_data_set: topics
                    .iter()
                    .map(|t| SubscriptionData {
                        topic: t.clone(),
                        sub_version: now,
                        ..SubscriptionData::default()
                    })
                    .collect(),
                unit_mode: false,
            })
            .into_iter()
            .collect(),
        ..HeartbeatData::default()
    }
}

/// A client id as the Java client forms it (`ip@instance`).
pub fn client_id(name: &str) -> String {
    format!("127.0.0.1@{name}-{}", std::process::id())
}

/// One pull of `queue` at `offset` on `client`, bounded by `timeout` (plus `suspend`).
pub async fn pull_once(
    client: &Client,
    group: &str,
    queue: &MessageQueue,
    offset: i64,
    suspend: Option<Duration>,
    timeout: Duration,
) -> Result<PullResult, ClientError> {
    let options = PullOptions {
        max_msg_nums: 32,
        suspend,
        ..PullOptions::default()
    };
    let cmd = pull_command(group, queue, offset, &options);
    PullResult::from_response(
        client
            .invoke(cmd, timeout + suspend.unwrap_or(Duration::ZERO))
            .await?,
    )
}

/// Reads every message of `queue` from offset 0 up to where pulls find nothing more, calling `f`
/// with each; an error when the queue cannot be read through.
pub async fn read_whole_queue(
    client: &Client,
    group: &str,
    queue: &MessageQueue,
    timeout: Duration,
    mut f: impl FnMut(&RecordView<'_>),
) -> Result<(), String> {
    let mut offset = 0;
    let mut failures = 0;
    loop {
        match pull_once(client, group, queue, offset, None, timeout).await {
            Ok(r) if r.status == PullStatus::Found => {
                for record in r.records() {
                    let view = record.map_err(|e| format!("bad record at {offset}: {e}"))?;
                    f(&view);
                }
                if r.next_begin_offset <= offset {
                    return Err(format!(
                        "pull at {offset} found records but did not advance"
                    ));
                }
                offset = r.next_begin_offset;
            }
            Ok(r) if r.status == PullStatus::OffsetIllegal && r.next_begin_offset > offset => {
                // Deleted by retention: start at the oldest stored.
                offset = r.next_begin_offset;
            }
            Ok(r) if r.status != PullStatus::OffsetIllegal => return Ok(()),
            other => {
                failures += 1;
                if failures > 10 {
                    let why = match other {
                        Ok(r) => format!("{:?} (next {})", r.status, r.next_begin_offset),
                        Err(e) => e.to_string(),
                    };
                    return Err(format!(
                        "{}/{} at {offset}: {why}",
                        queue.topic, queue.queue_id
                    ));
                }
                glommio::timer::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Writes `value` as pretty JSON to `path` when given.
pub fn write_json<T: serde::Serialize>(path: Option<&PathBuf>, value: &T) -> Result<(), String> {
    let Some(path) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Sleeps in short steps until `deadline` or until `done` says so; true when `done` did.
pub async fn wait_until(deadline: Instant, step: Duration, mut done: impl FnMut() -> bool) -> bool {
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        glommio::timer::sleep(step).await;
    }
}

/// Counts `error` under its label (a response code's name, "timeout", "connection", ...).
pub fn count_error(errors: &mut BTreeMap<String, u64>, error: &ClientError) {
    *errors
        .entry(crate::errors::ErrorKey::of(error).label())
        .or_default() += 1;
}

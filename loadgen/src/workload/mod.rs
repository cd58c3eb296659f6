//! Soak workloads that check their own outcome at the end of the run: transactions with check-back
//! (`transaction`), ordered consumption under queue locks (`orderly`) and retries into the dead-letter
//! queue (`retry_dlq`). Each runs paced sends for `--duration`, then waits at most `--settle` for the
//! broker to deliver everything, writes its verdict as JSON and exits non-zero when the verdict fails.

pub mod orderly;
pub mod retry_dlq;
pub mod setup;
pub mod transaction;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use client::pull::{pull_command, PullOptions};
use client::{BrokerConnections, ClientError, Message, MessageQueue, PullResult, PullStatus};
use protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel};
use protocol::body::{ProducerData, SubscriptionData};
use protocol::message::properties;
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

/// Numbered messages `<prefix>-<seq>` (the name is the KEYS and starts the body), paced at `--rate`
/// for `--duration`.
pub struct PacedMessages<'a> {
    args: &'a WorkloadArgs,
    prefix: &'static str,
    pacer: Pacer,
    end: Instant,
    seq: u64,
}

impl<'a> PacedMessages<'a> {
    pub fn new(args: &'a WorkloadArgs, prefix: &'static str) -> PacedMessages<'a> {
        PacedMessages {
            args,
            prefix,
            pacer: Pacer::new(args.rate),
            end: Instant::now() + args.duration,
            seq: 0,
        }
    }

    /// At its tick, the next message and its number; `None` once `--duration` is over.
    pub async fn next(&mut self) -> Option<(u64, Message)> {
        if Instant::now() >= self.end {
            return None;
        }
        self.pacer.tick().await;
        let seq = self.seq;
        self.seq += 1;
        let name = format!("{}-{seq}", self.prefix);
        let msg =
            Message::new(self.args.topic.clone(), body(&name, self.args.size)).with_keys(&name);
        Some((seq, msg))
    }
}

/// The sequence number in a KEYS value `<prefix>-<seq>`.
pub fn seq_of(keys: Option<&str>, prefix: &str) -> Option<u64> {
    keys?
        .split(' ')
        .find_map(|k| k.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok())
}

/// The sequence number in the KEYS of a record sent as `<prefix>-<seq>`.
pub fn record_seq(record: &RecordView<'_>, prefix: &str) -> Option<u64> {
    seq_of(properties::get(record.properties, properties::KEYS), prefix)
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

/// A long-polling pull (suspended 500 ms at most) of `queue` at `offset` over a connection of
/// `conns` to `addr`.
pub async fn long_pull(
    conns: &BrokerConnections,
    addr: &str,
    group: &str,
    queue: &MessageQueue,
    offset: i64,
    timeout: Duration,
) -> Result<PullResult, ClientError> {
    let conn = conns.get(addr).await?;
    let suspend = Some(Duration::from_millis(500));
    pull_once(&conn, group, queue, offset, suspend, timeout).await
}

/// Calls `f` with each record of `found` (a FOUND pull at `offset`) and returns where the next pull
/// starts: past them all, or at the first record that does not decode (counted in `undecodable`),
/// which is then pulled again.
pub fn each_record(
    found: &PullResult,
    offset: i64,
    undecodable: &Cell<u64>,
    mut f: impl FnMut(&RecordView<'_>),
) -> i64 {
    let mut resume = found.next_begin_offset;
    let mut last_good = None;
    for record in found.records() {
        let Ok(view) = record else {
            resume = last_good.map_or(offset, |o: i64| o + 1);
            undecodable.set(undecodable.get() + 1);
            break;
        };
        last_good = Some(view.queue_offset);
        f(&view);
    }
    resume.max(offset)
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use protocol::message::record::MessageRecord;

    /// A FOUND pull of records `x-<offset>` at `offsets`, then the bytes `tail`.
    fn found(offsets: &[i64], tail: &[u8]) -> PullResult {
        let mut body = Vec::new();
        for &o in offsets {
            MessageRecord {
                queue_offset: o,
                topic: "T".into(),
                properties: properties::encode([(properties::KEYS, format!("x-{o}"))]),
                ..MessageRecord::default()
            }
            .encode(&mut body)
            .unwrap();
        }
        body.extend_from_slice(tail);
        PullResult {
            status: PullStatus::Found,
            next_begin_offset: 20,
            min_offset: 0,
            max_offset: 20,
            suggest_which_broker_id: 0,
            body: Bytes::from(body),
        }
    }

    #[test]
    fn each_record_resumes_at_the_first_record_that_does_not_decode() {
        let undecodable = Cell::new(0);
        let mut seqs = Vec::new();
        let whole = found(&[10, 11, 12], &[]);
        let next = each_record(&whole, 10, &undecodable, |r| {
            seqs.push(record_seq(r, "x"));
        });
        assert_eq!((next, undecodable.get()), (20, 0));
        assert_eq!(seqs, [Some(10), Some(11), Some(12)]);
        // Torn after offset 11: the next pull starts at 12; torn at once: at the same offset.
        let torn = found(&[10, 11], &[0, 0, 0, 99, 1]);
        assert_eq!(each_record(&torn, 10, &undecodable, |_| {}), 12);
        assert_eq!(
            each_record(&found(&[], &[1, 2, 3]), 10, &undecodable, |_| {}),
            10
        );
        assert_eq!(undecodable.get(), 2);
    }

    #[test]
    fn paced_messages_are_numbered_from_zero_until_the_duration_is_over() {
        let args = WorkloadArgs {
            namesrv: String::new(),
            topic: "T".into(),
            create_queues: 1,
            rate: 1000.0,
            duration: Duration::from_millis(20),
            settle: Duration::ZERO,
            timeout: Duration::ZERO,
            size: 8,
            json: None,
        };
        let sent = on_executor(|| async {
            let mut messages = PacedMessages::new(&args, "p");
            let mut sent = Vec::new();
            while let Some((seq, msg)) = messages.next().await {
                sent.push((seq, msg));
            }
            Ok(sent)
        })
        .unwrap();
        assert!(sent.len() > 1, "{}", sent.len());
        for (i, (seq, msg)) in sent.iter().enumerate() {
            assert_eq!(*seq, i as u64);
            assert_eq!(msg.topic, "T");
            assert_eq!(msg.keys(), Some(format!("p-{i}").as_str()));
            assert!(msg.body.starts_with(format!("p-{i}").as_bytes()));
            assert_eq!(msg.body.len(), 8);
        }
    }
}

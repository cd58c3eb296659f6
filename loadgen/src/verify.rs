//! `loadgen verify`: reads every queue of a topic from its min to its max offset and checks that each
//! message listed in `--acked-log` files is stored with the same body (length and CRC). Prints counts
//! and bytes; fails when an acknowledged message is missing or different.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use client::pull::PullOptions;
use client::{BrokerConnections, MessageQueue, NameServer, PullConsumer, PullStatus};
use protocol::message::properties::{self, UNIQ_KEY};
use protocol::message::record::body_crc;
use serde::Serialize;

use crate::ack_log::parse_line;
use crate::duration_arg::parse_duration;

/// How often one offset is retried when the broker says "retry" or does not answer.
const MAX_RETRIES: u32 = 100;

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub namesrv: String,
    #[arg(long, default_value = "BenchmarkTest")]
    pub topic: String,
    /// Acknowledged-message logs written by `produce|e2e --acked-log` (repeatable).
    #[arg(long = "acked-log", required = true)]
    pub acked_logs: Vec<PathBuf>,
    #[arg(long, default_value = "loadgen_verify")]
    pub consumer_group: String,
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// What the check found.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct VerifyReport {
    pub acked: u64,
    pub acked_bytes: u64,
    /// Acknowledged messages read back with the same body.
    pub found: u64,
    pub found_bytes: u64,
    pub missing: u64,
    /// Acknowledged ids stored with another body length or CRC.
    pub mismatched: u64,
    /// Records read from the queues in all.
    pub stored: u64,
    /// Acknowledged ids stored more than once (a retried send: allowed, reported).
    pub duplicates: u64,
    /// Stored records no log lists (sends that failed or timed out on the client but were stored).
    pub unacknowledged_stored: u64,
    /// Malformed log lines.
    pub bad_lines: u64,
    /// Queue ranges that could not be read: "broker/queue offset code".
    pub unreadable: Vec<String>,
    /// A few missing ids, to look for.
    pub missing_examples: Vec<String>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.missing == 0 && self.mismatched == 0 && self.bad_lines == 0 && self.found == self.acked
    }
}

struct Expected {
    len: u32,
    crc: u32,
    seen: u32,
}

fn load(paths: &[PathBuf], report: &mut VerifyReport) -> Result<HashMap<String, Expected>, String> {
    let mut expected = HashMap::new();
    for path in paths {
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| format!("reading {}: {e}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let Some(e) = parse_line(&line) else {
                report.bad_lines += 1;
                continue;
            };
            // A msgId acknowledged twice (cannot happen with fresh UNIQ_KEYs) counts once.
            if expected
                .insert(
                    e.msg_id,
                    Expected {
                        len: e.body_len,
                        crc: e.body_crc,
                        seen: 0,
                    },
                )
                .is_none()
            {
                report.acked += 1;
                report.acked_bytes += u64::from(e.body_len);
            }
        }
    }
    Ok(expected)
}

async fn read_queue(
    consumer: &PullConsumer,
    queue: &MessageQueue,
    timeout: Duration,
    expected: &mut HashMap<String, Expected>,
    report: &mut VerifyReport,
) -> Result<(), String> {
    let what = format!("{}/{}", queue.broker_name, queue.queue_id);
    let min = consumer
        .min_offset(queue)
        .await
        .map_err(|e| format!("min offset of {what}: {e}"))?;
    let max = consumer
        .max_offset(queue)
        .await
        .map_err(|e| format!("max offset of {what}: {e}"))?;
    let options = PullOptions {
        max_msg_nums: 32,
        suspend: None,
        ..PullOptions::default()
    };
    let mut offset = min;
    let mut retries = 0;
    while offset < max {
        let pulled = futures_lite::future::or(
            async { Some(consumer.pull(queue, offset, &options).await) },
            async {
                glommio::timer::sleep(timeout).await;
                None
            },
        )
        .await;
        let result = match pulled {
            Some(Ok(r)) if r.status == PullStatus::Found => r,
            other => {
                retries += 1;
                if retries > MAX_RETRIES {
                    let why = match other {
                        Some(Ok(r)) => format!("{:?} (next {})", r.status, r.next_begin_offset),
                        Some(Err(e)) => e.to_string(),
                        None => "timed out".into(),
                    };
                    report
                        .unreadable
                        .push(format!("{what} offsets {offset}..{max}: {why}"));
                    return Ok(());
                }
                glommio::timer::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        retries = 0;
        let mut count = 0;
        for record in result.records() {
            let view = record.map_err(|e| format!("bad record in {what} at {offset}: {e}"))?;
            count += 1;
            report.stored += 1;
            let id = properties::get(view.properties, UNIQ_KEY).unwrap_or("");
            match expected.get_mut(id) {
                Some(exp) => {
                    exp.seen += 1;
                    if exp.seen > 1 {
                        report.duplicates += 1;
                    } else if view.body.len() as u64 == u64::from(exp.len)
                        && body_crc(view.body) as u32 == exp.crc
                    {
                        report.found += 1;
                        report.found_bytes += view.body.len() as u64;
                    } else {
                        report.mismatched += 1;
                    }
                }
                None => report.unacknowledged_stored += 1,
            }
        }
        if count == 0 || result.next_begin_offset <= offset {
            report
                .unreadable
                .push(format!("{what} offset {offset}: FOUND without records"));
            return Ok(());
        }
        offset = result.next_begin_offset;
    }
    Ok(())
}

/// Runs the check (on its own glommio executor) and prints the report.
pub fn run(args: VerifyArgs) -> Result<VerifyReport, String> {
    let mut report = VerifyReport::default();
    let mut expected = load(&args.acked_logs, &mut report)?;
    let ex = glommio::LocalExecutorBuilder::default()
        .make()
        .map_err(|e| e.to_string())?;
    let topic = args.topic.clone();
    let read = ex.run(async {
        let ns = NameServer::from_list(&args.namesrv, args.timeout).map_err(|e| e.to_string())?;
        let consumer = PullConsumer::new(
            &args.consumer_group,
            ns,
            BrokerConnections::new(1, args.timeout),
            args.timeout,
        );
        let queues = consumer
            .queues(&topic)
            .await
            .map_err(|e| format!("queues of {topic}: {e}"))?;
        for queue in &queues {
            read_queue(&consumer, queue, args.timeout, &mut expected, &mut report).await?;
        }
        Ok::<usize, String>(queues.len())
    })?;
    for (id, exp) in &expected {
        if exp.seen == 0 {
            report.missing += 1;
            if report.missing_examples.len() < 10 {
                report.missing_examples.push(id.clone());
            }
        }
    }
    println!(
        "verify {topic} ({read} queues): acknowledged {} msgs / {} B; read back {} msgs / {} B; missing {}; mismatched {}; \
         duplicates {}; stored without ack {}; stored in all {}; bad log lines {}",
        report.acked,
        report.acked_bytes,
        report.found,
        report.found_bytes,
        report.missing,
        report.mismatched,
        report.duplicates,
        report.unacknowledged_stored,
        report.stored,
        report.bad_lines
    );
    for u in &report.unreadable {
        println!("unreadable: {u}");
    }
    if !report.missing_examples.is_empty() {
        println!("missing e.g.: {}", report.missing_examples.join(" "));
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(report)
}

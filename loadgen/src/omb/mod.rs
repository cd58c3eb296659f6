//! `loadgen omb --workload FILE.yaml`: runs an OpenMessaging Benchmark workload file (its own YAML
//! format, see `workload`) against a RocketMQ name server with loadgen's producers and consumers,
//! and reports as OMB does (`result`): a line per period and a result file with OMB's field names.
//! Topics get partitionsPerTopic queues in all, each subscription is a consumer group, producers share
//! producerRate, and consumerBacklogSizeGB runs OMB's build-then-drain backlog phase (`phases`).

pub mod args;
pub mod bodies;
pub mod collector;
pub mod executor;
pub mod phases;
pub mod result;
pub mod topics;
pub mod workload;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use glommio::LocalExecutorBuilder;
use serde_json::{json, Value};

use crate::aggregate::Aggregator;
use crate::executor::{Event, StartGate};
use crate::payload::unix_micros;
use crate::report::Printer;
use crate::run::placement;
pub use args::OmbArgs;
use args::SAMPLE;
use collector::Collector;
use executor::{Assignment, ConsumerUnit, Control, ProducerUnit, Shared};
use phases::{Action, Phases};
use result::Meta;
use workload::Workload;

const DRIVER: &str = "loadgen (RocketMQ remoting)";

/// Deals the workload's producers and consumers out to `threads` executors.
pub fn assign(w: &Workload, prefix: &str, inflight: usize, threads: usize) -> Vec<Assignment> {
    let mut out = vec![Assignment::default(); threads.max(1)];
    let producers = w.topics as usize * w.producers_per_topic as usize;
    let rate = w.producer_rate / producers.max(1) as f64;
    let each_inflight = (inflight / producers.max(1)).max(1);
    let (mut p, mut c) = (0usize, 0usize);
    for t in 0..w.topics {
        let topic = format!("{prefix}-{t}");
        for _ in 0..w.producers_per_topic {
            if let Some(a) = out.get_mut(p % threads.max(1)) {
                a.producers.push(ProducerUnit {
                    topic: topic.clone(),
                    rate,
                    inflight: each_inflight,
                });
            }
            p += 1;
        }
        for s in 0..w.subscriptions_per_topic {
            for index in 0..w.consumer_per_subscription {
                if let Some(a) = out.get_mut(c % threads.max(1)) {
                    a.consumers.push(ConsumerUnit {
                        topic: topic.clone(),
                        group: format!("{prefix}-sub-{s}"),
                        index,
                        of: w.consumer_per_subscription,
                    });
                }
                c += 1;
            }
        }
    }
    out
}

/// Runs the workload file of `args` to its end; returns the result (also written with `--json`).
pub fn run(args: OmbArgs, command: String) -> Result<Value, String> {
    args.validate()?;
    let mut w = workload::load(&args.workload)?;
    if let Some(d) = args.test_duration {
        w.test_duration = d;
    }
    if let Some(d) = args.warmup {
        w.warmup = d;
    }
    if w.test_duration.is_zero() {
        return Err(
            "testDurationMinutes is 0 or missing: nothing to measure (or give --test-duration)"
                .into(),
        );
    }
    let backlog_bytes = args
        .backlog_bytes
        .unwrap_or_else(|| w.consumer_backlog_size_gb.saturating_mul(1 << 30));
    if backlog_bytes > 0 && w.subscriptions_per_topic.min(w.consumer_per_subscription) == 0 {
        return Err("a backlog needs consumers to drain it (subscriptionsPerTopic and consumerPerSubscription at least 1)".into());
    }
    let bodies = bodies::bodies(&w, &args.workload)?;
    let prefix = args
        .topic_prefix
        .clone()
        .unwrap_or_else(|| format!("omb-{}", unix_micros() / 1_000_000));
    let topics: Vec<String> = (0..w.topics).map(|t| format!("{prefix}-{t}")).collect();
    if !args.existing_topics {
        topics::create(&args.namesrv, args.timeout, &topics, w.partitions_per_topic)?;
    }
    let threads = args.threads;
    let shared = Arc::new(Shared {
        namesrv: args.namesrv.clone(),
        timeout: args.timeout,
        message_size: w.message_size,
        bodies,
        sample: SAMPLE,
        pull_batch: args.pull_batch,
        long_poll: args.long_poll,
        producer_group: format!("{prefix}-producer"),
        partitions: w.partitions_per_topic,
        control: Control::default(),
    });
    let mut phases = Phases::new(
        w.warmup,
        w.test_duration,
        u64::from(w.subscriptions_per_topic),
        w.message_size as u64,
        backlog_bytes,
        args.backlog_limit,
    );
    shared
        .control
        .paused
        .store(phases.starts_paused(), Ordering::Release);
    let gate = Arc::new(StartGate::new(threads, None));
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for (index, work) in assign(&w, &prefix, args.inflight, threads)
        .into_iter()
        .enumerate()
    {
        let (shared, gate, tx) = (shared.clone(), gate.clone(), tx.clone());
        let spawned = LocalExecutorBuilder::new(placement(args.first_cpu, index))
            .name(&format!("loadgen-omb-{index}"))
            .spawn(move || executor::run(index, shared, work, gate, tx));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                eprintln!("loadgen: cannot start executor {index}: {e}");
                std::process::exit(2);
            }
        }
    }
    drop(tx);
    let mut printer = Printer::new();
    printer.line(&format!(
        "workload \"{}\": {} topic(s) x {} partitions, {} B messages, {} producer(s)/topic at {} msg/s in all, {} subscription(s) x {} consumer(s)/topic; warm-up {:.0}s, test {:.0}s{}",
        w.name,
        w.topics,
        w.partitions_per_topic,
        w.message_size,
        w.producers_per_topic,
        if w.producer_rate > 0.0 { format!("{}", w.producer_rate) } else { "max".into() },
        w.subscriptions_per_topic,
        w.consumer_per_subscription,
        w.warmup.as_secs_f64(),
        w.test_duration.as_secs_f64(),
        if backlog_bytes > 0 { format!(", backlog {backlog_bytes} bytes") } else { String::new() }
    ));
    let mut run = Collector::new(!phases.measuring());
    let mut failures = Vec::new();
    let mut gave_up = None;
    let mut aggregator = Aggregator::new(threads);
    loop {
        let completed = match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(Event::Report(report)) => aggregator.push(*report),
            Ok(Event::Failed { executor, error }) => {
                failures.push(format!("executor {executor}: {error}"));
                shared.control.stop.store(true, Ordering::Release);
                aggregator.give_up(executor)
            }
            Err(RecvTimeoutError::Timeout) => Vec::new(),
            Err(RecvTimeoutError::Disconnected) => break,
        };
        for interval in completed {
            let measuring = phases.measuring();
            run.add(&interval.snapshot, measuring);
            let actions = if shared.control.stop.load(Ordering::Acquire) {
                Vec::new()
            } else {
                phases.on_sample(interval.end, run.sent, run.received)
            };
            let mut flush = interval.end.saturating_sub(run.period_start) >= args.interval;
            let mut notes = Vec::new();
            for action in actions {
                match action {
                    Action::WarmupDone => {
                        flush = true;
                        notes.push("----- warm-up done, the test begins -----".to_owned());
                    }
                    Action::PauseConsumers => {
                        shared.control.paused.store(true, Ordering::Release);
                        notes.push("--- consumers paused to build the backlog ---".to_owned());
                    }
                    Action::ResumeConsumers => {
                        shared.control.paused.store(false, Ordering::Release);
                        notes.push(format!(
                            "--- backlog built in {:.1} s; draining ---",
                            phases.backlog.build_s.unwrap_or(0.0)
                        ));
                    }
                    Action::DrainDone => notes.push(format!(
                        "--- backlog drained in {:.1} s ---",
                        phases.backlog.drain_s.unwrap_or(0.0)
                    )),
                    Action::Stop => {
                        // The test's last period ends here, whatever its length.
                        flush = true;
                        shared.control.stop.store(true, Ordering::Release);
                    }
                    Action::GiveUp(why) => {
                        flush = true;
                        gave_up = Some(why);
                        shared.control.stop.store(true, Ordering::Release);
                    }
                }
            }
            if flush {
                let backlog = phases.backlog_of(run.sent, run.received);
                let line = run.flush(interval.end, backlog, !phases.measuring());
                printer.line(&line);
            }
            for note in notes {
                printer.line(&note);
            }
        }
    }
    printer.finish();
    for handle in handles {
        if let Err(e) = handle.join() {
            failures.push(format!("executor thread: {e}"));
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    for line in result::aggregated_lines(&run.test) {
        printer.line(&line);
    }
    let extra = extra_json(&args, &w, &run, &phases, &command, gave_up.as_deref());
    let meta = Meta {
        workload: &w.name,
        driver: DRIVER,
        message_size: w.message_size,
        topics: w.topics,
        partitions: w.partitions_per_topic,
        producers_per_topic: w.producers_per_topic,
        consumers_per_topic: w.consumer_per_subscription,
    };
    let value = result::test_result(&meta, &run.periods, &run.test, extra);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    match gave_up {
        Some(why) => Err(format!("backlog phase failed: {why}")),
        None => Ok(value),
    }
}

/// loadgen's own figures beside OMB's fields.
fn extra_json(
    args: &OmbArgs,
    w: &Workload,
    run: &Collector,
    phases: &Phases,
    command: &str,
    gave_up: Option<&str>,
) -> Value {
    let test_s = run.test_seconds;
    let mut extra = json!({
        "command": command,
        "namesrv": args.namesrv,
        "threads": args.threads,
        "warmupSeconds": w.warmup.as_secs_f64(),
        "testSeconds": test_s,
        "producerRate": w.producer_rate,
        "publishedMessages": run.test.send.ok_msgs,
        "publishFailed": run.test.send.send_failed.saturating_add(run.test.send.response_failed),
        "publishErrors": run.test.send.errors.summary(),
        "consumedMessages": run.test.consume.msgs,
        "pullFailed": run.test.consume.pull_failed,
        "publishRateAvg": crate::stats::per_second(run.test.send.ok_msgs, Duration::from_secs_f64(test_s)),
        "consumeRateAvg": crate::stats::per_second(run.test.consume.msgs, Duration::from_secs_f64(test_s)),
    });
    if phases.backlog.requested_bytes > 0 {
        let b = &phases.backlog;
        let drain_rate = match (b.drained_messages, b.drain_s) {
            (Some(n), Some(s)) if s > 0.0 => Some(n as f64 / s),
            _ => None,
        };
        extra["backlogDrain"] = json!({
            "requestedBytes": b.requested_bytes,
            "buildSeconds": b.build_s,
            "backlogAtDrainStart": b.backlog_at_drain_start,
            "drainSeconds": b.drain_s,
            "drainedMessages": b.drained_messages,
            "drainRate": drain_rate,
            "drainMBps": drain_rate.map(|r| r * w.message_size as f64 / 1_048_576.0),
            "failed": gave_up,
        });
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Workload {
        workload::parse(text, "t").unwrap()
    }

    const W: &str = "topics: 2\npartitionsPerTopic: 4\nmessageSize: 64\nsubscriptionsPerTopic: 2\n\
                     consumerPerSubscription: 3\nproducersPerTopic: 2\nproducerRate: 1000\n\
                     testDurationMinutes: 1\n";

    #[test]
    fn units_are_dealt_out_with_their_share_of_the_rate() {
        let w = workload(W);
        let a = assign(&w, "p", 100, 3);
        let producers: Vec<_> = a.iter().flat_map(|x| x.producers.clone()).collect();
        let consumers: Vec<_> = a.iter().flat_map(|x| x.consumers.clone()).collect();
        assert_eq!(producers.len(), 4);
        assert!(producers
            .iter()
            .all(|p| p.rate == 250.0 && p.inflight == 25));
        assert_eq!(consumers.len(), 2 * 2 * 3);
        assert_eq!(
            a.iter().map(|x| x.producers.len()).collect::<Vec<_>>(),
            [2, 1, 1]
        );
        assert!(consumers
            .iter()
            .any(|c| c.topic == "p-1" && c.group == "p-sub-1" && c.index == 2 && c.of == 3));
    }
}

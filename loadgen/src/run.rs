//! Runs a load: starts the executors (one thread each), prints their merged interval lines as they
//! complete, then the summary and the JSON file.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use glommio::{LocalExecutorBuilder, Placement};

use crate::aggregate::Aggregator;
use crate::executor::{self, Event, RunSpec, StartGate};
use crate::report::{interval_lines, summary_json, summary_text, Printer, Sides, SummaryInput};

/// How often the progress line is redrawn on a terminal.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The outcome of a run, for callers that want the figures.
pub struct Outcome {
    pub json: serde_json::Value,
}

pub fn placement(first_cpu: Option<usize>, index: usize) -> Placement {
    match first_cpu {
        Some(cpu) => Placement::Fixed(cpu.saturating_add(index)),
        None => Placement::Unbound,
    }
}

/// Runs `spec` to its end. Errors: bad options, or an executor that could not set up (no route...).
pub fn run(sides: Sides, spec: RunSpec, command: String) -> Result<Outcome, String> {
    spec.common.validate()?;
    if let Some(p) = &spec.produce {
        p.validate()?;
    }
    if let Some(path) = spec.produce.as_ref().and_then(|p| p.acked_log.as_ref()) {
        crate::ack_log::truncate(path)?;
    }
    if let Some(queues) = spec.common.create_queues {
        crate::topic_setup::create_topic(
            spec.common.namesrv.clone(),
            spec.common.topic.clone(),
            spec.common.timeout,
            queues,
        )?;
    }
    let threads = spec.common.threads;
    let consume_count = if sides == Sides::Consume {
        spec.common.count
    } else {
        None
    };
    let gate = Arc::new(StartGate::new(threads, consume_count));
    let spec = Arc::new(spec);
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        let (spec, gate, tx) = (spec.clone(), gate.clone(), tx.clone());
        let spawned = LocalExecutorBuilder::new(placement(spec.common.first_cpu, index))
            .name(&format!("loadgen-{index}"))
            .spawn(move || executor::run(index, spec, gate, tx));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                // The started executors wait for all of them at the start barrier: leave at once.
                eprintln!("loadgen: cannot start executor {index}: {e}");
                std::process::exit(2);
            }
        }
    }
    drop(tx);

    let mut aggregator = Aggregator::new(threads);
    let mut printer = Printer::new();
    let mut failures = Vec::new();
    let began = Instant::now();
    let planned = spec
        .common
        .measured_duration()
        .map(|m| m + spec.common.warmup);
    loop {
        let completed = match rx.recv_timeout(PROGRESS_EVERY) {
            Ok(Event::Report(report)) => aggregator.push(*report),
            Ok(Event::Failed { executor, error }) => {
                failures.push(format!("executor {executor}: {error}"));
                aggregator.give_up(executor)
            }
            Err(RecvTimeoutError::Timeout) => {
                let total =
                    planned.map_or_else(String::new, |p| format!(" / {:.0}s", p.as_secs_f64()));
                let sent = aggregator.all.send.ok_msgs;
                let consumed = aggregator.all.consume.msgs;
                printer.progress(&format!(
                    "[{:.1}s{total}] sent {sent} consumed {consumed}",
                    began.elapsed().as_secs_f64()
                ));
                Vec::new()
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        for interval in completed {
            for line in interval_lines(sides, &interval) {
                printer.line(&line);
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

    // In e2e the consumers drain after the producers stop: rates are over the producing time.
    let end = match (sides, aggregator.producers_done) {
        (Sides::Both, Some(done)) => done,
        _ => aggregator.end,
    };
    let measured = end.saturating_sub(spec.common.warmup);
    let input = SummaryInput {
        sides,
        command: &command,
        threads,
        warmup: spec.common.warmup,
        measured,
        send: &aggregator.measured.send,
        consume: &aggregator.measured.consume,
        send_all: &aggregator.all.send,
        consume_all: &aggregator.all.consume,
    };
    for line in summary_text(&input) {
        printer.line(&line);
    }
    let json = summary_json(&input);
    if let Some(path) = &spec.common.json {
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(Outcome { json })
}

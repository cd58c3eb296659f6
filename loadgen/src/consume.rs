//! The consuming side of one executor: one puller per assigned queue, counting messages, bytes and
//! end-to-end latency (from the body's send stamp, else the born timestamp), and tracking backlog.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::pull::PullOptions;
use client::{ClientError, MessageQueue, PullConsumer, PullStatus};
use futures_lite::FutureExt;

use crate::cli::StartFrom;
use crate::errors::ErrorKey;
use crate::payload::{stamp_of, unix_micros};
use crate::recorder::{Recorder, StopRule};

/// After a failed pull, wait this long before the next one.
const FAILURE_PAUSE: Duration = Duration::from_millis(10);
/// How often a waiting pull checks whether the run has ended.
const STOP_CHECK: Duration = Duration::from_millis(10);

pub struct ConsumeCtx {
    pub consumer: Rc<PullConsumer>,
    pub options: PullOptions,
    pub stop: StopRule,
    pub recorder: Rc<Recorder>,
    /// e2e only: producers still running on all executors, and how long to drain after they stop.
    pub producers_running: Option<Arc<AtomicUsize>>,
    pub drain: Duration,
    pub commit: bool,
    /// While set, no pull starts (`loadgen omb` builds a backlog this way).
    pub paused: Option<Arc<AtomicBool>>,
}

/// Where each queue starts.
pub async fn start_offsets(
    consumer: &PullConsumer,
    queues: &[MessageQueue],
    from: StartFrom,
) -> Result<Vec<i64>, ClientError> {
    let mut offsets = Vec::with_capacity(queues.len());
    for queue in queues {
        let offset = match from {
            StartFrom::Earliest => consumer.min_offset(queue).await?,
            StartFrom::Latest => consumer.max_offset(queue).await?,
            StartFrom::Committed => match consumer.committed_offset(queue).await? {
                Some(offset) if offset >= 0 => offset,
                _ => consumer.min_offset(queue).await?,
            },
        };
        offsets.push(offset);
    }
    Ok(offsets)
}

/// End-to-end latency of a message consumed now.
fn e2e_latency(body: &[u8], born_ms: i64, now_us: u64) -> Duration {
    match stamp_of(body) {
        Some(stamp) => Duration::from_micros(now_us.saturating_sub(stamp)),
        None => {
            let born_us = u64::try_from(born_ms).unwrap_or(0).saturating_mul(1000);
            Duration::from_micros(now_us.saturating_sub(born_us))
        }
    }
}

/// Runs one puller per queue until the stop rule (or, in e2e, the drain) ends them.
pub async fn run(ctx: Rc<ConsumeCtx>, queues: Vec<MessageQueue>, offsets: Vec<i64>) {
    let pullers: Vec<_> = queues
        .into_iter()
        .zip(offsets)
        .map(|(queue, offset)| glommio::spawn_local(pull_queue(ctx.clone(), queue, offset)))
        .collect();
    for puller in pullers {
        puller.await;
    }
}

/// e2e only: once every producer has stopped, the moment this puller first noticed it.
fn producers_stopped_at(ctx: &ConsumeCtx, seen: &mut Option<Instant>) -> Option<Instant> {
    let running = ctx.producers_running.as_ref()?;
    if running.load(Ordering::Acquire) > 0 {
        return None;
    }
    Some(*seen.get_or_insert_with(Instant::now))
}

async fn pull_queue(ctx: Rc<ConsumeCtx>, queue: MessageQueue, mut offset: i64) {
    let slot = ctx.recorder.backlog_slot();
    let mut producers_stopped = None;
    loop {
        let stopped = producers_stopped_at(&ctx, &mut producers_stopped);
        if ctx.stop.is_over() || stopped.is_some_and(|at| at.elapsed() >= ctx.drain) {
            break;
        }
        if ctx
            .paused
            .as_ref()
            .is_some_and(|p| p.load(Ordering::Acquire))
        {
            glommio::timer::sleep(STOP_CHECK).await;
            continue;
        }
        let began = Instant::now();
        let pull = ctx.consumer.pull(&queue, offset, &ctx.options);
        // A long poll must not hold the run past its end, its count, or the drain.
        let drain_end = stopped.map(|at| at + ctx.drain);
        let outcome = async { Some(pull.await) }
            .or(async {
                loop {
                    glommio::timer::sleep(STOP_CHECK).await;
                    if ctx.stop.is_over() || drain_end.is_some_and(|end| Instant::now() >= end) {
                        return None;
                    }
                }
            })
            .await;
        let Some(result) = outcome else {
            break;
        };
        match result {
            Ok(result) => {
                let backlog = result.max_offset.saturating_sub(result.next_begin_offset);
                ctx.recorder.set_backlog(slot, backlog);
                if result.status == PullStatus::Found {
                    count_records(&ctx, &result);
                } else if result.status == PullStatus::NoNewMessage
                    && began.elapsed() < Duration::from_millis(1)
                {
                    // The broker did not hold the pull: don't spin.
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }
                offset = result.next_begin_offset;
                // Drained: a pull that began after every producer stopped found nothing left.
                if stopped.is_some_and(|at| began >= at) && backlog <= 0 {
                    break;
                }
            }
            Err(e) => {
                ctx.recorder
                    .with(|s| s.consume.record_error(ErrorKey::of(&e)));
                glommio::timer::sleep(FAILURE_PAUSE).await;
            }
        }
    }
    if ctx.commit {
        if let Err(e) = ctx.consumer.commit_offset(&queue, offset, false).await {
            tracing::warn!("cannot commit offset {offset} of {queue:?}: {e}");
        }
    }
}

fn count_records(ctx: &ConsumeCtx, result: &client::PullResult) {
    let now_us = unix_micros();
    ctx.recorder.with(|s| {
        for record in result.records() {
            let view = match record {
                Ok(view) => view,
                Err(_) => {
                    s.consume.record_error(ErrorKey::Local("decode"));
                    break;
                }
            };
            // Counted runs stop at exactly their count.
            if ctx.stop.take(1) == 0 {
                break;
            }
            s.consume.msgs += 1;
            s.consume.bytes += view.body.len() as u64;
            s.consume
                .e2e
                .record(e2e_latency(view.body, view.born_timestamp, now_us));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2e_latency_prefers_the_stamp() {
        let mut body = b"LGT1".to_vec();
        body.extend_from_slice(&1_000_000u64.to_be_bytes());
        assert_eq!(e2e_latency(&body, 0, 1_000_250), Duration::from_micros(250));
        assert_eq!(
            e2e_latency(b"plain", 1_000, 1_500_000),
            Duration::from_micros(500_000)
        );
        // A clock step backwards gives 0, not a panic.
        assert_eq!(e2e_latency(&body, 0, 10), Duration::ZERO);
        assert_eq!(e2e_latency(b"plain", -5, 10), Duration::from_micros(10));
    }
}

//! The producing side of one executor: closed-loop sync workers, an async dispatcher with N in
//! flight, oneway senders, or an open-loop pacer at a fixed rate (RT from the intended send time).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use client::producer::AsyncSender;
use client::{ClientError, Message, Producer};
use glommio::sync::Semaphore;

use crate::ack_log::AckLog;
use crate::cli::SendMode;
use crate::errors::ErrorKey;
use crate::pacing::Pacer;
use crate::payload::{unix_micros, PayloadMaker};
use crate::recorder::{Recorder, StopRule};

/// After a failure without a response (connection lost...), pause this long so a dead broker does
/// not turn loadgen into a busy loop of instant failures.
const LOCAL_FAILURE_PAUSE: Duration = Duration::from_millis(10);

/// What this executor's producers do.
pub struct ProducePlan {
    pub mode: SendMode,
    /// Requests outstanding at once on this executor.
    pub inflight: usize,
    pub batch: usize,
    /// Messages per second on this executor; 0 = closed loop.
    pub rate: f64,
    /// Open loop as OMB measures it: latency and the body's stamp from the actual send, the lateness
    /// after the intended time recorded apart (`SendStats::delay`); otherwise both count from the
    /// intended time.
    pub from_send_start: bool,
}

/// Everything the producing tasks share.
pub struct ProduceCtx {
    pub producer: Rc<Producer>,
    pub plan: ProducePlan,
    pub stop: StopRule,
    pub recorder: Rc<Recorder>,
    pub maker: RefCell<PayloadMaker>,
    /// `--acked-log`: where acknowledged messages are listed.
    pub acks: Option<AckLog>,
}

fn body_bytes(msgs: &[Message]) -> u64 {
    msgs.iter().map(|m| m.body.len() as u64).sum()
}

async fn send_once(ctx: &ProduceCtx, msgs: &[Message]) -> Result<(), ClientError> {
    let acked = match (ctx.plan.mode, msgs) {
        (SendMode::Oneway, [msg]) => return ctx.producer.send_oneway(msg).await.map(|_| ()),
        (_, [msg]) if ctx.plan.batch == 1 => ctx.producer.send(msg).await?,
        _ => ctx.producer.send_batch(msgs).await?,
    };
    ctx.log_acked(&acked, msgs);
    Ok(())
}

impl ProduceCtx {
    fn log_acked(&self, acked: &client::SendResult, msgs: &[Message]) {
        if let Some(log) = &self.acks {
            log.record(acked, msgs);
        }
    }
}

async fn pause_after(key: Option<ErrorKey>) {
    if key.is_some_and(|k| !k.is_response()) {
        glommio::timer::sleep(LOCAL_FAILURE_PAUSE).await;
    }
}

/// Runs this executor's producers until the stop rule ends them and every send has finished.
pub async fn run(ctx: Rc<ProduceCtx>, start: Instant) {
    if ctx.plan.rate > 0.0 {
        open_loop(ctx.clone(), start).await;
    } else if ctx.plan.mode == SendMode::Async {
        async_dispatch(ctx.clone()).await;
    } else {
        closed_loop(ctx.clone()).await;
    }
    if let Some(log) = &ctx.acks {
        log.flush();
    }
}

/// `inflight` workers, each sending and waiting for the answer (oneway: for the hand-over).
async fn closed_loop(ctx: Rc<ProduceCtx>) {
    let workers: Vec<_> = (0..ctx.plan.inflight.max(1))
        .map(|_| {
            let ctx = ctx.clone();
            glommio::spawn_local(async move {
                loop {
                    let n = ctx.stop.take(ctx.plan.batch as u64);
                    if n == 0 {
                        break;
                    }
                    let msgs = ctx.maker.borrow_mut().messages(n as usize);
                    let bytes = body_bytes(&msgs);
                    let began = Instant::now();
                    let result = send_once(&ctx, &msgs).await;
                    let failed = ctx.recorder.record_send(result, n, bytes, began.elapsed());
                    pause_after(failed).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await;
    }
}

/// One dispatcher starting sends as long as fewer than `inflight` are outstanding.
async fn async_dispatch(ctx: Rc<ProduceCtx>) {
    let sender = AsyncSender::new(ctx.producer.clone(), ctx.plan.inflight);
    loop {
        let n = ctx.stop.take(ctx.plan.batch as u64);
        if n == 0 {
            break;
        }
        let mut msgs = ctx.maker.borrow_mut().messages(n as usize);
        let bytes = body_bytes(&msgs);
        let logged = ctx.clone();
        let sent = ctx.acks.as_ref().map(|_| msgs.clone());
        let done = move |result: Result<client::SendResult, ClientError>, started: Instant| {
            if let (Ok(acked), Some(sent)) = (&result, &sent) {
                logged.log_acked(acked, sent);
            }
            logged
                .recorder
                .record_send(result.map(|_| ()), n, bytes, started.elapsed());
        };
        let started = if ctx.plan.batch > 1 {
            sender.send_batch(msgs, done).await
        } else {
            match msgs.pop() {
                Some(msg) => sender.send(msg, done).await,
                None => Ok(()),
            }
        };
        if let Err(e) = started {
            ctx.recorder.record_send(Err(e), n, bytes, Duration::ZERO);
            break;
        }
        // Let the spawned sends and the connection tasks run between dispatches.
        glommio::yield_if_needed().await;
    }
    sender.flush().await;
}

/// Requests at fixed intended times; a late request's RT includes its lateness.
async fn open_loop(ctx: Rc<ProduceCtx>, start: Instant) {
    let inflight = ctx.plan.inflight.max(1) as u64;
    let permits = Rc::new(Semaphore::new(inflight));
    let requests_per_sec = ctx.plan.rate / ctx.plan.batch.max(1) as f64;
    let mut pacer = Pacer::new(start, requests_per_sec);
    // Maps the monotonic intended times onto the wall clock the body stamps use.
    let (base_instant, base_unix) = (Instant::now(), unix_micros());
    let unix_at = move |at: Instant| -> u64 {
        if at >= base_instant {
            base_unix
                .saturating_add(u64::try_from((at - base_instant).as_micros()).unwrap_or(u64::MAX))
        } else {
            base_unix
                .saturating_sub(u64::try_from((base_instant - at).as_micros()).unwrap_or(u64::MAX))
        }
    };
    loop {
        let (_, intended) = pacer.next_ticket();
        let now = Instant::now();
        if intended > now {
            glommio::timer::sleep(intended - now).await;
        }
        let n = ctx.stop.take(ctx.plan.batch as u64);
        if n == 0 {
            break;
        }
        let Ok(permit) = permits.acquire_static_permit(1).await else {
            break;
        };
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            let began = Instant::now();
            let stamp = if ctx.plan.from_send_start {
                unix_micros()
            } else {
                unix_at(intended)
            };
            let msgs = ctx.maker.borrow_mut().messages_stamped(n as usize, stamp);
            let bytes = body_bytes(&msgs);
            let result = send_once(&ctx, &msgs).await;
            if ctx.plan.from_send_start {
                ctx.recorder.record_send(result, n, bytes, began.elapsed());
                let late = began.saturating_duration_since(intended);
                ctx.recorder.with(|s| s.send.delay.record(late));
            } else {
                ctx.recorder
                    .record_send(result, n, bytes, intended.elapsed());
            }
            drop(permit);
        })
        .detach();
    }
    // Requests that were due before the end but never left (the last ticket drawn was not sent).
    if let (Some(deadline), false) = (ctx.stop.deadline(), ctx.stop.budget_spent()) {
        let window = deadline.saturating_duration_since(start).as_secs_f64();
        let due = (window * requests_per_sec).ceil() as u64;
        let sent = pacer.issued().saturating_sub(1);
        let missed = due
            .saturating_sub(sent)
            .saturating_mul(ctx.plan.batch as u64);
        ctx.recorder
            .with(|s| s.send.missed = s.send.missed.saturating_add(missed));
    }
    // Every send has finished once all permits are back.
    let _ = permits.acquire(inflight).await;
}

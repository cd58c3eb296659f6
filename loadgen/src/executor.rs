//! One load executor: sets up its producer and/or consumer, waits for the common start, runs its
//! share of the load, and reports every interval to the main thread.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use client::namesrv::NameServer;
use client::pull::PullOptions;
use client::uniq_key::local_ipv4;
use client::{BrokerConnections, MessageQueue, Producer, ProducerConfig, PullConsumer};

use crate::aggregate::Report;
use crate::cli::{CommonArgs, ConsumeOpts, ProduceOpts, StartFrom};
use crate::consume::{self, ConsumeCtx};
use crate::payload::{PayloadMaker, PayloadSpec};
use crate::produce::{self, ProduceCtx, ProducePlan};
use crate::recorder::{share, Budget, Recorder, StopRule};
use crate::timeline::Timeline;

/// What the executors send the main thread.
#[derive(Debug)]
pub enum Event {
    Report(Box<Report>),
    /// Setup failed; this executor sends nothing more.
    Failed {
        executor: usize,
        error: String,
    },
}

/// A run's settings, shared by all executors.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub common: CommonArgs,
    pub produce: Option<ProduceOpts>,
    pub consume: Option<ConsumeOpts>,
}

/// What executors share to start together and stop early.
pub struct StartGate {
    barrier: Barrier,
    start: Mutex<Option<Instant>>,
    abort: AtomicBool,
    /// e2e: executors whose producers are still running.
    pub producers_running: Arc<AtomicUsize>,
    /// consume: messages still to consume, shared (queues are uneven between executors).
    pub consume_budget: Option<Arc<AtomicU64>>,
}

impl StartGate {
    pub fn new(executors: usize, consume_count: Option<u64>) -> StartGate {
        StartGate {
            barrier: Barrier::new(executors),
            start: Mutex::new(None),
            abort: AtomicBool::new(false),
            producers_running: Arc::new(AtomicUsize::new(executors)),
            consume_budget: consume_count.map(|n| Arc::new(AtomicU64::new(n))),
        }
    }

    /// Blocks until every executor is set up; returns the common start, or None when one failed.
    pub fn wait(&self, failed: bool) -> Option<Instant> {
        if failed {
            self.abort.store(true, Ordering::SeqCst);
        }
        if self.barrier.wait().is_leader() {
            if let Ok(mut start) = self.start.lock() {
                // A little slack so every executor's first tick lies ahead of it.
                *start = Some(Instant::now() + Duration::from_millis(5));
            }
        }
        self.barrier.wait();
        if self.abort.load(Ordering::SeqCst) {
            return None;
        }
        self.start.lock().ok().and_then(|s| *s)
    }
}

struct Setup {
    producer: Option<Rc<ProduceCtx>>,
    consumer: Option<(Rc<ConsumeCtx>, Vec<MessageQueue>, Vec<i64>)>,
}

fn namesrv(common: &CommonArgs) -> Result<NameServer, String> {
    NameServer::from_list(&common.namesrv, common.timeout)
        .map_err(|e| format!("name server {}: {e}", common.namesrv))
}

/// Connects and prepares this executor's producer and consumer; their deadlines are set at start.
async fn setup(
    index: usize,
    spec: &RunSpec,
    gate: &StartGate,
    recorder: &Rc<Recorder>,
) -> Result<Setup, String> {
    let common = &spec.common;
    let threads = common.threads.max(1);
    let connections = common.connections.div_ceil(threads).max(1);
    let mut result = Setup {
        producer: None,
        consumer: None,
    };
    if let Some(opts) = &spec.produce {
        let config = ProducerConfig {
            group: opts.producer_group.clone(),
            send_timeout: common.timeout,
            connect_timeout: common.timeout,
            connections_per_broker: connections,
            instance: (std::process::id() << 8) ^ index as u32,
            client_ip: local_ipv4(),
            ..ProducerConfig::default()
        };
        let producer = Rc::new(Producer::new(namesrv(common)?, config));
        producer
            .connect(&common.topic)
            .await
            .map_err(|e| format!("producer setup for topic {}: {e}", common.topic))?;
        let inflight = usize::try_from(share(opts.inflight as u64, threads, index))
            .unwrap_or(1)
            .max(1);
        let budget = match common.count {
            Some(count) => Budget::Local(Cell::new(share(count, threads, index))),
            None => Budget::Unlimited,
        };
        let spec = PayloadSpec {
            size: opts.size,
            key_size: opts.key_size,
            tags: opts.tags(),
            property_size: opts.property_size,
            timer_delay_ms: opts.timer_delay_ms,
        };
        result.producer = Some(Rc::new(ProduceCtx {
            producer,
            plan: ProducePlan {
                mode: opts.mode,
                inflight,
                batch: opts.batch,
                rate: opts.rate / threads as f64,
                from_send_start: false,
            },
            stop: StopRule::new(None, budget),
            recorder: recorder.clone(),
            maker: RefCell::new(PayloadMaker::new(&common.topic, spec, index)),
            acks: opts
                .acked_log
                .as_deref()
                .map(crate::ack_log::AckLog::open)
                .transpose()?,
        }));
    }
    if let Some(opts) = &spec.consume {
        let e2e = spec.produce.is_some();
        let conns = BrokerConnections::new(connections, common.timeout);
        let consumer = Rc::new(PullConsumer::new(
            &opts.consumer_group,
            namesrv(common)?,
            conns,
            common.timeout,
        ));
        let all = consumer
            .queues(&common.topic)
            .await
            .map_err(|e| format!("consumer setup for topic {}: {e}", common.topic))?;
        let mine: Vec<MessageQueue> = all
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % threads == index)
            .map(|(_, q)| q)
            .collect();
        if let Err(e) = consumer
            .heartbeat(
                &common.topic,
                &format!("loadgen@{}#{index}", std::process::id()),
            )
            .await
        {
            tracing::warn!("heartbeat failed (continuing): {e}");
        }
        let from = opts.from.unwrap_or(if e2e {
            StartFrom::Latest
        } else {
            StartFrom::Earliest
        });
        let offsets = consume::start_offsets(&consumer, &mine, from)
            .await
            .map_err(|e| format!("start offsets: {e}"))?;
        // e2e consumers are bounded by the producers (and the drain), not by a count of their own.
        let budget = if e2e {
            Budget::Unlimited
        } else {
            gate.consume_budget
                .clone()
                .map_or(Budget::Unlimited, Budget::Shared)
        };
        let options = PullOptions {
            max_msg_nums: opts.pull_batch.max(1),
            suspend: (!opts.long_poll.is_zero()).then_some(opts.long_poll),
            ..PullOptions::default()
        };
        let ctx = Rc::new(ConsumeCtx {
            consumer,
            options,
            stop: StopRule::new(None, budget),
            recorder: recorder.clone(),
            producers_running: e2e.then(|| gate.producers_running.clone()),
            drain: opts.drain,
            commit: opts.commit,
            paused: None,
        });
        result.consumer = Some((ctx, mine, offsets));
    }
    Ok(result)
}

/// The body of executor `index`.
pub async fn run(index: usize, spec: Arc<RunSpec>, gate: Arc<StartGate>, events: Sender<Event>) {
    let common = &spec.common;
    let recorder = Rc::new(Recorder::new());
    let setup_result = setup(index, &spec, &gate, &recorder).await;
    if let Err(error) = &setup_result {
        let _ = events.send(Event::Failed {
            executor: index,
            error: error.clone(),
        });
    }
    let Some(start) = gate.wait(setup_result.is_err()) else {
        return;
    };
    let Ok(setup) = setup_result else {
        return;
    };
    let timeline = Timeline {
        start,
        warmup: common.warmup,
        interval: common.interval,
        measured: common.measured_duration(),
    };
    let events = Rc::new(events);
    let seq = Rc::new(Cell::new(0u64));

    let wait = start.saturating_duration_since(Instant::now());
    glommio::timer::sleep(wait).await;

    let reporter = {
        let (recorder, events, seq) = (recorder.clone(), events.clone(), seq.clone());
        glommio::spawn_local(async move {
            while let Some(tick) = timeline.tick(seq.get()) {
                glommio::timer::sleep(tick.at.saturating_duration_since(Instant::now())).await;
                let snapshot = recorder.take();
                let at = tick.at.saturating_duration_since(timeline.start);
                let _ = events.send(Event::Report(Box::new(Report {
                    executor: index,
                    seq: tick.seq,
                    at,
                    warmup: tick.warmup,
                    last: false,
                    producers_done: None,
                    snapshot,
                })));
                seq.set(tick.seq + 1);
            }
        })
    };

    let end = timeline.end();
    let producers_done = Rc::new(Cell::new(None));
    let produce_task = setup.producer.map(|ctx| {
        ctx.stop.set_deadline(end);
        let running = gate.producers_running.clone();
        let done = producers_done.clone();
        glommio::spawn_local(async move {
            produce::run(ctx, start).await;
            done.set(Some(Instant::now().saturating_duration_since(start)));
            running.fetch_sub(1, Ordering::AcqRel);
        })
    });
    if produce_task.is_none() {
        gate.producers_running.fetch_sub(1, Ordering::AcqRel);
    }
    let consume_task = setup.consumer.map(|(ctx, queues, offsets)| {
        // e2e consumers may run on for the drain time after the producers' end.
        let drain = if spec.produce.is_some() {
            ctx.drain
        } else {
            Duration::ZERO
        };
        ctx.stop.set_deadline(end.map(|e| e + drain));
        glommio::spawn_local(consume::run(ctx, queues, offsets))
    });
    if let Some(task) = produce_task {
        task.await;
    }
    if let Some(task) = consume_task {
        task.await;
    }
    drop(reporter);
    let now = Instant::now();
    let snapshot = recorder.take();
    let _ = events.send(Event::Report(Box::new(Report {
        executor: index,
        seq: seq.get(),
        at: now.saturating_duration_since(start),
        warmup: timeline.in_warmup(now),
        last: true,
        producers_done: producers_done.get(),
        snapshot,
    })));
}

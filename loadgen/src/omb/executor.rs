//! One `loadgen omb` executor: its share of the workload's producers (each a client of its own at its
//! share of producerRate) and consumers (each a pull consumer of its subscription's group on its
//! share of the topic's queues), run with loadgen's producing and consuming tasks until told to
//! stop; it reports every sample to the main thread, as `loadgen e2e`'s executors do.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::namesrv::NameServer;
use client::pull::PullOptions;
use client::uniq_key::local_ipv4;
use client::{BrokerConnections, MessageQueue, Producer, ProducerConfig, PullConsumer};

use crate::aggregate::Report;
use crate::cli::{SendMode, StartFrom};
use crate::consume::{self, ConsumeCtx};
use crate::executor::{Event, StartGate};
use crate::payload::{PayloadMaker, PayloadSpec};
use crate::produce::{self, ProduceCtx, ProducePlan};
use crate::recorder::{Budget, Recorder, StopRule};

/// How often the executor looks at the shared stop flag.
const CONTROL_CHECK: Duration = Duration::from_millis(10);

/// Flags the main thread sets for every executor.
#[derive(Default)]
pub struct Control {
    /// Consumers start no pull while set (the backlog is being built).
    pub paused: Arc<AtomicBool>,
    pub stop: AtomicBool,
}

/// One producer: a topic and its rate (0: as fast as `inflight` allows).
#[derive(Debug, Clone)]
pub struct ProducerUnit {
    pub topic: String,
    pub rate: f64,
    pub inflight: usize,
}

/// One consumer: a topic, its subscription's group and its share of the queues.
#[derive(Debug, Clone)]
pub struct ConsumerUnit {
    pub topic: String,
    pub group: String,
    /// This consumer takes the queues whose index modulo `of` is `index`.
    pub index: u32,
    pub of: u32,
}

/// What every executor shares.
pub struct Shared {
    pub namesrv: String,
    pub timeout: Duration,
    pub message_size: usize,
    pub bodies: Vec<Bytes>,
    pub sample: Duration,
    pub pull_batch: i32,
    pub long_poll: Duration,
    pub producer_group: String,
    /// partitionsPerTopic: the queues every topic must have in all.
    pub partitions: u32,
    pub control: Control,
}

/// One executor's units.
#[derive(Debug, Clone, Default)]
pub struct Assignment {
    pub producers: Vec<ProducerUnit>,
    pub consumers: Vec<ConsumerUnit>,
}

struct Ready {
    producers: Vec<Rc<ProduceCtx>>,
    consumers: Vec<(Rc<ConsumeCtx>, Vec<MessageQueue>, Vec<i64>)>,
}

fn namesrv(shared: &Shared) -> Result<NameServer, String> {
    NameServer::from_list(&shared.namesrv, shared.timeout)
        .map_err(|e| format!("name server {}: {e}", shared.namesrv))
}

async fn setup(
    index: usize,
    shared: &Shared,
    work: &Assignment,
    recorder: &Rc<Recorder>,
) -> Result<Ready, String> {
    let mut ready = Ready {
        producers: Vec::new(),
        consumers: Vec::new(),
    };
    for (n, unit) in work.producers.iter().enumerate() {
        let config = ProducerConfig {
            group: shared.producer_group.clone(),
            send_timeout: shared.timeout,
            connect_timeout: shared.timeout,
            instance: (std::process::id() << 12) ^ ((index as u32) << 6) ^ n as u32,
            client_ip: local_ipv4(),
            ..ProducerConfig::default()
        };
        let producer = Rc::new(Producer::new(namesrv(shared)?, config));
        producer
            .connect(&unit.topic)
            .await
            .map_err(|e| format!("producer setup for topic {}: {e}", unit.topic))?;
        check_partitions(&producer, &unit.topic, shared.partitions).await?;
        let spec = PayloadSpec {
            size: shared.message_size,
            key_size: 0,
            tags: None,
            property_size: 0,
            timer_delay_ms: 0,
        };
        let maker = PayloadMaker::new(&unit.topic, spec, index).with_bodies(shared.bodies.clone());
        ready.producers.push(Rc::new(ProduceCtx {
            producer,
            plan: ProducePlan {
                mode: SendMode::Async,
                inflight: unit.inflight.max(1),
                batch: 1,
                rate: unit.rate,
                from_send_start: true,
            },
            stop: StopRule::new(None, Budget::Unlimited),
            recorder: recorder.clone(),
            maker: RefCell::new(maker),
            acks: None,
        }));
    }
    for (n, unit) in work.consumers.iter().enumerate() {
        let consumer = Rc::new(PullConsumer::new(
            &unit.group,
            namesrv(shared)?,
            BrokerConnections::new(1, shared.timeout),
            shared.timeout,
        ));
        let all = consumer
            .queues(&unit.topic)
            .await
            .map_err(|e| format!("consumer setup for topic {}: {e}", unit.topic))?;
        let mine: Vec<MessageQueue> = all
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 % u64::from(unit.of.max(1)) == u64::from(unit.index))
            .map(|(_, q)| q)
            .collect();
        let client_id = format!("loadgen-omb@{}#{index}.{n}", std::process::id());
        if let Err(e) = consumer.heartbeat(&unit.topic, &client_id).await {
            tracing::warn!("heartbeat failed (continuing): {e}");
        }
        // The subscription exists before anything is sent: it receives every message of the run.
        let offsets = consume::start_offsets(&consumer, &mine, StartFrom::Latest)
            .await
            .map_err(|e| format!("start offsets of {}: {e}", unit.topic))?;
        let ctx = Rc::new(ConsumeCtx {
            consumer,
            options: PullOptions {
                max_msg_nums: shared.pull_batch.max(1),
                suspend: (!shared.long_poll.is_zero()).then_some(shared.long_poll),
                ..PullOptions::default()
            },
            stop: StopRule::new(None, Budget::Unlimited),
            recorder: recorder.clone(),
            producers_running: None,
            drain: Duration::ZERO,
            commit: false,
            paused: Some(shared.control.paused.clone()),
        });
        ready.consumers.push((ctx, mine, offsets));
    }
    Ok(ready)
}

/// Refuses a topic that has not `partitions` queues in all (an existing topic, or one a broker
/// auto-created with its own default).
async fn check_partitions(producer: &Producer, topic: &str, partitions: u32) -> Result<(), String> {
    let route = producer
        .route(topic)
        .await
        .map_err(|e| format!("route of {topic}: {e}"))?;
    let queues = route.read_queues().len();
    if queues == partitions as usize {
        Ok(())
    } else {
        Err(format!(
            "topic {topic} has {queues} queues in all, the workload's partitionsPerTopic is {partitions}"
        ))
    }
}

/// The body of executor `index`: set up, start with the others, run until the stop flag, report.
pub async fn run(
    index: usize,
    shared: Arc<Shared>,
    work: Assignment,
    gate: Arc<StartGate>,
    events: Sender<Event>,
) {
    let recorder = Rc::new(Recorder::new());
    let setup_result = setup(index, &shared, &work, &recorder).await;
    if let Err(error) = &setup_result {
        let _ = events.send(Event::Failed {
            executor: index,
            error: error.clone(),
        });
    }
    let Some(start) = gate.wait(setup_result.is_err()) else {
        return;
    };
    let Ok(ready) = setup_result else {
        return;
    };
    glommio::timer::sleep(start.saturating_duration_since(Instant::now())).await;
    let events = Rc::new(events);
    let seq = Rc::new(Cell::new(0u64));
    let reporter = {
        let (recorder, events, seq, sample) =
            (recorder.clone(), events.clone(), seq.clone(), shared.sample);
        glommio::spawn_local(async move {
            loop {
                let k = seq.get();
                let at = sample.saturating_mul(u32::try_from(k + 1).unwrap_or(u32::MAX));
                glommio::timer::sleep((start + at).saturating_duration_since(Instant::now())).await;
                let _ = events.send(Event::Report(Box::new(Report {
                    executor: index,
                    seq: k,
                    at,
                    warmup: false,
                    last: false,
                    producers_done: None,
                    snapshot: recorder.take(),
                })));
                seq.set(k + 1);
            }
        })
    };
    let stops: Vec<Rc<ProduceCtx>> = ready.producers.clone();
    let consumer_stops: Vec<Rc<ConsumeCtx>> = ready.consumers.iter().map(|c| c.0.clone()).collect();
    let watcher = {
        let shared = shared.clone();
        glommio::spawn_local(async move {
            while !shared.control.stop.load(Ordering::Acquire) {
                glommio::timer::sleep(CONTROL_CHECK).await;
            }
            stops.iter().for_each(|p| p.stop.halt());
            consumer_stops.iter().for_each(|c| c.stop.halt());
        })
    };
    let tasks: Vec<_> =
        ready
            .producers
            .into_iter()
            .map(|ctx| glommio::spawn_local(produce::run(ctx, start)))
            .chain(ready.consumers.into_iter().map(|(ctx, queues, offsets)| {
                glommio::spawn_local(consume::run(ctx, queues, offsets))
            }))
            .collect();
    for task in tasks {
        task.await;
    }
    watcher.await;
    drop(reporter);
    let _ = events.send(Event::Report(Box::new(Report {
        executor: index,
        seq: seq.get(),
        at: Instant::now().saturating_duration_since(start),
        warmup: false,
        last: true,
        producers_done: None,
        snapshot: recorder.take(),
    })));
}

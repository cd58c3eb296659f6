//! A gRPC load generator for the proxy, on the generated client: `send` (SendMessage from many
//! concurrent callers: TPS and latency percentiles) and `receive-ack` (ReceiveMessage in batches of 32,
//! then one AckMessage per batch, from `--receivers` callers per broker, until `--count` distinct
//! messages are acked; then checks that none comes back after the invisible time, which fails the run).
//! Speaks to any proxy of the RocketMQ gRPC API (ours, Apache's): every request carries the SDK
//! headers (client id, language, protocol, client version), and `receive-ack` first opens a Telemetry
//! stream with SIMPLE_CONSUMER settings and gives each ReceiveMessage a deadline, as an SDK's
//! SimpleConsumer does (Apache's proxy refuses a receive without both). Its rate is over the time to
//! the last ack (`seconds`); `seconds_total` adds the receivers' last, empty long polls.
//!
//! cargo run --release -p proxy --example grpc_load -- send --endpoint 127.0.0.1:8081 --topic T \
//!     --seconds 10 --concurrency 64 --size 128
//! cargo run --release -p proxy --example grpc_load -- receive-ack --endpoint 127.0.0.1:8081 --topic T \
//!     --group G --broker broker-a,broker-b --receivers 4 --count 100000

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use proxy::pb::messaging_service_client::MessagingServiceClient;
use proxy::pb::*;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

#[derive(Parser)]
struct Args {
    /// send | receive-ack
    mode: String,
    #[arg(long, default_value = "127.0.0.1:8081")]
    endpoint: String,
    #[arg(long)]
    topic: String,
    #[arg(long, default_value = "GID_grpc_load")]
    group: String,
    /// receive-ack: the broker names of the assignments to receive from, `,`-separated
    /// (QueryAssignment gives them).
    #[arg(long)]
    broker: Option<String>,
    /// receive-ack: concurrent receive+ack callers per broker.
    #[arg(long, default_value_t = 1)]
    receivers: usize,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// send: HTTP/2 connections the callers are spread over (an SDK uses one per endpoint).
    #[arg(long, default_value_t = 1)]
    connections: usize,
    #[arg(long, default_value_t = 128)]
    size: usize,
    /// send: stop after this many messages (0: run for --seconds); receive-ack: how many distinct
    /// messages to ack (0: until a receive finds nothing).
    #[arg(long, default_value_t = 0)]
    count: usize,
    /// send: open a Telemetry stream with PRODUCER settings first, as an SDK's producer does
    /// (receive-ack always opens one with SIMPLE_CONSUMER settings).
    #[arg(long)]
    telemetry: bool,
    /// receive-ack: skip the check that acked messages do not come back (a warm-up run).
    #[arg(long)]
    no_check: bool,
    /// receive-ack: the invisible time asked for, ms.
    #[arg(long, default_value_t = 10_000)]
    invisible_ms: i64,
}

fn resource(name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: String::new(),
        name: name.to_string(),
    })
}

/// The headers an SDK sends on every call.
fn request<T>(body: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(body);
    for (k, v) in [
        ("x-mq-client-id", "grpc-load"),
        ("x-mq-language", "RUST"),
        ("x-mq-protocol", "v2"),
        ("x-mq-client-version", "5.2.0"),
    ] {
        r.metadata_mut()
            .insert(k, tonic::metadata::MetadataValue::from_static(v));
    }
    r
}

/// The long poll each ReceiveMessage asks for (Apache's proxy raises it to its minimum, 5 s).
const LONG_POLLING: Duration = Duration::from_secs(1);
/// A ReceiveMessage's deadline: at least Apache's minimum long poll plus the request timeout.
const RECEIVE_DEADLINE: Duration = Duration::from_secs(8);

/// Opens the Telemetry stream and sends the settings an SDK sends first: a PRODUCER's publishing the
/// topic (`send`), or a SIMPLE_CONSUMER's subscription of the group to the topic (`receive-ack`); waits
/// for the proxy's answer. The stream stays open while the returned sender and response stream live.
async fn open_telemetry(
    c: &mut MessagingServiceClient<Channel>,
    a: &Args,
    producer: bool,
) -> Result<
    (
        tokio::sync::mpsc::Sender<TelemetryCommand>,
        tonic::Streaming<TelemetryCommand>,
    ),
    String,
> {
    let (host, port) = a
        .endpoint
        .rsplit_once(':')
        .ok_or_else(|| format!("endpoint {} is not host:port", a.endpoint))?;
    let pub_sub = if producer {
        settings::PubSub::Publishing(Publishing {
            topics: resource(&a.topic).into_iter().collect(),
            max_body_size: 4 * 1024 * 1024,
            validate_message_type: true,
        })
    } else {
        settings::PubSub::Subscription(Subscription {
            group: resource(&a.group),
            subscriptions: vec![SubscriptionEntry {
                topic: resource(&a.topic),
                expression: Some(FilterExpression {
                    r#type: FilterType::Tag as i32,
                    expression: "*".into(),
                }),
            }],
            receive_batch_size: Some(32),
            long_polling_timeout: Some(prost_types::Duration {
                seconds: LONG_POLLING.as_secs() as i64,
                nanos: 0,
            }),
            ..Default::default()
        })
    };
    let client_type = if producer {
        ClientType::Producer
    } else {
        ClientType::SimpleConsumer
    };
    let settings = Settings {
        client_type: Some(client_type as i32),
        access_point: Some(Endpoints {
            scheme: AddressScheme::IPv4 as i32,
            addresses: vec![Address {
                host: host.to_string(),
                port: port
                    .parse()
                    .map_err(|e| format!("port of {}: {e}", a.endpoint))?,
            }],
        }),
        request_timeout: Some(prost_types::Duration {
            seconds: 3,
            nanos: 0,
        }),
        pub_sub: Some(pub_sub),
        ..Default::default()
    };
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(TelemetryCommand {
        status: None,
        command: Some(telemetry_command::Command::Settings(settings)),
    })
    .await
    .map_err(|e| e.to_string())?;
    let mut replies = c
        .telemetry(request(ReceiverStream::new(rx)))
        .await
        .map_err(|e| format!("telemetry: {e}"))?
        .into_inner();
    match tokio::time::timeout(Duration::from_secs(10), replies.message()).await {
        Ok(Ok(Some(r))) => match r.status {
            Some(s) if s.code != Code::Ok as i32 => {
                Err(format!("telemetry settings: {} {}", s.code, s.message))
            }
            _ => Ok((tx, replies)),
        },
        Ok(Ok(None)) => Err("telemetry: the proxy closed the stream".into()),
        Ok(Err(e)) => Err(format!("telemetry: {e}")),
        Err(_) => Err("telemetry: no answer to the settings in 10 s".into()),
    }
}

/// This process's CPU time so far (user + system), from /proc/self/stat; 0 where unreadable.
fn own_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; 100 ticks a second.
    (ticks(11) + ticks(12)) / 100.0
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0)
}

async fn send(mut client: MessagingServiceClient<Channel>, a: &Args) -> Result<(), String> {
    // Held until the end, as a producer's.
    let _telemetry = if a.telemetry {
        Some(open_telemetry(&mut client, a, true).await?)
    } else {
        None
    };
    let mut clients = vec![client];
    for _ in 1..a.connections.max(1) {
        clients.push(
            MessagingServiceClient::connect(format!("http://{}", a.endpoint))
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let started = Instant::now();
    let end = started + Duration::from_secs(a.seconds);
    let body = vec![b'x'; a.size];
    let mut tasks = Vec::new();
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let limit = a.count as u64;
    let run = std::process::id();
    for i in 0..a.concurrency {
        let Some(mut c) = clients.get(i % clients.len()).cloned() else {
            return Err("no connection".into());
        };
        let topic = a.topic.clone();
        let body = body.clone();
        let seq = seq.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0u64;
            while Instant::now() < end {
                let n = seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if limit > 0 && n >= limit {
                    break;
                }
                let msg = Message {
                    topic: resource(&topic),
                    user_properties: Default::default(),
                    system_properties: Some(SystemProperties {
                        // Unique across runs (a warm-up run and the measured one fill the same
                        // topic, and receive-ack counts distinct ids).
                        message_id: format!("grpcload{run:08x}{n:016}"),
                        message_type: MessageType::Normal as i32,
                        ..Default::default()
                    }),
                    body: body.clone(),
                };
                let t = Instant::now();
                let r = c
                    .send_message(request(SendMessageRequest {
                        messages: vec![msg],
                    }))
                    .await;
                let ok = r.is_ok_and(|r| {
                    r.get_ref()
                        .status
                        .as_ref()
                        .is_some_and(|s| s.code == Code::Ok as i32)
                });
                if ok {
                    lat.push(t.elapsed().as_micros() as u64);
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.map_err(|e| e.to_string())?;
        all.extend(l);
        errors += e;
    }
    all.sort_unstable();
    println!(
        "{{\"mode\":\"send\",\"ok\":{},\"errors\":{errors},\"tps\":{:.0},\"p50_us\":{},\"p99_us\":{},\"p999_us\":{},\"cpu_s\":{:.2}}}",
        all.len(),
        all.len() as f64 / started.elapsed().as_secs_f64(),
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        percentile(&all, 0.999),
        own_cpu_seconds()
    );
    Ok(())
}

async fn receive_batch(
    c: &mut MessagingServiceClient<Channel>,
    a: &Args,
    broker: &str,
    invisible_ms: i64,
) -> Result<Vec<Message>, String> {
    let req = ReceiveMessageRequest {
        group: resource(&a.group),
        message_queue: Some(MessageQueue {
            topic: resource(&a.topic),
            id: -1,
            permission: Permission::ReadWrite as i32,
            broker: Some(Broker {
                name: broker.to_string(),
                id: 0,
                endpoints: None,
            }),
            accept_message_types: vec![],
        }),
        filter_expression: Some(FilterExpression {
            r#type: FilterType::Tag as i32,
            expression: "*".into(),
        }),
        batch_size: 32,
        invisible_duration: Some(prost_types::Duration {
            seconds: invisible_ms / 1000,
            nanos: ((invisible_ms % 1000) * 1_000_000) as i32,
        }),
        auto_renew: false,
        long_polling_timeout: Some(prost_types::Duration {
            seconds: LONG_POLLING.as_secs() as i64,
            nanos: 0,
        }),
        attempt_id: None,
    };
    let mut req = request(req);
    req.set_timeout(RECEIVE_DEADLINE);
    let mut stream = c
        .receive_message(req)
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let mut out = Vec::new();
    while let Some(r) = stream.message().await.map_err(|e| e.to_string())? {
        match r.content {
            Some(receive_message_response::Content::Message(m)) => out.push(m),
            Some(receive_message_response::Content::Status(s))
                if s.code != Code::Ok as i32 && s.code != Code::MessageNotFound as i32 =>
            {
                return Err(format!("receive: {} {}", s.code, s.message))
            }
            _ => {}
        }
    }
    Ok(out)
}

/// What the receivers of one run share.
struct Received {
    acked: std::sync::Mutex<HashSet<String>>,
    batches: std::sync::atomic::AtomicU64,
    /// When the last ack was answered.
    last_ack: std::sync::Mutex<Option<Instant>>,
}

impl Received {
    fn acked(&self) -> usize {
        self.acked.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// One caller: receive a batch, ack it in one AckMessage, until nothing more comes (or `--count`).
async fn receive_ack_loop(
    mut c: MessagingServiceClient<Channel>,
    a: Arc<Args>,
    broker: String,
    shared: Arc<Received>,
    started: Instant,
) -> Result<(), String> {
    loop {
        let msgs = receive_batch(&mut c, &a, &broker, a.invisible_ms).await?;
        if msgs.is_empty() && (a.count == 0 || shared.acked() >= a.count) {
            return Ok(());
        }
        if msgs.is_empty() {
            if started.elapsed() > Duration::from_secs(120) {
                return Err(format!(
                    "only {} of {} messages came",
                    shared.acked(),
                    a.count
                ));
            }
            continue;
        }
        shared
            .batches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let entries: Vec<AckMessageEntry> = msgs
            .iter()
            .filter_map(|m| {
                let sp = m.system_properties.as_ref()?;
                Some(AckMessageEntry {
                    message_id: sp.message_id.clone(),
                    receipt_handle: sp.receipt_handle.clone()?,
                    lite_topic: None,
                })
            })
            .collect();
        let resp = c
            .ack_message(request(AckMessageRequest {
                group: resource(&a.group),
                topic: resource(&a.topic),
                entries: entries.clone(),
            }))
            .await
            .map_err(|e| e.to_string())?
            .into_inner();
        let mut acked = shared.acked.lock().unwrap_or_else(|e| e.into_inner());
        for (e, r) in entries.iter().zip(&resp.entries) {
            if r.status.as_ref().is_none_or(|s| s.code != Code::Ok as i32) {
                return Err(format!("ack of {} failed: {:?}", e.message_id, r.status));
            }
            acked.insert(e.message_id.clone());
        }
        *shared.last_ack.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        if a.count > 0 && acked.len() >= a.count {
            return Ok(());
        }
    }
}

async fn receive_ack(mut c: MessagingServiceClient<Channel>, a: Args) -> Result<(), String> {
    let brokers: Vec<String> = a
        .broker
        .as_deref()
        .ok_or("--broker is required")?
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_string)
        .collect();
    // Held until the end: the proxy knows the client while its Telemetry stream is open.
    let _telemetry = open_telemetry(&mut c, &a, false).await?;
    let a = Arc::new(a);
    let shared = Arc::new(Received {
        acked: Default::default(),
        batches: Default::default(),
        last_ack: Default::default(),
    });
    let started = Instant::now();
    let mut tasks = Vec::new();
    for broker in &brokers {
        for _ in 0..a.receivers.max(1) {
            tasks.push(tokio::spawn(receive_ack_loop(
                c.clone(),
                a.clone(),
                broker.clone(),
                shared.clone(),
                started,
            )));
        }
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let took_total = started.elapsed();
    let took = shared
        .last_ack
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(took_total, |t| t - started);
    let cpu_before_check = own_cpu_seconds();
    let acked = std::mem::take(&mut *shared.acked.lock().unwrap_or_else(|e| e.into_inner()));
    // Acked messages must not come back once their invisible time is over.
    let mut redelivered: Vec<String> = Vec::new();
    if !a.no_check {
        tokio::time::sleep(Duration::from_millis(a.invisible_ms as u64 + 2_000)).await;
    }
    for broker in brokers.iter().filter(|_| !a.no_check) {
        let again = receive_batch(&mut c.clone(), &a, broker, a.invisible_ms).await?;
        redelivered.extend(
            again
                .iter()
                .filter_map(|m| m.system_properties.as_ref().map(|s| s.message_id.clone()))
                .filter(|id| acked.contains(id)),
        );
    }
    println!(
        "{{\"mode\":\"receive-ack\",\"brokers\":{},\"receivers_per_broker\":{},\"acked\":{},\"batches\":{},\"seconds\":{:.2},\"seconds_total\":{:.2},\"msgs_per_s\":{:.0},\"redelivered\":{},\"cpu_s\":{:.2}}}",
        brokers.len(),
        a.receivers.max(1),
        acked.len(),
        shared.batches.load(std::sync::atomic::Ordering::Relaxed),
        took.as_secs_f64(),
        took_total.as_secs_f64(),
        acked.len() as f64 / took.as_secs_f64(),
        redelivered.len(),
        cpu_before_check
    );
    if !redelivered.is_empty() {
        return Err(format!(
            "{} acked messages came back: {:?}",
            redelivered.len(),
            &redelivered[..redelivered.len().min(5)]
        ));
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let a = Args::parse();
    let client = match MessagingServiceClient::connect(format!("http://{}", a.endpoint)).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot connect to {}: {e}", a.endpoint);
            std::process::exit(2);
        }
    };
    let r = match a.mode.as_str() {
        "send" => send(client, &a).await,
        "receive-ack" => receive_ack(client, a).await,
        m => Err(format!("unknown mode {m}")),
    };
    if let Err(e) = r {
        eprintln!("FAIL: {e}");
        std::process::exit(1);
    }
}

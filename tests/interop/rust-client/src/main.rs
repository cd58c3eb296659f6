//! Drives crates.io `rocketmq-client-rust` 1.0.0 (a client written by other people) for the interop runner.
//!
//! One action per process; prints one JSON object per line (`sent`, `send_error`, `recv`, `done`), which
//! tests/interop/run.py compares with what was sent. Message i of prefix P has the same fields as
//! tests/interop/messages.py builds. Wire format: JSON headers, or ROCKETMQ binary headers when the
//! environment has `ROCKETMQ_SERIALIZE_TYPE=ROCKETMQ` (read by the client library itself).
//!
//! ```text
//! interop-rust-client --namesrv ADDR send|batch|select --topic T --prefix P --count N
//! interop-rust-client --namesrv ADDR consume --topic T --group G --expect P:N [--expect P:N] [--timeout S]
//! interop-rust-client --namesrv ADDR transaction --topic T --group G --prefix P --count N \
//!     --mode commit|rollback|unknown-commit|unknown [--timeout S] [--checks C]
//! ```
//! `transaction` sends N transactional messages; the local transaction commits, rolls back or answers
//! Unknown; on a check-back (`check` records) `unknown-commit` commits and `unknown` stays Unknown. The
//! producer stays up until C check-backs were answered (then 3 s more) or the timeout.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocketmq_client_rust::{
    AclClientRPCHook, ClientResult, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, DefaultMQProducer, DefaultMQPushConsumer, LocalTransactionState, MQPushConsumer,
    MessageListenerConcurrently, SessionCredentials, TransactionListener, TransactionMQProducer,
};
use rocketmq_model::common::message::MessageTrait;
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_queue::MessageQueue;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};
use serde_json::{json, Value};

/// Messages per `send_batch` call (each one SEND_BATCH_MESSAGE, code 320).
const BATCH_SIZE: usize = 10;

/// An error with its sources: the client's own Display/Debug redact the message, the source does not.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

fn emit(record: Value) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // A closed stdout means the runner is gone; nothing useful is left to do with the error.
    let _ = writeln!(out, "{record}");
    let _ = out.flush();
}

// ---- the messages (keep in step with tests/interop/messages.py) ---------------------------------------

/// Padding of runs whose prefix starts with "big" (bodies over several 4 KiB blocks).
const BIG_PAD: usize = 100 * 1024;

fn body(prefix: &str, i: usize) -> String {
    let mut text = format!("{prefix}-body-{i}-{}{}", "\u{e9}".repeat(i % 5), "x".repeat(i % 23));
    if prefix.starts_with("big") {
        text.push_str(&"y".repeat(BIG_PAD + i));
    }
    text
}

fn tags(i: usize) -> String {
    format!("Tag{}", i % 3)
}

fn keys(prefix: &str, i: usize) -> String {
    format!("{prefix}-key-{i}")
}

fn sharding_key(i: usize) -> usize {
    i % 3
}

fn build_message(topic: &str, prefix: &str, i: usize) -> Result<Message, String> {
    Message::builder()
        .topic(topic.to_string())
        .body(body(prefix, i).into_bytes())
        .tags(tags(i))
        .keys(vec![keys(prefix, i)])
        .raw_property("seq", i.to_string())
        .and_then(|b| b.raw_property("origin", prefix.to_string()))
        .and_then(|b| b.build())
        .map_err(|e| format!("building message {i}: {}", chain(&e)))
}

// ---- command line ------------------------------------------------------------------------------------

struct Args {
    namesrv: String,
    action: String,
    topic: String,
    group: String,
    prefix: String,
    count: usize,
    expect: BTreeMap<String, usize>,
    timeout: Duration,
    mode: String,
    checks: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut namesrv = None;
    let mut action = None;
    let mut topic = None;
    let mut group = None;
    let mut prefix = String::from("rs");
    let mut count = 0usize;
    let mut expect = BTreeMap::new();
    let mut timeout = Duration::from_secs(60);
    let mut mode = String::from("commit");
    let mut checks = 0usize;
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--namesrv" => namesrv = Some(value()?),
            "--topic" => topic = Some(value()?),
            "--group" => group = Some(value()?),
            "--prefix" => prefix = value()?,
            "--count" => count = value()?.parse().map_err(|e| format!("--count: {}", chain(&e)))?,
            "--timeout" => {
                let secs: f64 = value()?.parse().map_err(|e| format!("--timeout: {}", chain(&e)))?;
                timeout = Duration::from_secs_f64(secs);
            }
            "--mode" => mode = value()?,
            "--checks" => checks = value()?.parse().map_err(|e| format!("--checks: {}", chain(&e)))?,
            "--expect" => {
                let v = value()?;
                let (p, n) = v.rsplit_once(':').ok_or_else(|| format!("--expect {v}: want PREFIX:COUNT"))?;
                let n: usize = n.parse().map_err(|e| format!("--expect {v}: {}", chain(&e)))?;
                expect.insert(p.to_string(), n);
            }
            a if !a.starts_with("--") && action.is_none() => action = Some(a.to_string()),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    let topic = topic.ok_or("--topic is required")?;
    Ok(Args {
        namesrv: namesrv.ok_or("--namesrv is required")?,
        action: action.ok_or("an action is required: send, batch, select or consume")?,
        group: group.unwrap_or_else(|| format!("rs-group-{topic}")),
        topic,
        prefix,
        count,
        expect,
        timeout,
        mode,
        checks,
    })
}

// ---- producers ---------------------------------------------------------------------------------------

fn sent_record(i: usize, result: &rocketmq_client_rust::SendResult, extra: Value) -> Value {
    let mut rec = json!({
        "kind": "sent",
        "i": i,
        "status": format!("{:?}", result.send_status),
        "msg_id": result.msg_id.as_ref().map(|m| m.to_string()),
        "offset_msg_id": result.offset_msg_id,
        "queue_id": result.message_queue.as_ref().map(|q| q.queue_id()),
        "offset": result.queue_offset,
    });
    if let (Some(obj), Value::Object(more)) = (rec.as_object_mut(), extra) {
        obj.extend(more);
    }
    rec
}

/// The client's ACL signing hook when ACL_ACCESS_KEY and ACL_SECRET_KEY are set (tests/interop/cases_acl.py).
fn acl_hook() -> Option<Arc<AclClientRPCHook>> {
    let (ak, sk) = (std::env::var("ACL_ACCESS_KEY").ok()?, std::env::var("ACL_SECRET_KEY").ok()?);
    Some(Arc::new(AclClientRPCHook::new(SessionCredentials::with_keys(ak, sk))))
}

async fn produce(runtime: Arc<ClientRuntime>, args: &Args) -> Result<(), String> {
    let mut builder = DefaultMQProducer::builder(runtime)
        .producer_group(format!("{}-producer", args.group))
        .name_server_addr(args.namesrv.clone());
    if let Some(hook) = acl_hook() {
        builder = builder.rpc_hook(hook);
    }
    let mut producer = builder.build();
    producer.start().await.map_err(|e| format!("producer start: {}", chain(&e)))?;
    let outcome = produce_with(&producer, args).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), producer.shutdown()).await;
    outcome
}

async fn produce_with(producer: &DefaultMQProducer, args: &Args) -> Result<(), String> {
    let topic = args.topic.as_str();
    let prefix = args.prefix.as_str();
    match args.action.as_str() {
        "send" => {
            for i in 0..args.count {
                let msg = build_message(topic, prefix, i)?;
                match producer.send_with_timeout(msg, 5000).await {
                    Ok(Some(res)) => emit(sent_record(i, &res, json!({}))),
                    Ok(None) => return Err(format!("send {i}: no send result")),
                    Err(e) => return Err(format!("send {i}: {}", chain(&e))),
                }
            }
        }
        "batch" => {
            let mut first = 0;
            while first < args.count {
                let last = (first + BATCH_SIZE).min(args.count);
                let msgs = (first..last).map(|i| build_message(topic, prefix, i)).collect::<Result<Vec<_>, _>>()?;
                let res = producer
                    .send_batch_with_timeout(msgs, 5000)
                    .await
                    .map_err(|e| format!("send_batch {first}..{last}: {}", chain(&e)))?;
                for i in first..last {
                    emit(sent_record(i, &res, json!({ "batch_first": first })));
                }
                first = last;
            }
        }
        "select" => {
            for i in 0..args.count {
                let msg = build_message(topic, prefix, i)?;
                let key = sharding_key(i);
                // Queue = key modulo the queue count: every message of a key goes to the same queue.
                let selector = |mqs: &[MessageQueue], _msg: &Message, key: &usize| -> Option<MessageQueue> {
                    let n = mqs.len();
                    if n == 0 {
                        return None;
                    }
                    mqs.get(key % n).cloned()
                };
                match producer.send_with_selector_timeout(msg, selector, key, 5000).await {
                    Ok(Some(res)) => emit(sent_record(i, &res, json!({ "sharding_key": key }))),
                    Ok(None) => return Err(format!("send_with_selector {i}: no send result")),
                    Err(e) => return Err(format!("send_with_selector {i}: {}", chain(&e))),
                }
            }
        }
        other => return Err(format!("unknown action {other}")),
    }
    Ok(())
}

// ---- transaction producer ---------------------------------------------------------------------------

/// Answers of the local transaction and of check-backs, by `--mode`; counts the check-backs.
struct TxListener {
    mode: String,
    checks: Arc<std::sync::atomic::AtomicUsize>,
}

fn seq_of(props: &HashMap<impl AsRef<str>, impl AsRef<str>>) -> Option<String> {
    props.iter().find(|(k, _)| k.as_ref() == "seq").map(|(_, v)| v.as_ref().to_string())
}

impl TransactionListener for TxListener {
    fn execute_local_transaction(
        &self,
        msg: &dyn MessageTrait,
        _arg: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> LocalTransactionState {
        let state = match self.mode.as_str() {
            "commit" => LocalTransactionState::CommitMessage,
            "rollback" => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        };
        emit(json!({ "kind": "local", "seq": seq_of(msg.get_properties()), "answer": format!("{state:?}") }));
        state
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        let state = match self.mode.as_str() {
            "unknown-commit" | "commit" => LocalTransactionState::CommitMessage,
            "rollback" => LocalTransactionState::RollbackMessage,
            _ => LocalTransactionState::Unknown,
        };
        emit(json!({
            "kind": "check",
            "seq": seq_of(msg.properties()),
            "answer": format!("{state:?}"),
            "transaction_id": msg.get_transaction_id().map(|t| t.to_string()),
            "check_times": prop(msg, "TRANSACTION_CHECK_TIMES"),
        }));
        self.checks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        state
    }
}

async fn transaction(runtime: Arc<ClientRuntime>, args: &Args) -> Result<(), String> {
    let checks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut producer = TransactionMQProducer::builder(runtime)
        .producer_group(format!("{}-producer", args.group))
        .name_server_addr(args.namesrv.clone())
        .topics(vec![args.topic.clone()])
        .transaction_listener(TxListener { mode: args.mode.clone(), checks: Arc::clone(&checks) })
        .build();
    producer.start().await.map_err(|e| format!("producer start: {}", chain(&e)))?;
    let started = Instant::now();
    for i in 0..args.count {
        let msg = build_message(&args.topic, &args.prefix, i)?;
        let res = producer
            .send_message_in_transaction::<(), _>(msg, None)
            .await
            .map_err(|e| format!("send_message_in_transaction {i}: {}", chain(&e)))?;
        let local = res.local_transaction_state.map(|s| format!("{s:?}"));
        match res.send_result.as_ref() {
            Some(sr) => emit(sent_record(i, sr, json!({ "local_state": local }))),
            None => return Err(format!("send_message_in_transaction {i}: no send result")),
        }
    }
    // Stay up for the check-backs.
    while started.elapsed() < args.timeout {
        if args.checks > 0 && checks.load(std::sync::atomic::Ordering::SeqCst) >= args.checks {
            // Let the END_TRANSACTION answers of the last checks leave.
            tokio::time::sleep(Duration::from_secs(3)).await;
            break;
        }
        if args.checks == 0 && args.mode != "unknown" && args.mode != "unknown-commit" {
            tokio::time::sleep(Duration::from_secs(2)).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    emit(json!({ "kind": "checks", "count": checks.load(std::sync::atomic::Ordering::SeqCst) }));
    let _ = tokio::time::timeout(Duration::from_secs(5), producer.shutdown()).await;
    Ok(())
}

// ---- push consumer -----------------------------------------------------------------------------------

/// Seen (origin, seq) pairs, shared with the listener.
struct Seen {
    want: BTreeMap<String, usize>,
    got: Mutex<HashMap<String, HashSet<usize>>>,
}

impl Seen {
    fn complete(&self) -> bool {
        match self.got.lock() {
            Ok(got) => self.want.iter().all(|(p, n)| got.get(p).map_or(0, |s| s.len()) >= *n),
            Err(_) => false,
        }
    }
}

struct Recorder(Arc<Seen>);

fn prop(msg: &MessageExt, key: &str) -> Option<String> {
    msg.properties().iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v.to_string())
}

impl MessageListenerConcurrently for Recorder {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        for msg in msgs {
            let origin = prop(msg, "origin");
            let seq = prop(msg, "seq");
            emit(json!({
                "kind": "recv",
                "topic": msg.topic().to_string(),
                "body": msg.body().map(|b| String::from_utf8_lossy(&b).into_owned()),
                "tags": msg.get_tags().map(|t| t.to_string()),
                "keys": prop(msg, "KEYS"),
                "props": { "seq": seq, "origin": origin },
                "queue_id": msg.queue_id(),
                "queue_offset": msg.queue_offset(),
                "msg_id": msg.msg_id().to_string(),
                "reconsume_times": msg.reconsume_times(),
            }));
            if let (Some(origin), Some(seq)) = (origin, seq.and_then(|s| s.parse::<usize>().ok())) {
                if let Ok(mut got) = self.0.got.lock() {
                    got.entry(origin).or_default().insert(seq);
                }
            }
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

async fn consume(runtime: Arc<ClientRuntime>, args: &Args) -> Result<bool, String> {
    let seen = Arc::new(Seen { want: args.expect.clone(), got: Mutex::new(HashMap::new()) });
    let mut builder = DefaultMQPushConsumer::builder(runtime)
        .consumer_group(args.group.clone())
        .name_server_addr(args.namesrv.clone())
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset);
    if let Some(hook) = acl_hook() {
        builder = builder.rpc_hook(Some(hook));
    }
    let mut consumer = builder.build();
    consumer.subscribe(args.topic.clone(), "*").await.map_err(|e| format!("subscribe: {}", chain(&e)))?;
    consumer.register_message_listener_concurrently(Recorder(Arc::clone(&seen)));
    consumer.start().await.map_err(|e| format!("consumer start: {}", chain(&e)))?;
    emit(json!({ "kind": "started" }));
    let started = Instant::now();
    while !seen.complete() && started.elapsed() < args.timeout {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let complete = seen.complete();
    // Late duplicates show up here.
    tokio::time::sleep(Duration::from_secs(1)).await;
    emit(json!({ "kind": "done", "complete": complete }));
    let _ = tokio::time::timeout(Duration::from_secs(10), consumer.shutdown()).await;
    Ok(complete)
}

// ---- main --------------------------------------------------------------------------------------------

/// The library's own runtime owner, telemetry guard (its logs go to stderr, level from `RUST_LOG`, default
/// warn) and client runtime; all three must live until the process exits.
struct ClientSetup {
    _owner: RuntimeOwner,
    _telemetry: rocketmq_observability::TelemetryRuntimeGuard,
    runtime: Arc<ClientRuntime>,
}

fn client_runtime() -> Result<ClientSetup, String> {
    let owner = RuntimeOwner::plan(RuntimeConfig { thread_name: "interop-client".to_string(), ..Default::default() })
        .map_err(|e| format!("runtime plan: {}", chain(&e)))?
        .build()
        .map_err(|e| format!("runtime build: {}", chain(&e)))?;
    let mut telemetry_config = rocketmq_observability::TelemetryBootstrapConfig::default();
    telemetry_config.logging.filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_string());
    telemetry_config.logging.console.ansi = false;
    let telemetry =
        rocketmq_observability::install_global(&telemetry_config).map_err(|e| format!("telemetry: {}", chain(&e)))?;
    let runtime = ClientRuntime::try_new(
        owner.root_context().component("client"),
        ClientRuntimeConfig::default(),
        telemetry.handle(),
    )
    .map_err(|e| format!("client runtime: {}", chain(&e)))?;
    Ok(ClientSetup { _owner: owner, _telemetry: telemetry, runtime })
}

#[tokio::main]
async fn main() {
    let code = match run().await {
        Ok(true) => 0,
        Ok(false) => 2,
        Err(e) => {
            emit(json!({ "kind": "error", "error": e }));
            eprintln!("interop-rust-client: {e}");
            1
        }
    };
    // Exit at once: the runner has what it needs, and a slow library shutdown must not hold it up.
    std::process::exit(code);
}

async fn run() -> Result<bool, String> {
    let args = parse_args()?;
    let setup = client_runtime()?;
    let runtime = Arc::clone(&setup.runtime);
    match args.action.as_str() {
        "consume" => consume(runtime, &args).await,
        "transaction" => {
            transaction(runtime, &args).await?;
            emit(json!({ "kind": "done", "errors": 0 }));
            Ok(true)
        }
        _ => {
            produce(runtime, &args).await?;
            emit(json!({ "kind": "done", "errors": 0 }));
            Ok(true)
        }
    }
}

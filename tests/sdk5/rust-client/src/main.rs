//! Scenarios with the Rust SDK (crates.io `rocketmq` 5.0.0) against our proxy:
//! `sdk5-rust-client <scenario> <proxy endpoint> <topic> <group>`. Exits non-zero with the reason on
//! stderr when something is wrong; prints one JSON line on success.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rocketmq::conf::{ClientOption, ProducerOption, SimpleConsumerOption};
use rocketmq::model::common::{FilterExpression, FilterType};
use rocketmq::model::message::{MessageBuilder, MessageView};
use rocketmq::model::transaction::{Transaction, TransactionResolution};
use rocketmq::{Producer, SimpleConsumer};

fn fail(msg: String) -> ! {
    eprintln!("FAIL: {msg}");
    std::process::exit(1);
}

fn check(cond: bool, msg: impl FnOnce() -> String) {
    if !cond {
        fail(msg());
    }
}

fn client_option(endpoint: &str) -> ClientOption {
    let mut o = ClientOption::default();
    o.set_access_url(endpoint);
    o.set_enable_tls(false);
    o
}

fn producer_option(topic: &str) -> ProducerOption {
    let mut o = ProducerOption::default();
    o.set_topics(vec![topic]);
    o
}

/// body -> (tag, keys, properties, delivery attempt, message group), acked, until `want` bodies or the deadline.
async fn consume(
    endpoint: &str,
    topic: &str,
    group: &str,
    want: usize,
    deadline: Duration,
) -> BTreeMap<String, (Option<String>, Vec<String>, HashMap<String, String>, i32, Option<String>)> {
    let mut opt = SimpleConsumerOption::default();
    opt.set_topics(vec![topic]);
    opt.set_consumer_group(group);
    let mut copt = client_option(endpoint);
    // The default 40 s would hold each receive that long on a broker with nothing left to give.
    copt.set_long_polling_timeout(Duration::from_secs(3));
    let mut c = SimpleConsumer::new(opt, copt).unwrap_or_else(|e| fail(format!("{e:?}")));
    c.start().await.unwrap_or_else(|e| fail(format!("consumer start: {e:?}")));
    let mut seen = BTreeMap::new();
    let end = Instant::now() + deadline;
    while Instant::now() < end && seen.len() < want {
        let msgs = match c
            .receive_with(topic, &FilterExpression::new(FilterType::Tag, "*"), 32, Duration::from_secs(15))
            .await
        {
            Ok(m) => m,
            // No message: the SDK reports the proxy's MESSAGE_NOT_FOUND as an error.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        for m in msgs {
            let body = String::from_utf8_lossy(m.body()).to_string();
            seen.insert(
                body,
                (
                    m.tag().map(str::to_string),
                    m.keys().to_vec(),
                    m.properties().clone(),
                    m.delivery_attempt(),
                    m.message_group().map(str::to_string),
                ),
            );
            c.ack(&m).await.unwrap_or_else(|e| fail(format!("ack: {e:?}")));
        }
    }
    let _ = c.shutdown().await;
    seen
}

async fn normal(endpoint: &str, topic: &str, group: &str) {
    let mut p = Producer::new(producer_option(topic), client_option(endpoint)).unwrap_or_else(|e| fail(format!("{e:?}")));
    p.start().await.unwrap_or_else(|e| fail(format!("producer start: {e:?}")));
    let n = 10;
    for i in 0..n {
        let m = MessageBuilder::builder()
            .set_topic(topic)
            .set_tag("RustTag")
            .set_keys(vec![format!("k{i}")])
            .set_properties(HashMap::from([("seq".to_string(), i.to_string())]))
            .set_body(format!("rust-{i}").into_bytes())
            .build()
            .unwrap_or_else(|e| fail(format!("{e:?}")));
        p.send(m).await.unwrap_or_else(|e| fail(format!("send {i}: {e:?}")));
    }
    let _ = p.shutdown().await;
    let seen = consume(endpoint, topic, group, n, Duration::from_secs(40)).await;
    check(seen.len() == n, || format!("received {} of {n}: {:?}", seen.len(), seen.keys()));
    for (body, (tag, keys, props, attempt, _)) in &seen {
        let i = body.trim_start_matches("rust-");
        check(tag.as_deref() == Some("RustTag"), || format!("{body}: tag {tag:?}"));
        check(keys == &vec![format!("k{i}")], || format!("{body}: keys {keys:?}"));
        check(props.get("seq").map(String::as_str) == Some(i), || format!("{body}: properties {props:?}"));
        check(*attempt == 1, || format!("{body}: delivery attempt {attempt}"));
    }
    println!("{{\"sent\": {n}, \"received\": {}}}", seen.len());
}

async fn simple_consumer(endpoint: &str, topic: &str, group: &str) -> SimpleConsumer {
    let mut opt = SimpleConsumerOption::default();
    opt.set_topics(vec![topic]);
    opt.set_consumer_group(group);
    let mut copt = client_option(endpoint);
    // The default 40 s would hold each receive that long on a broker with nothing left to give.
    copt.set_long_polling_timeout(Duration::from_secs(3));
    let mut c = SimpleConsumer::new(opt, copt).unwrap_or_else(|e| fail(format!("{e:?}")));
    c.start().await.unwrap_or_else(|e| fail(format!("consumer start: {e:?}")));
    c
}

/// Receives up to `batch` messages invisible for `invisible`; none on the SDK's error for "no message"
/// (it reports the proxy's MESSAGE_NOT_FOUND as one).
async fn receive(c: &SimpleConsumer, topic: &str, batch: i32, invisible: Duration) -> Vec<MessageView> {
    c.receive_with(topic, &FilterExpression::new(FilterType::Tag, "*"), batch, invisible)
        .await
        .unwrap_or_default()
}

/// 6 messages in each of 4 message groups; two consumers of one orderly group receive them one at a time
/// (invisible 2 s) and ack each, except the first delivery of `rust-0:0`. Prints the delivery log, which
/// run.py checks (send order per group, no gap, the held message back once and holding its group).
async fn fifo(endpoint: &str, topic: &str, group: &str) {
    let mut p = Producer::new(producer_option(topic), client_option(endpoint)).unwrap_or_else(|e| fail(format!("{e:?}")));
    p.start().await.unwrap_or_else(|e| fail(format!("producer start: {e:?}")));
    let groups: Vec<String> = (0..4).map(|g| format!("rust-{g}")).collect();
    for i in 0..6 {
        for g in &groups {
            let m = MessageBuilder::fifo_message_builder(topic, format!("{g}:{i}").into_bytes(), g.as_str())
                .build()
                .unwrap_or_else(|e| fail(format!("{e:?}")));
            p.send(m).await.unwrap_or_else(|e| fail(format!("send: {e:?}")));
        }
    }
    let _ = p.shutdown().await;
    let consumers = [simple_consumer(endpoint, topic, group).await, simple_consumer(endpoint, topic, group).await];
    let mut log = Vec::new();
    let mut acked = 0;
    let mut held = false;
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end && acked < 24 {
        for (n, c) in consumers.iter().enumerate() {
            for m in receive(c, topic, 1, Duration::from_secs(2)).await {
                let body = String::from_utf8_lossy(m.body()).to_string();
                let ack = held || body != "rust-0:0";
                held |= body == "rust-0:0";
                log.push(format!(
                    "{{\"c\": {n}, \"body\": \"{body}\", \"group\": \"{}\", \"attempt\": {}, \"ack\": {ack}}}",
                    m.message_group().unwrap_or_default(),
                    m.delivery_attempt()
                ));
                if ack {
                    c.ack(&m).await.unwrap_or_else(|e| fail(format!("ack: {e:?}")));
                    acked += 1;
                }
            }
        }
    }
    for c in consumers {
        let _ = c.shutdown().await;
    }
    println!("{{\"log\": [{}]}}", log.join(", "));
}

/// Receive and ack, and redelivery after the invisible time with delivery attempt 2 (this SDK version
/// has no change of invisible duration).
async fn redelivery(endpoint: &str, topic: &str, group: &str) {
    let mut p = Producer::new(producer_option(topic), client_option(endpoint)).unwrap_or_else(|e| fail(format!("{e:?}")));
    p.start().await.unwrap_or_else(|e| fail(format!("producer start: {e:?}")));
    for body in ["redeliver-me", "ack-me"] {
        let m = MessageBuilder::builder()
            .set_topic(topic)
            .set_body(body.as_bytes().to_vec())
            .build()
            .unwrap_or_else(|e| fail(format!("{e:?}")));
        p.send(m).await.unwrap_or_else(|e| fail(format!("send: {e:?}")));
    }
    let _ = p.shutdown().await;
    let c = simple_consumer(endpoint, topic, group).await;
    let mut first = BTreeMap::new();
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end && first.len() < 2 {
        for m in receive(&c, topic, 32, Duration::from_secs(2)).await {
            first.insert(String::from_utf8_lossy(m.body()).to_string(), m);
        }
    }
    check(first.len() == 2, || format!("first receive: {:?}", first.keys()));
    check(first.values().all(|m| m.delivery_attempt() == 1), || "first delivery attempt not 1".into());
    if let Some(m) = first.get("ack-me") {
        c.ack(m).await.unwrap_or_else(|e| fail(format!("ack: {e:?}")));
    }
    let t0 = Instant::now();
    let mut again = Vec::new();
    while t0.elapsed() < Duration::from_secs(30) && again.is_empty() {
        again = receive(&c, topic, 32, Duration::from_secs(10)).await;
    }
    let waited = t0.elapsed();
    let bodies: Vec<String> = again.iter().map(|m| String::from_utf8_lossy(m.body()).to_string()).collect();
    check(bodies == ["redeliver-me"], || format!("after the invisible time: {bodies:?}"));
    let attempt = again.first().map(|m| m.delivery_attempt()).unwrap_or_default();
    check(attempt == 2, || format!("redelivered with delivery attempt {attempt}"));
    for m in &again {
        c.ack(m).await.unwrap_or_else(|e| fail(format!("ack: {e:?}")));
    }
    let mut later = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        later.extend(receive(&c, topic, 32, Duration::from_secs(10)).await);
    }
    check(later.is_empty(), || format!("{} acked messages came back", later.len()));
    let _ = c.shutdown().await;
    println!("{{\"redelivered_after_ms\": {}, \"attempt\": {attempt}}}", waited.as_millis());
}

async fn transaction(endpoint: &str, topic: &str, group: &str) {
    let checked: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = checked.clone();
    let mut p = Producer::new_transaction_producer(
        producer_option(topic),
        client_option(endpoint),
        Box::new(move |_tx_id, message| {
            log.lock().unwrap_or_else(|e| e.into_inner()).push(String::from_utf8_lossy(message.body()).to_string());
            TransactionResolution::COMMIT
        }),
    )
    .unwrap_or_else(|e| fail(format!("{e:?}")));
    p.start().await.unwrap_or_else(|e| fail(format!("producer start: {e:?}")));
    let send = |body: &str| {
        MessageBuilder::transaction_message_builder(topic, body.as_bytes().to_vec())
            .build()
            .unwrap_or_else(|e| fail(format!("{e:?}")))
    };
    let t = p.send_transaction_message(send("rust-commit")).await.unwrap_or_else(|e| fail(format!("{e:?}")));
    t.commit().await.unwrap_or_else(|e| fail(format!("commit: {e:?}")));
    let t = p.send_transaction_message(send("rust-rollback")).await.unwrap_or_else(|e| fail(format!("{e:?}")));
    t.rollback().await.unwrap_or_else(|e| fail(format!("rollback: {e:?}")));
    let _open = p.send_transaction_message(send("rust-orphan")).await.unwrap_or_else(|e| fail(format!("{e:?}")));
    let mut seen = consume(endpoint, topic, group, 2, Duration::from_secs(60)).await;
    seen.extend(consume(endpoint, topic, group, 3, Duration::from_secs(3)).await);
    let got: Vec<&String> = seen.keys().collect();
    check(got == ["rust-commit", "rust-orphan"], || format!("received {got:?}"));
    let checked = checked.lock().unwrap_or_else(|e| e.into_inner()).clone();
    check(checked.contains(&"rust-orphan".to_string()), || format!("checker asked about {checked:?}"));
    let _ = p.shutdown().await;
    println!("{{\"received\": {}, \"checked\": {}}}", got.len(), checked.len());
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, scenario, endpoint, topic, group] = args.as_slice() else {
        fail(format!("usage: sdk5-rust-client <scenario> <endpoint> <topic> <group>, got {args:?}"));
    };
    match scenario.as_str() {
        "normal" => normal(endpoint, topic, group).await,
        "fifo" => fifo(endpoint, topic, group).await,
        "redelivery" => redelivery(endpoint, topic, group).await,
        "transaction" => transaction(endpoint, topic, group).await,
        other => fail(format!("unknown scenario {other}")),
    }
    std::process::exit(0);
}

//! Apache RocketMQ 5's metric names (`metricsExporterType = PROM`) through the real broker binary:
//! known sends, pulls, commits, a message sent back to the dead-letter queue and client heartbeats,
//! then the counters, the message size and rpc latency histograms, the lag gauges against the real
//! backlog and the connection gauges are read from `metricsPromExporterPort`. OTLP_GRPC is refused.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

use common::*;
use protocol::body::{ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
use protocol::header::{CommandHeader, ConsumerSendMsgBackRequestHeader};
use protocol::{request_code, response_code, LanguageCode, RemotingCommand};
use remoting::Client;

const TOPIC: &str = "ApacheT";
const GROUP: &str = "ApacheG";

/// One scraped sample: its labels and value.
#[derive(Debug)]
struct Sample {
    labels: BTreeMap<String, String>,
    value: f64,
}

/// GET /metrics of the PROM endpoint.
fn scrape(port: u16) -> String {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to PROM port");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// Parses the text format's samples by name (label values without escapes in this test).
fn parse(text: &str) -> BTreeMap<String, Vec<Sample>> {
    let mut out: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').expect("name and value");
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let labels = labels
            .split("\",")
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once("=\"").expect("key=\"value\"");
                (k.to_owned(), v.trim_end_matches('"').to_owned())
            })
            .collect();
        out.entry(name.to_owned()).or_default().push(Sample {
            labels,
            value: value.parse().expect("a number"),
        });
    }
    out
}

/// The one sample of `name` whose labels include `want`.
fn value(m: &BTreeMap<String, Vec<Sample>>, name: &str, want: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = m
        .get(name)
        .map(|v| {
            v.iter()
                .filter(|s| {
                    want.iter()
                        .all(|(k, val)| s.labels.get(*k).map(String::as_str) == Some(*val))
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(found.len(), 1, "{name} {want:?}: {found:?}");
    found[0].value
}

async fn invoke(client: &Client, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.expect("answered")
}

async fn commit(client: &Client, queue_id: i32, offset: i64) {
    let up = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", &queue_id.to_string())
        .with_ext("commitOffset", &offset.to_string());
    assert_eq!(invoke(client, up).await.code, response_code::SUCCESS);
}

/// A heartbeat of a Java 5.1.0 client (MQVersion ordinal 433) with a producer and a push consumer.
fn heartbeat() -> RemotingCommand {
    let data = HeartbeatData {
        client_id: "metrics-client".into(),
        producer_data_set: vec![ProducerData {
            group_name: "ApacheP".into(),
        }],
        consumer_data_set: vec![ConsumerData {
            group_name: GROUP.into(),
            subscription_data_set: vec![SubscriptionData {
                topic: TOPIC.into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    let mut cmd = RemotingCommand::request(request_code::HEART_BEAT)
        .with_body(protocol::body::to_json(&data));
    cmd.language = LanguageCode::Java;
    cmd.version = 433;
    cmd
}

#[test]
fn apache_metrics_count_the_real_sends_pulls_and_backlog() {
    let prom_port = free_port();
    let broker = Broker::start(&format!(
        "metricsExporterType = \"PROM\"\nmetricsPromExporterPort = {prom_port}\n\
         metricsPromExporterHost = \"127.0.0.1\"\n"
    ));
    // Shard 1's own broker where shards are brokers (`direct`), else the same address.
    let second = broker
        .other_shard_brokers()
        .first()
        .copied()
        .unwrap_or(broker.addr());
    run_local(async {
        let client = connect(broker.addr()).await;
        let other = connect(second).await;
        let hb = invoke(&client, heartbeat()).await;
        assert_eq!(hb.code, response_code::SUCCESS, "{:?}", hb.remark);
        let mut first_phys = None;
        for i in 0..10 {
            let r = send(&client, TOPIC, 0, &[b'a'; 100], "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{i}: {:?}", r.remark);
            if first_phys.is_none() {
                let id = r.ext("msgId").unwrap().to_owned();
                first_phys = Some(
                    protocol::message::msgid::parse_offset_msg_id(&id)
                        .unwrap()
                        .1,
                );
            }
        }
        for _ in 0..6 {
            let r = send(&other, TOPIC, 1, &[b'b'; 2000], "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        // One pull of queue 0 returns its 10 messages.
        let r = invoke(&client, pull_request(GROUP, TOPIC, 0, 0, 0, None)).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(decode_records(&r.body).len(), 10);
        // A long poll at the end of queue 0 parks until its suspend time runs out.
        let r = invoke(&client, pull_request(GROUP, TOPIC, 0, 10, 300, None)).await;
        assert_eq!(r.code, response_code::PULL_NOT_FOUND, "{:?}", r.remark);
        // Backlog: 10 - 4 on queue 0, 6 - 0 on queue 1.
        commit(&client, 0, 4).await;
        commit(&other, 1, 0).await;
        // The first message goes to %DLQ%ApacheG (delayLevel -1).
        let back = ConsumerSendMsgBackRequestHeader {
            offset: first_phys.unwrap(),
            group: GROUP.into(),
            delay_level: -1,
            origin_msg_id: None,
            origin_topic: Some(TOPIC.into()),
            unit_mode: None,
            max_reconsume_times: None,
        };
        let req = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
            .with_ext_fields(back.to_ext_fields());
        let r = invoke(&client, req).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        // The oldest unconsumed message is at least this old when scraped.
        glommio::timer::sleep(Duration::from_millis(300)).await;

        let text = scrape(prom_port);
        let m = parse(&text);
        let t = ("topic", TOPIC);
        let g = ("consumer_group", GROUP);
        let common = [("cluster", "TestCluster"), ("node_type", "broker")];
        for s in m.values().flatten() {
            for (k, v) in common {
                assert_eq!(s.labels.get(k).map(String::as_str), Some(v), "{s:?}");
            }
            assert!(s.labels.contains_key("node_id"), "{s:?}");
        }
        let normal = [t, ("message_type", "normal"), ("is_system", "false")];
        assert_eq!(value(&m, "rocketmq_messages_in_total", &normal), 16.0);
        let bytes_in = value(&m, "rocketmq_throughput_in_total", &normal);
        let bodies = (10 * 100 + 6 * 2000) as f64;
        assert!(
            bytes_in > bodies && bytes_in < bodies + 16.0 * 300.0,
            "{bytes_in}"
        );
        // One size observation per send: 10 below 1 KiB, 6 below 4 KiB.
        assert_eq!(value(&m, "rocketmq_message_size_count", &normal), 16.0);
        assert_eq!(value(&m, "rocketmq_message_size_sum", &normal), bytes_in);
        let le = |b: &'static str| [t, ("message_type", "normal"), ("le", b)];
        assert_eq!(
            value(&m, "rocketmq_message_size_bucket", &le("1024.0")),
            10.0
        );
        assert_eq!(
            value(&m, "rocketmq_message_size_bucket", &le("4096.0")),
            16.0
        );
        assert_eq!(value(&m, "rocketmq_message_size_bucket", &le("+Inf")), 16.0);

        assert_eq!(value(&m, "rocketmq_messages_out_total", &[t, g]), 10.0);
        let bytes_out = value(&m, "rocketmq_throughput_out_total", &[t, g]);
        assert!(
            bytes_out > 1000.0 && bytes_out < 1000.0 + 10.0 * 300.0,
            "{bytes_out}"
        );
        assert_eq!(
            value(&m, "rocketmq_send_to_dlq_messages_total", &[t, g]),
            1.0
        );

        // Lag against the real backlog.
        let lag_labels = [t, g, ("is_retry", "false"), ("is_system", "false")];
        assert_eq!(
            value(&m, "rocketmq_consumer_lag_messages", &lag_labels),
            12.0
        );
        assert_eq!(
            value(&m, "rocketmq_consumer_ready_messages", &lag_labels),
            12.0
        );
        assert_eq!(
            value(&m, "rocketmq_consumer_inflight_messages", &lag_labels),
            0.0
        );
        let lag_ms = value(&m, "rocketmq_consumer_lag_latency", &lag_labels);
        assert!((300.0..120_000.0).contains(&lag_ms), "{lag_ms}");
        assert_eq!(
            value(&m, "rocketmq_consumer_queueing_latency", &lag_labels),
            lag_ms
        );

        // Rpc latency: one histogram series per (request, response) code, counting every request.
        let rpc = |code: &'static str| {
            [
                ("request_code", code),
                ("response_code", "success"),
                ("protocol_type", "remoting"),
            ]
        };
        let count = |code| value(&m, "rocketmq_rpc_latency_count", &rpc(code));
        assert_eq!(count("send_message_v2"), 16.0);
        assert_eq!(count("pull_message"), 1.0);
        assert_eq!(count("update_consumer_offset"), 2.0);
        assert_eq!(count("consumer_send_msg_back"), 1.0);
        assert_eq!(count("heart_beat"), 1.0);
        let long_poll = [
            ("request_code", "pull_message"),
            ("is_long_polling", "true"),
        ];
        assert_eq!(value(&m, "rocketmq_rpc_latency_count", &long_poll), 1.0);
        let sum = value(&m, "rocketmq_rpc_latency_sum", &long_poll);
        assert!(sum >= 250.0, "the parked pull's time: {sum}");
        let mut not_parked = rpc("pull_message").to_vec();
        not_parked.push(("is_long_polling", "false"));
        assert_eq!(value(&m, "rocketmq_rpc_latency_count", &not_parked), 1.0);
        let mut inf = rpc("send_message_v2").to_vec();
        inf.push(("le", "+Inf"));
        assert_eq!(value(&m, "rocketmq_rpc_latency_bucket", &inf), 16.0);
        let mut le3s = rpc("send_message_v2").to_vec();
        le3s.push(("le", "3000.0"));
        assert_eq!(value(&m, "rocketmq_rpc_latency_bucket", &le3s), 16.0);

        // Clients, by Apache's labels.
        let producer = [("language", "java"), ("version", "v5_1_0")];
        assert_eq!(value(&m, "rocketmq_producer_connections", &producer), 1.0);
        let consumer = [g, ("language", "java"), ("consume_mode", "push")];
        assert_eq!(value(&m, "rocketmq_consumer_connections", &consumer), 1.0);

        assert!(value(&m, "rocketmq_topic_number", &[]) >= 2.0);
        assert!(value(&m, "rocketmq_consumer_group_number", &[]) >= 1.0);
        let disk = [("storage_type", "local"), ("storage_medium", "disk")];
        assert!(value(&m, "rocketmq_storage_flush_behind_bytes", &disk) >= 0.0);
        assert_eq!(
            value(&m, "rocketmq_storage_dispatch_behind_bytes", &disk),
            0.0
        );
        let reserve = value(&m, "rocketmq_storage_message_reserve_time", &disk);
        assert!((300.0..120_000.0).contains(&reserve), "{reserve}");
        assert!(value(&m, "rocketmq_storage_size", &disk) > 0.0);
        // The Grafana dashboard of deploy/ uses only names this endpoint serves.
        let dashboard = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../deploy/grafana/rocketmq5-broker.json"),
        )
        .unwrap();
        for word in dashboard.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("rocketmq_") {
                assert!(m.contains_key(word), "the dashboard's {word} is served");
            }
        }
        drop((client, other));
    });
}

#[test]
fn the_unbuilt_exporters_are_refused_at_start() {
    let mut broker = Broker::start("");
    broker.stop();
    let text = std::fs::read_to_string(&broker.config).unwrap();
    for kind in ["OTLP_GRPC", "LOG"] {
        std::fs::write(
            &broker.config,
            format!("{text}\nmetricsExporterType = \"{kind}\"\n"),
        )
        .unwrap();
        let (status, output) = broker.run_expecting_exit();
        assert!(!status.success(), "{kind}: {output}");
        assert!(
            output.contains("metricsExporterType") && output.contains("PROM"),
            "{kind}: the refusal names the key and what to use: {output}"
        );
    }
}

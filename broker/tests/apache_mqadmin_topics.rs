//! Apache RocketMQ 4.9.8's own `mqadmin` against our name server and a broker of two shard-brokers
//! (`broker-t-0`, `broker-t-1`): the topic commands (updateTopic, topicList, topicRoute,
//! topicStatus, deleteTopic), the message commands (sendMessage, printMsg, consumeMessage,
//! queryMsgById [-g -d], queryMsgByKey, queryMsgByUniqueKey), the group commands (consumerProgress
//! [-s true], consumerConnection, resetOffsetByTime, consumerStatus: GET_CONSUMER_RUNNING_INFO and
//! CONSUME_MESSAGE_DIRECTLY relayed to the client) and clusterRT, checking the figures they print. Skips (with a message) when the kit
//! or its Java is unavailable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use mqadmin_kit::{fields, line_with, lines_with, ready_kit, value_of, Admin, MQADMIN_4};
use protocol::body::{ConsumerData, HeartbeatData, SubscriptionData};
use protocol::{request_code, response_code, LanguageCode, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

/// Longest the whole test may run.
const TEST_LIMIT: Duration = Duration::from_secs(600);

const TOPIC: &str = "MqadminTopic";
const GROUP: &str = "MqadminGroup";
const CLIENT_ID: &str = "127.0.0.1@mqadmin-topics-test";
const QUEUES: i32 = 4;
/// Messages sent to each queue of broker-t-0 and of broker-t-1, and committed by GROUP on each.
const SENT: [i64; 2] = [5, 3];
const COMMITTED: [i64; 2] = [2, 1];
/// The message sendMessage sends to broker-t-1's queue 2.
const BODY: &str = "hello-from-mqadmin";
const KEY: &str = "MqadminKey";
const TAG: &str = "MqadminTag";

/// What the consumer answers GET_CONSUMER_RUNNING_INFO with (a Java client's ConsumerRunningInfo,
/// trimmed): it holds broker-t-0's queue 0.
const RUNNING_INFO: &str = r#"{"mqTable":{{"brokerName":"broker-t-0","queueId":0,"topic":"MqadminTopic"}:{"commitOffset":2}},"properties":{"PROP_CLIENT_VERSION":"V4_9_4","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_CONSUMEORDERLY":"false","PROP_THREADPOOL_CORE_SIZE":"20","PROP_CONSUMER_START_TIMESTAMP":"1700000000000"},"statusTable":{},"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"MqadminTopic"}]}"#;

/// The consumer's connection: takes the broker's pushes (offset resets) and answers the broker's
/// GET_CONSUMER_RUNNING_INFO calls (recording the client ids they named) and
/// CONSUME_MESSAGE_DIRECTLY calls.
struct Consumer {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ServerRequestHandler for Consumer {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        if request.code == request_code::CONSUME_MESSAGE_DIRECTLY {
            // The result names the shard-broker and the body of the message the broker sent.
            let bodies: Vec<String> = decode_records(&request.body)
                .iter()
                .map(|r| String::from_utf8_lossy(&r.body).into_owned())
                .collect();
            let result = format!(
                "{{\"autoCommit\":true,\"consumeResult\":\"CR_SUCCESS\",\"order\":false,\
                 \"remark\":\"{}:{}\",\"spentTimeMills\":3}}",
                request.ext("brokerName").unwrap_or_default(),
                bodies.join("+")
            );
            return Some(
                RemotingCommand::response(response_code::SUCCESS, None)
                    .with_body(bytes::Bytes::from(result)),
            );
        }
        if request.code != request_code::GET_CONSUMER_RUNNING_INFO {
            return None;
        }
        self.asked
            .lock()
            .unwrap()
            .push(request.ext("clientId").unwrap_or_default().to_owned());
        Some(
            RemotingCommand::response(response_code::SUCCESS, None)
                .with_body(bytes::Bytes::from_static(RUNNING_INFO.as_bytes())),
        )
    }
}

async fn invoke(client: &Client, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.expect("broker answers")
}

fn heartbeat() -> RemotingCommand {
    let data = HeartbeatData {
        client_id: CLIENT_ID.into(),
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
    cmd.version = 401;
    cmd
}

async fn commit(client: &Client, queue_id: i32, offset: i64) {
    let up = RemotingCommand::request(request_code::UPDATE_CONSUMER_OFFSET)
        .with_ext("consumerGroup", GROUP)
        .with_ext("topic", TOPIC)
        .with_ext("queueId", &queue_id.to_string())
        .with_ext("commitOffset", &offset.to_string());
    assert_eq!(invoke(client, up).await.code, response_code::SUCCESS);
}

/// The value after `key=` up to the next `,` or `}` in a printed MessageExt / properties map.
fn printed<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(&format!("{key}="))? + key.len() + 1;
    let rest = text.get(start..)?;
    let end = rest.find([',', '}', ' ']).unwrap_or(rest.len());
    rest.get(..end)
}

/// consumerProgress's rows of one shard-broker: (queue id, broker offset, consumer offset, diff).
fn progress_rows(out: &str, broker_name: &str) -> Vec<(i32, i64, i64, i64)> {
    let mut rows: Vec<(i32, i64, i64, i64)> = out
        .lines()
        .map(fields)
        .filter(|f| f.first() == Some(&TOPIC) && f.get(1) == Some(&broker_name))
        .map(|f| {
            let n = |i: usize| {
                f.get(i)
                    .and_then(|v| v.parse::<i64>().ok())
                    .expect("number")
            };
            (n(2) as i32, n(3), n(4), n(5))
        })
        .collect();
    rows.sort_unstable();
    rows
}

/// GROUP's online client, in a thread of its own (the test's executor blocks while mqadmin runs,
/// and the client must answer the broker meanwhile): connects to `addr`, heartbeats, then serves
/// until `stop`.
struct ConsumerThread {
    stop: Arc<AtomicBool>,
    asked: Arc<Mutex<Vec<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ConsumerThread {
    fn start(addr: SocketAddr) -> ConsumerThread {
        let stop = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (online, is_online) = std::sync::mpsc::channel();
        let (stop2, asked2) = (stop.clone(), asked.clone());
        let thread = std::thread::spawn(move || {
            run_local(async move {
                let handler = Rc::new(Consumer { asked: asked2 });
                let client = Client::connect_with_handler(addr, TIMEOUT, Some(handler))
                    .await
                    .unwrap();
                let r = invoke(&client, heartbeat()).await;
                online.send(r.code).unwrap();
                while !stop2.load(Ordering::Relaxed) {
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                }
            })
        });
        let code = is_online.recv_timeout(TIMEOUT).expect("consumer heartbeat");
        assert_eq!(code, response_code::SUCCESS);
        ConsumerThread {
            stop,
            asked,
            thread: Some(thread),
        }
    }
}

impl Drop for ConsumerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn apache_mqadmin_topic_message_and_group_commands() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let test_start = Instant::now();
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 2000\n"
    ));
    let addrs: [SocketAddr; 2] = [
        broker.addr(),
        SocketAddr::from(([127, 0, 0, 1], broker.addr().port() + 4)),
    ];
    let names = ["broker-t-0", "broker-t-1"];
    let admin = Admin { kit, ns };

    run_local(async {
        // updateTopic on the cluster: both shard-brokers are asked.
        let out = admin.run(&[
            "updateTopic",
            "-c",
            "TestCluster",
            "-t",
            TOPIC,
            "-r",
            &QUEUES.to_string(),
            "-w",
            &QUEUES.to_string(),
        ]);
        for addr in addrs {
            assert!(
                out.contains(&format!("create topic to {addr} success")),
                "updateTopic: {out}"
            );
        }

        // topicList (plain and with clusters) and topicRoute.
        let out = admin.run(&["topicList"]);
        assert!(out.lines().any(|l| l.trim() == TOPIC), "topicList: {out}");
        let out = admin.run(&["topicList", "-c"]);
        assert!(
            line_with(&out, &["TestCluster", TOPIC]).is_some(),
            "topicList -c: {out}"
        );
        let out = admin.run(&["topicRoute", "-t", TOPIC]);
        for (name, addr) in names.iter().zip(addrs) {
            assert!(out.contains(&format!("\"brokerName\":\"{name}\"")), "{out}");
            assert!(out.contains(&format!("\"{addr}\"")), "{out}");
        }
        assert_eq!(
            out.matches(&format!("\"readQueueNums\":{QUEUES}")).count(),
            2,
            "{out}"
        );

        // Traffic through each shard-broker; GROUP online, committing on each.
        let clients = [connect(addrs[0]).await, connect(addrs[1]).await];
        for (b, client) in clients.iter().enumerate() {
            for q in 0..QUEUES {
                for i in 0..SENT[b] {
                    let r = send(client, TOPIC, q, format!("m{b}-{q}-{i}").as_bytes(), "").await;
                    assert_eq!(r.code, response_code::SUCCESS, "send: {:?}", r.remark);
                }
            }
        }
        // Through broker-t-1: the control shard relays to a connection of another shard.
        let consumer = ConsumerThread::start(addrs[1]);
        // GROUP pulls broker-t-0's queue 0 (its consume rate), and commits on both.
        let r = invoke(&clients[0], pull_request(GROUP, TOPIC, 0, 0, 0, None)).await;
        assert_eq!(r.code, response_code::SUCCESS, "pull: {:?}", r.remark);
        for (b, client) in clients.iter().enumerate() {
            for q in 0..QUEUES {
                commit(client, q, COMMITTED[b]).await;
            }
        }

        // sendMessage to broker-t-1's queue 2, with a key and a tag.
        let out = admin.run(&[
            "sendMessage",
            "-t",
            TOPIC,
            "-p",
            BODY,
            "-k",
            KEY,
            "-c",
            TAG,
            "-b",
            "broker-t-1",
            "-i",
            "2",
        ]);
        let line = line_with(&out, &["broker-t-1", "SEND_OK"]).expect(&out);
        let f = fields(line);
        assert_eq!(f.get(1), Some(&"2"), "{line}");
        let uniq_key = f.get(3).expect("msgId").to_string();
        let total = |b: usize| SENT[b] * i64::from(QUEUES) + i64::from(b == 1);

        // topicStatus: every queue of both shard-brokers with its max offset.
        let out = admin.run(&["topicStatus", "-t", TOPIC]);
        for (b, name) in names.iter().enumerate() {
            for q in 0..QUEUES {
                let row = out
                    .lines()
                    .map(fields)
                    .find(|f| f.first() == Some(name) && f.get(1) == Some(&q.to_string().as_str()))
                    .unwrap_or_else(|| panic!("{name} queue {q} in: {out}"));
                let max = SENT[b] + i64::from(b == 1 && q == 2);
                assert_eq!(row.get(2), Some(&"0"), "{row:?}");
                assert_eq!(row.get(3), Some(&max.to_string().as_str()), "{row:?}");
            }
        }

        // printMsg: the message with its body; its offsetMsgId names broker-t-1's address.
        let out = admin.run(&["printMsg", "-t", TOPIC]);
        let line = line_with(&out, &[&format!("MSGID: {uniq_key}")]).expect(&out);
        assert!(line.ends_with(&format!("BODY: {BODY}")), "{line}");
        assert_eq!(printed(line, "storeHost"), Some(&*format!("/{}", addrs[1])));
        let offset_id = printed(line, "msgId").expect(line).to_string();
        for (b, name) in names.iter().enumerate() {
            assert_eq!(
                lines_with(&out, &["MSGID: ", &format!("brokerName={name},")]).len() as i64,
                total(b),
                "every message of {name}: {out}"
            );
        }

        // queryMsgById (offsetMsgId), queryMsgByUniqueKey, queryMsgByKey.
        let out = admin.run(&["queryMsgById", "-i", &offset_id]);
        assert_eq!(value_of(&out, "Topic", ':'), Some(TOPIC), "{out}");
        assert_eq!(
            value_of(&out, "Keys", ':'),
            Some(&*format!("[{KEY}]")),
            "{out}"
        );
        assert_eq!(
            value_of(&out, "Tags", ':'),
            Some(&*format!("[{TAG}]")),
            "{out}"
        );
        assert_eq!(value_of(&out, "Queue ID", ':'), Some("2"), "{out}");
        assert_eq!(
            value_of(&out, "Queue Offset", ':'),
            Some(&*SENT[1].to_string()),
            "{out}"
        );
        assert!(
            out.contains(&format!("Store Host:          {}", addrs[1])),
            "{out}"
        );
        // The online group has not committed past it (its track, from GET_CONSUME_STATS).
        assert!(
            line_with(&out, &[GROUP, "trackType=NOT_CONSUME_YET"]).is_some(),
            "{out}"
        );
        let out = admin.run(&["queryMsgByUniqueKey", "-t", TOPIC, "-i", &uniq_key]);
        assert_eq!(
            value_of(&out, "Keys", ':'),
            Some(&*format!("[{KEY}]")),
            "{out}"
        );
        assert_eq!(value_of(&out, "Queue ID", ':'), Some("2"), "{out}");
        let out = admin.run(&["queryMsgByKey", "-t", TOPIC, "-k", KEY]);
        let rows = lines_with(&out, &[&uniq_key]);
        assert_eq!(rows.len(), 1, "one message with the key: {out}");
        let f = fields(rows[0]);
        assert_eq!(
            f.get(1..3),
            Some(&["2", &*SENT[1].to_string()][..]),
            "{out}"
        );

        // consumeMessage: broker-t-1's queue 2 from the message's offset.
        let out = admin.run(&[
            "consumeMessage",
            "-t",
            TOPIC,
            "-b",
            "broker-t-1",
            "-i",
            "2",
            "-o",
            &SENT[1].to_string(),
        ]);
        assert!(
            line_with(
                &out,
                &[&format!("MSGID: {uniq_key}"), &format!("BODY: {BODY}")]
            )
            .is_some(),
            "consumeMessage: {out}"
        );

        // consumerProgress: every queue of both shard-brokers, the diff total and a consume rate. The
        // rate is over the last minute, which the JVM start-ups of the commands above can outlast
        // on a loaded machine: pull again first (offsets are committed, so the rows do not change).
        let r = invoke(&clients[0], pull_request(GROUP, TOPIC, 0, 0, 0, None)).await;
        assert_eq!(r.code, response_code::SUCCESS, "pull: {:?}", r.remark);
        let out = admin.run(&["consumerProgress", "-g", GROUP]);
        for (b, name) in names.iter().enumerate() {
            let rows = progress_rows(&out, name);
            let want: Vec<(i32, i64, i64, i64)> = (0..QUEUES)
                .map(|q| {
                    let max = SENT[b] + i64::from(b == 1 && q == 2);
                    (q, max, COMMITTED[b], max - COMMITTED[b])
                })
                .collect();
            assert_eq!(rows, want, "{name}: {out}");
        }
        let diff: i64 = (0..2)
            .map(|b| total(b) - COMMITTED[b] * i64::from(QUEUES))
            .sum();
        assert!(out.contains(&format!("Diff Total: {diff}")), "{out}");
        let tps: f64 = value_of(&out, "Consume TPS", ':')
            .and_then(|v| v.parse().ok())
            .expect(&out);
        assert!(tps > 0.0, "GROUP pulled: {out}");

        // consumerConnection: the online client and its subscription.
        let out = admin.run(&["consumerConnection", "-g", GROUP]);
        assert!(line_with(&out, &[CLIENT_ID, "JAVA"]).is_some(), "{out}");
        assert!(line_with(&out, &[TOPIC, "*"]).is_some(), "{out}");
        assert!(
            out.contains("CONSUME_PASSIVELY") || out.contains("PUSH"),
            "{out}"
        );

        // consumerStatus: the broker asks the client and mqadmin prints what it answered.
        let out = admin.run(&["consumerStatus", "-g", GROUP, "-i", CLIENT_ID]);
        assert_eq!(
            value_of(&out, "PROP_CLIENT_VERSION", ':'),
            Some("V4_9_4"),
            "{out}"
        );
        assert!(
            line_with(&out, &["Topic: MqadminTopic", "SubExpression: *"]).is_some(),
            "{out}"
        );
        assert_eq!(consumer.asked.lock().unwrap().as_slice(), [CLIENT_ID]);
        // consumerProgress -s true: the queue the client holds shows its address.
        let out = admin.run(&["consumerProgress", "-g", GROUP, "-s", "true"]);
        let holders: Vec<(String, String)> = out
            .lines()
            .map(fields)
            .filter(|f| f.first() == Some(&TOPIC))
            .map(|f| (format!("{}/{}", f[1], f[2]), f[5].to_owned()))
            .collect();
        assert_eq!(holders.len(), 2 * QUEUES as usize, "{out}");
        for (queue, ip) in holders {
            let want = if queue == "broker-t-0/0" {
                "127.0.0.1"
            } else {
                "N/A"
            };
            assert_eq!(ip, want, "{queue}: {out}");
        }
        assert_eq!(consumer.asked.lock().unwrap().len(), 2);
        // queryMsgById -g -d: the client is handed the message (through broker-t-1, which stores it).
        let out = admin.run(&[
            "queryMsgById",
            "-i",
            &offset_id,
            "-g",
            GROUP,
            "-d",
            CLIENT_ID,
        ]);
        assert!(
            out.contains(&format!("remark=broker-t-1:{BODY}")) && out.contains("CR_SUCCESS"),
            "{out}"
        );
        let out = admin.run(&["consumerStatus", "-g", GROUP, "-i", "127.0.0.1@nobody"]);
        assert!(out.contains("not online"), "{out}");

        // resetOffsetByTime to the start: every queue of both shard-brokers goes back to 0.
        let out = admin.run(&["resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0"]);
        for name in names {
            let rows = lines_with(&out, &[name]);
            assert_eq!(rows.len(), QUEUES as usize, "{name}: {out}");
            for row in rows {
                assert_eq!(fields(row).get(2), Some(&"0"), "{row}");
            }
        }
        let out = admin.run(&["consumerProgress", "-g", GROUP]);
        for name in names {
            assert!(
                progress_rows(&out, name).iter().all(|r| r.2 == 0),
                "{name} reset: {out}"
            );
        }

        // clusterRT: each shard-broker answers sends to the topic named after it, which routes to
        // that shard-broker alone.
        let out = admin.run(&["topicRoute", "-t", "broker-t-1"]);
        assert!(out.contains("\"brokerName\":\"broker-t-1\""), "{out}");
        assert!(!out.contains("broker-t-0"), "{out}");
        let out = admin.run_for(
            &["clusterRT", "-a", "3", "-i", "1", "-c", "TestCluster"],
            Duration::from_secs(12),
        );
        for name in names {
            let line = line_with(&out, &["TestCluster", &format!(" {name} ")]).expect(&out);
            let f = fields(line);
            assert_eq!(f.get(3..5), Some(&["3", "0"][..]), "{line}");
        }

        // deleteTopic from the cluster: gone from the brokers and the name server.
        let out = admin.run(&["deleteTopic", "-t", TOPIC, "-c", "TestCluster"]);
        assert!(
            out.contains(&format!(
                "delete topic [{TOPIC}] from cluster [TestCluster] success"
            )),
            "{out}"
        );
        assert!(out.contains("from NameServer success"), "{out}");
        let out = admin.run(&["topicList"]);
        assert!(!out.lines().any(|l| l.trim() == TOPIC), "topicList: {out}");
        drop(consumer);
    });
    assert!(
        test_start.elapsed() < TEST_LIMIT,
        "took {:?}",
        test_start.elapsed()
    );
}

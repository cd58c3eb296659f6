//! UPDATE_BROKER_CONFIG as operators send it with Apache RocketMQ 4.9.8's `mqadmin updateBrokerConfig`,
//! against a process of two shard-brokers: a key applied at run time is in force on every shard-broker
//! whichever address the update went to (GET_BROKER_CONFIG shows it; the store, the send, pull and
//! transaction check paths act on it at once: maxMessageSize, traceOn, autoCreateTopicEnable, the
//! pull size limits, long and short polling, the transaction check keys); a key that needs a restart
//! answers so, shows as pending and is in force after the restart; keys that may never change are
//! refused. Skips (with a message) when Apache's mqadmin is unavailable.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;
mod tx_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use mqadmin_kit::{ready_kit, value_of, Admin, MQADMIN_4};
use protocol::{request_code, response_code, RemotingCommand};

/// Longest the whole test may run.
const TEST_LIMIT: Duration = Duration::from_secs(600);

const TOPIC: &str = "RuntimeConfigTopic";

fn update(key: &str, value: &str) -> RemotingCommand {
    RemotingCommand::request(request_code::UPDATE_BROKER_CONFIG)
        .with_body(Bytes::from(format!("{key}={value}\n")))
}

async fn invoke(addr: SocketAddr, req: RemotingCommand) -> RemotingCommand {
    connect(addr).await.invoke(req, TIMEOUT).await.unwrap()
}

/// GET_BROKER_CONFIG of one shard-broker: (the config's `key`, the `pendingRestart` field).
async fn config_value(addr: SocketAddr, key: &str) -> (Option<String>, Option<String>) {
    let r = invoke(
        addr,
        RemotingCommand::request(request_code::GET_BROKER_CONFIG),
    )
    .await;
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    let body = String::from_utf8_lossy(&r.body).into_owned();
    let value = value_of(&body, key, '=').map(str::to_owned);
    (value, r.ext_fields.get("pendingRestart").map(str::to_owned))
}

/// Sends one message of `size` bytes to each shard-broker; their answer codes.
async fn send_everywhere(addrs: &[SocketAddr], size: usize) -> Vec<i32> {
    let mut codes = Vec::new();
    for addr in addrs {
        let client = connect(*addr).await;
        codes.push(send(&client, TOPIC, 0, &vec![b'x'; size], "").await.code);
    }
    codes
}

/// Waits (up to 30 s: the store checks its disk every 10 s) until every shard-broker answers `code`
/// to a small send.
async fn wait_sends_answer(addrs: &[SocketAddr], code: i32) {
    let started = Instant::now();
    loop {
        let codes = send_everywhere(addrs, 16).await;
        if codes.iter().all(|c| *c == code) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "sends still answer {codes:?}, not {code}"
        );
        glommio::timer::sleep(Duration::from_millis(500)).await;
    }
}

#[test]
fn runtime_keys_apply_on_every_shard_broker_and_the_rest_after_a_restart() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let started = Instant::now();
    let ns = start_namesrv_in_process();
    let mut broker = Broker::start(&format!("namesrvAddr = \"{ns}\"\n"));
    let shard1 = broker.other_shard_brokers()[0];
    let addrs = [broker.addr(), shard1];
    let admin = Admin { kit, ns };

    // A live key through shard-broker 1's address: in force on both, as Apache's getBrokerConfig shows.
    let out = admin.run(&[
        "updateBrokerConfig",
        "-b",
        &shard1.to_string(),
        "-k",
        "flushIntervalCommitLog",
        "-v",
        "250",
    ]);
    assert!(out.contains("success"), "updateBrokerConfig: {out}");
    for addr in addrs {
        let out = admin.run(&["getBrokerConfig", "-b", &addr.to_string()]);
        assert_eq!(
            value_of(&out, "flushIntervalCommitLog", '='),
            Some("250"),
            "{addr}: {out}"
        );
    }

    run_local(async {
        assert_eq!(
            send_everywhere(&addrs, 16).await,
            vec![response_code::SUCCESS; 2]
        );
        let r = invoke(addrs[0], update("flushIntervalCommitLog", "300")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let remark = r.remark.unwrap_or_default();
        assert!(
            remark.contains("applied: flushIntervalCommitLog")
                && remark.contains("every shard-broker of broker-t"),
            "{remark}"
        );

        // The store acts on a live key on every shard: below the disk's use, writes stop; above, resume.
        let r = invoke(addrs[1], update("diskSpaceWarningLevelRatio", "1")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        wait_sends_answer(&addrs, response_code::SERVICE_NOT_AVAILABLE).await;
        let r = invoke(addrs[0], update("diskSpaceWarningLevelRatio", "99")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        wait_sends_answer(&addrs, response_code::SUCCESS).await;

        // Consumer groups: not created on first use once autoCreateSubscriptionGroup is off.
        let r = invoke(addrs[1], update("autoCreateSubscriptionGroup", "false")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        for addr in addrs {
            let group = format!("NewGroup{}", addr.port());
            let r = invoke(addr, pull_request(&group, TOPIC, 0, 0, 0, None)).await;
            assert_eq!(
                r.code,
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                "{addr}"
            );
        }
        let r = invoke(addrs[0], update("autoCreateSubscriptionGroup", "true")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        for addr in addrs {
            let group = format!("NewGroup{}", addr.port());
            let r = invoke(addr, pull_request(&group, TOPIC, 0, 0, 0, None)).await;
            assert_eq!(r.code, response_code::SUCCESS, "{addr}: {:?}", r.remark);
        }

        // maxMessageSize is live: lowered, a larger send is refused at once on both shard-brokers.
        let r = invoke(addrs[1], update("maxMessageSize", "2048")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let remark = r.remark.unwrap_or_default();
        assert!(remark.contains("applied: maxMessageSize"), "{remark}");
        for addr in addrs {
            let (value, pending) = config_value(addr, "maxMessageSize").await;
            assert_eq!((value.as_deref(), pending), (Some("2048"), None), "{addr}");
        }
        assert_eq!(
            send_everywhere(&addrs, 4096).await,
            vec![response_code::MESSAGE_ILLEGAL; 2]
        );
        assert_eq!(
            send_everywhere(&addrs, 1024).await,
            vec![response_code::SUCCESS; 2]
        );
        // Raised past the start value (1 MiB): the store takes the larger records too.
        let r = invoke(addrs[0], update("maxMessageSize", "2097152")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(
            send_everywhere(&addrs, 1_500_000).await,
            vec![response_code::SUCCESS; 2]
        );
        let r = invoke(addrs[1], update("maxMessageSize", "2048")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);

        // A key that needs a restart: answered so, pending on every shard-broker, not yet in force.
        let r = invoke(addrs[1], update("defaultTopicQueueNums", "3")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let remark = r.remark.unwrap_or_default();
        assert!(
            remark.contains("takes effect after restart: defaultTopicQueueNums (in force: 4)"),
            "{remark}"
        );
        for addr in addrs {
            let (value, pending) = config_value(addr, "defaultTopicQueueNums").await;
            assert_eq!(value.as_deref(), Some("4"), "{addr}");
            assert_eq!(
                pending.as_deref(),
                Some("defaultTopicQueueNums=3\n"),
                "{addr}"
            );
        }
        // A later live update keeps it pending.
        let r = invoke(addrs[0], update("fileReservedTime", "48")).await;
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        let (value, pending) = config_value(addrs[1], "fileReservedTime").await;
        assert_eq!(value.as_deref(), Some("48"));
        assert_eq!(pending.as_deref(), Some("defaultTopicQueueNums=3\n"));

        // Keys that may never change are refused, and change nothing.
        for (key, value) in [("shardCount", "4"), ("storePathRootDir", "/tmp/x")] {
            let r = invoke(addrs[0], update(key, value)).await;
            assert_eq!(r.code, response_code::SYSTEM_ERROR, "{key}");
            assert!(r.remark.unwrap_or_default().contains(key), "{key}");
        }
    });

    // After a restart: every updated key in force, nothing pending.
    broker.stop();
    broker.restart();
    run_local(async {
        for addr in addrs {
            for (key, expected) in [
                ("maxMessageSize", "2048"),
                ("defaultTopicQueueNums", "3"),
                ("flushIntervalCommitLog", "300"),
                ("fileReservedTime", "48"),
                ("diskSpaceWarningLevelRatio", "99"),
            ] {
                let (value, pending) = config_value(addr, key).await;
                assert_eq!(value.as_deref(), Some(expected), "{addr} {key}");
                assert_eq!(pending, None, "{addr}");
            }
        }
        assert_eq!(
            send_everywhere(&addrs, 4096).await,
            vec![response_code::MESSAGE_ILLEGAL; 2]
        );
        assert_eq!(
            send_everywhere(&addrs, 1024).await,
            vec![response_code::SUCCESS; 2]
        );
    });
    assert!(
        started.elapsed() < TEST_LIMIT,
        "took {:?}",
        started.elapsed()
    );
}

/// One pull of `group` from `queue_id` at `offset`, suspended up to `suspend_ms`: the answer and how
/// long it took.
async fn timed_pull(
    client: &remoting::Client,
    group: &str,
    queue_id: i32,
    offset: i64,
    suspend_ms: i64,
) -> (RemotingCommand, Duration) {
    let req = pull_request(group, TOPIC, queue_id, offset, suspend_ms, None);
    let started = Instant::now();
    let r = client.invoke(req, TIMEOUT).await.unwrap();
    (r, started.elapsed())
}

/// How many records a pull of 32 from queue 0 at offset 0 answers on each shard-broker.
async fn pulled_counts(addrs: &[SocketAddr]) -> Vec<usize> {
    let mut counts = Vec::new();
    for addr in addrs {
        let client = connect(*addr).await;
        let (r, _) = timed_pull(&client, "RuntimePullGroup", 0, 0, 0).await;
        assert_eq!(r.code, response_code::SUCCESS, "{addr}: {:?}", r.remark);
        counts.push(decode_records(&r.body).len());
    }
    counts
}

/// Times an empty pull (queue 1 is never written) suspended up to `suspend_ms` on each shard-broker.
async fn empty_pull_times(addrs: &[SocketAddr], suspend_ms: i64) -> Vec<Duration> {
    let mut times = Vec::new();
    for addr in addrs {
        let client = connect(*addr).await;
        let (r, took) = timed_pull(&client, "RuntimePullGroup", 1, 0, suspend_ms).await;
        assert_eq!(
            r.code,
            response_code::PULL_NOT_FOUND,
            "{addr}: {:?}",
            r.remark
        );
        times.push(took);
    }
    times
}

#[test]
fn pull_trace_and_transaction_keys_apply_at_once() {
    let Some(kit) = ready_kit(MQADMIN_4) else {
        return;
    };
    let started = Instant::now();
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\ntransactionTimeOut = 3000\n"
    ));
    let shard1 = broker.other_shard_brokers()[0];
    let addrs = [broker.addr(), shard1];
    let admin = Admin { kit, ns };
    // Every update goes through shard-broker 1's address with Apache's mqadmin.
    let set = |key: &str, value: &str| {
        let out = admin.run(&[
            "updateBrokerConfig",
            "-b",
            &shard1.to_string(),
            "-k",
            key,
            "-v",
            value,
        ]);
        assert!(
            out.contains("success"),
            "updateBrokerConfig {key}={value}: {out}"
        );
    };

    run_local(async {
        for _ in 0..3 {
            assert_eq!(
                send_everywhere(&addrs, 16).await,
                vec![response_code::SUCCESS; 2]
            );
        }
        // traceOn: what the next send answer says.
        let trace_switch = |r: &RemotingCommand| r.ext("TRACE_ON").map(str::to_owned);
        for addr in addrs {
            let r = send(&connect(addr).await, TOPIC, 0, b"t", "").await;
            assert_eq!(trace_switch(&r).as_deref(), Some("true"), "{addr}");
        }
        set("traceOn", "false");
        for addr in addrs {
            let r = send(&connect(addr).await, TOPIC, 0, b"t", "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{addr}");
            assert_eq!(trace_switch(&r).as_deref(), Some("false"), "{addr}");
        }

        // autoCreateTopicEnable: a send to an unknown topic creates it (from TBW102) only while on.
        set("autoCreateTopicEnable", "false");
        for addr in addrs {
            let topic = format!("Unknown{}", addr.port());
            let r = send(&connect(addr).await, &topic, 0, b"t", "").await;
            assert_eq!(
                r.code,
                response_code::TOPIC_NOT_EXIST,
                "{addr}: {:?}",
                r.remark
            );
        }
        set("autoCreateTopicEnable", "true");
        for addr in addrs {
            let topic = format!("Unknown{}", addr.port());
            let r = send(&connect(addr).await, &topic, 0, b"t", "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{addr}: {:?}", r.remark);
        }

        // The pull size limits: a pull of 32 answers what they allow.
        assert_eq!(pulled_counts(&addrs).await, vec![5, 5]);
        set("maxTransferCountOnMessageInMemory", "2");
        assert_eq!(pulled_counts(&addrs).await, vec![2, 2]);
        set("maxTransferCountOnMessageInMemory", "32");
        set("maxTransferBytesOnMessageInMemory", "1");
        assert_eq!(pulled_counts(&addrs).await, vec![1, 1]);
        set("maxTransferBytesOnMessageInMemory", "262144");
        assert_eq!(pulled_counts(&addrs).await, vec![5, 5]);

        // Long polling: an empty pull parks for its own timeout; without, for shortPollingTimeMills.
        for took in empty_pull_times(&addrs, 1500).await {
            assert!(took >= Duration::from_millis(1400), "parked only {took:?}");
        }
        set("longPollingEnable", "false");
        set("shortPollingTimeMills", "100");
        for took in empty_pull_times(&addrs, 5000).await {
            assert!(took < Duration::from_millis(1000), "took {took:?}");
        }
        set("shortPollingTimeMills", "2500");
        for took in empty_pull_times(&addrs, 5000).await {
            assert!(
                took >= Duration::from_millis(2400) && took < Duration::from_millis(4500),
                "took {took:?}"
            );
        }
        set("longPollingEnable", "true");
        for took in empty_pull_times(&addrs, 1500).await {
            assert!(took >= Duration::from_millis(1400), "parked only {took:?}");
        }

        // Transactions (started with transactionTimeOut = 3000): the check service reads the keys
        // each round. Raised, an open transaction is not checked when 3 s are up ...
        let checks = std::rc::Rc::new(tx_support::Checks::default());
        let producer = tx_support::producer_at(addrs[0], &checks).await;
        set("transactionTimeOut", "60000");
        tx_support::prepare(&producer, "R1").await;
        glommio::timer::sleep(Duration::from_millis(4500)).await;
        assert!(
            checks.of("R1").is_empty(),
            "checked before the raised timeout"
        );
        // ... lowered, it is checked at once, and rolled back after transactionCheckMax checks.
        set("transactionCheckInterval", "500");
        set("transactionCheckMax", "1");
        set("transactionTimeOut", "500");
        let got = tx_support::wait_checks(&checks, "R1", 1, Duration::from_secs(5)).await;
        assert_eq!(got.len(), 1, "R1 checked once the timeout was lowered");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !broker
            .log()
            .contains("unresolved after 1 checks: rolled back")
            && Instant::now() < deadline
        {
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            broker
                .log()
                .contains("unresolved after 1 checks: rolled back"),
            "rolled back after one check:\n{}",
            broker.log()
        );
        assert_eq!(checks.of("R1").len(), 1, "no check after the maximum");
    });
    assert!(
        started.elapsed() < TEST_LIMIT,
        "took {:?}",
        started.elapsed()
    );
}

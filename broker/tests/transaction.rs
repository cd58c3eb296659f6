//! Transactional messages end to end against the broker binary, through the raw protocol: half messages
//! stay invisible, commit makes one visible once, rollback never, an unanswered transaction is checked
//! back (CHECK_TRANSACTION_STATE to the producer's connection) and rolled back after the last check, and
//! all of it survives a SIGKILL.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use protocol::body::{HeartbeatData, ProducerData};
use protocol::header::CommandHeader;
use protocol::message::msgid::parse_offset_msg_id;
use protocol::message::properties;
use protocol::message::record::{decode_view, sys_flag};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

const TOPIC: &str = "TxTopic";
const GROUP: &str = "tx-producer-group";
const COMMIT: i32 = 8;
const ROLLBACK: i32 = 12;

/// Keeps the CHECK_TRANSACTION_STATE requests the broker sends.
#[derive(Default)]
struct Checks(RefCell<Vec<RemotingCommand>>);

impl ServerRequestHandler for Checks {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        if request.code == request_code::CHECK_TRANSACTION_STATE {
            self.0.borrow_mut().push(request);
        }
        None
    }
}

impl Checks {
    fn of(&self, uniq: &str) -> Vec<RemotingCommand> {
        self.0
            .borrow()
            .iter()
            .filter(|c| c.ext("transactionId") == Some(uniq))
            .cloned()
            .collect()
    }
}

async fn producer(broker: &Broker, checks: &Rc<Checks>) -> Client {
    producer_at(broker.addr(), checks).await
}

/// A producer connected to `addr` (a broker, or one shard-broker of it).
async fn producer_at(addr: std::net::SocketAddr, checks: &Rc<Checks>) -> Client {
    let handler: Rc<dyn ServerRequestHandler> = checks.clone();
    let client = Client::connect_with_handler(addr, TIMEOUT, Some(handler))
        .await
        .expect("connect");
    let data = HeartbeatData {
        client_id: "tx-client".into(),
        producer_data_set: vec![ProducerData {
            group_name: GROUP.into(),
        }],
        ..HeartbeatData::default()
    };
    let hb = RemotingCommand::request(request_code::HEART_BEAT)
        .with_body(protocol::body::to_json(&data));
    assert_eq!(
        client.invoke(hb, TIMEOUT).await.unwrap().code,
        response_code::SUCCESS
    );
    client
}

/// Sends a prepared message; returns (commit-log offset, queue offset) of the half message.
async fn prepare(client: &Client, uniq: &str) -> (i64, i64) {
    let props = properties::encode([
        (properties::UNIQ_KEY, uniq),
        (properties::PRODUCER_GROUP, GROUP),
        (properties::TRANSACTION_PREPARED, "true"),
    ]);
    let mut header = send_header(TOPIC, 0, &props);
    header.a = GROUP.into();
    header.f = sys_flag::TRANSACTION_PREPARED;
    let req = RemotingCommand::request(request_code::SEND_MESSAGE_V2)
        .with_ext_fields(header.to_ext_fields())
        .with_body(bytes::Bytes::from(format!("body of {uniq}")));
    let r = client.invoke(req, TIMEOUT).await.unwrap();
    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
    let (_, phys) = parse_offset_msg_id(r.ext("msgId").unwrap()).unwrap();
    (phys, r.ext("queueOffset").unwrap().parse().unwrap())
}

async fn end(
    client: &Client,
    uniq: &str,
    phys: i64,
    queue_offset: i64,
    kind: i32,
    from_check: bool,
) -> i32 {
    let req = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext("producerGroup", GROUP)
        .with_ext("tranStateTableOffset", &queue_offset.to_string())
        .with_ext("commitLogOffset", &phys.to_string())
        .with_ext("commitOrRollback", &kind.to_string())
        .with_ext("fromTransactionCheck", &from_check.to_string())
        .with_ext("msgId", uniq)
        .with_ext("transactionId", uniq);
    client.invoke(req, TIMEOUT).await.unwrap().code
}

/// The messages consumers can see in the topic's queue 0 (of the broker `client` is connected to),
/// by UNIQ_KEY.
async fn visible(client: &Client) -> Vec<String> {
    pull_all(client, TOPIC, 0)
        .await
        .iter()
        .map(|r| {
            assert_eq!(
                sys_flag::transaction_type(r.sys_flag),
                sys_flag::TRANSACTION_COMMIT
            );
            assert_eq!(properties::get(&r.properties, properties::REAL_TOPIC), None);
            properties::get(&r.properties, properties::UNIQ_KEY)
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Waits (bounded) until `uniq` was checked `times` times.
async fn wait_checks(
    checks: &Checks,
    uniq: &str,
    times: usize,
    limit: Duration,
) -> Vec<RemotingCommand> {
    let start = Instant::now();
    while checks.of(uniq).len() < times && start.elapsed() < limit {
        glommio::timer::sleep(Duration::from_millis(50)).await;
    }
    checks.of(uniq)
}

fn check_offsets(check: &RemotingCommand) -> (i64, i64) {
    (
        check.ext("commitLogOffset").unwrap().parse().unwrap(),
        check.ext("tranStateTableOffset").unwrap().parse().unwrap(),
    )
}

#[test]
fn commit_rollback_check_back_and_restart() {
    let mut broker = Broker::start(
        "flushDiskType = \"SYNC_FLUSH\"\ntransactionTimeOut = 600\n\
         transactionCheckInterval = 800\ntransactionCheckMax = 2\n",
    );
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer(&broker, &checks).await;
        // Commit: visible once, even when the commit is repeated.
        let (phys, qo) = prepare(&client, "U1").await;
        assert!(
            visible(&client).await.is_empty(),
            "a half message is not visible"
        );
        assert_eq!(
            end(&client, "U1", phys, qo, COMMIT, false).await,
            response_code::SUCCESS
        );
        assert_eq!(
            end(&client, "U1", phys, qo, COMMIT, false).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1"]);
        let committed = pull_all(&client, TOPIC, 0).await;
        assert_eq!(&committed[0].body[..], b"body of U1");
        assert_eq!(committed[0].prepared_transaction_offset, phys);
        // Rollback: never visible, and a commit after it changes nothing.
        let (phys2, qo2) = prepare(&client, "U2").await;
        assert_eq!(
            end(&client, "U2", phys2, qo2, ROLLBACK, false).await,
            response_code::SUCCESS
        );
        assert_eq!(
            end(&client, "U2", phys2, qo2, COMMIT, false).await,
            response_code::SUCCESS
        );
        // Bad offsets and a foreign group are refused.
        assert_ne!(
            end(&client, "X", phys2 + 1, 0, COMMIT, false).await,
            response_code::SUCCESS
        );
        // Unknown, then commit on the check-back (answering with the offsets the check named).
        let (phys3, qo3) = prepare(&client, "U3").await;
        assert_eq!(
            end(&client, "U3", phys3, qo3, 0, false).await,
            response_code::SUCCESS
        );
        let got = wait_checks(&checks, "U3", 1, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 1, "U3 checked back once within 10 s");
        let shown = decode_view(&got[0].body, true).expect("the check body is a message");
        assert_eq!((shown.topic, shown.queue_id), (TOPIC, 0));
        assert_eq!(shown.body, b"body of U3");
        let (cphys, cqo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "U3", cphys, cqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // Never answered: checked transactionCheckMax (2) times, then rolled back.
        prepare(&client, "U4").await;
        let got = wait_checks(&checks, "U4", 2, Duration::from_secs(15)).await;
        assert_eq!(got.len(), 2);
        glommio::timer::sleep(Duration::from_millis(2500)).await;
        assert_eq!(checks.of("U4").len(), 2, "no check after the maximum");
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // A late commit of a rolled-back transaction changes nothing.
        let (lphys, lqo) = check_offsets(&got[1]);
        assert_eq!(
            end(&client, "U4", lphys, lqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        // Left open across a SIGKILL.
        prepare(&client, "U5").await;
    });
    assert!(broker
        .log()
        .contains("unresolved after 2 checks: rolled back"));
    broker.kill9();
    broker.restart();
    // The port answers once any shard listens: wait for the half queue's shard to report.
    let start = Instant::now();
    while !broker.log().contains("transactions: 4 resolved") && start.elapsed() < TIMEOUT {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        broker.log().contains("transactions: 4 resolved"),
        "the op queue is read back at start:\n{}",
        broker.log()
    );
    run_local(async {
        let checks = Rc::new(Checks::default());
        let client = producer(&broker, &checks).await;
        assert_eq!(visible(&client).await, vec!["U1", "U3"]);
        let got = wait_checks(&checks, "U5", 1, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 1, "U5 checked back after the restart");
        let (cphys, cqo) = check_offsets(&got[0]);
        assert_eq!(
            end(&client, "U5", cphys, cqo, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&client).await, vec!["U1", "U3", "U5"]);
        // Nothing resolved is checked again.
        glommio::timer::sleep(Duration::from_millis(2000)).await;
        for uniq in ["U1", "U2", "U3", "U4"] {
            assert!(
                checks.of(uniq).is_empty(),
                "{uniq} was checked after the restart"
            );
        }
    });
    broker.kill9();
}

#[test]
fn a_commit_through_another_shard_broker_reaches_the_half_messages_shard() {
    // A producer answers a check-back on the connection that asked, which may be another
    // shard-broker's than the one holding the half message: the commit must still find it.
    let broker = Broker::start("");
    let checks = Rc::new(Checks::default());
    let shard1 = std::net::SocketAddr::from(([127, 0, 0, 1], shard_broker_port(broker.port, 1)));
    run_local(async {
        let on_shard1 = producer_at(shard1, &checks).await;
        let on_shard0 = producer(&broker, &checks).await;
        let (phys, queue_offset) = prepare(&on_shard1, "tx-cross").await;
        assert_eq!(storage_shard(phys), 1, "the half lives on shard-broker 1");
        assert_eq!(
            end(&on_shard0, "tx-cross", phys, queue_offset, COMMIT, true).await,
            response_code::SUCCESS
        );
        assert_eq!(visible(&on_shard1).await, vec!["tx-cross".to_owned()]);
        assert!(visible(&on_shard0).await.is_empty());
    });
}

/// The shard a physical offset names (bits 48..62).
fn storage_shard(phys: i64) -> i64 {
    (phys >> 48) & 0x7fff
}

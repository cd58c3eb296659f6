//! Transaction helpers shared by the tests: a producer connection that records the broker's
//! CHECK_TRANSACTION_STATE requests, half messages, END_TRANSACTION, and what consumers can see.
#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::body::{HeartbeatData, ProducerData};
use protocol::header::CommandHeader;
use protocol::message::msgid::parse_offset_msg_id;
use protocol::message::properties;
use protocol::message::record::sys_flag;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::{Client, ServerRequestHandler};

use crate::common::*;

pub const TOPIC: &str = "TxTopic";
pub const GROUP: &str = "tx-producer-group";
pub const COMMIT: i32 = 8;
pub const ROLLBACK: i32 = 12;

/// Keeps the CHECK_TRANSACTION_STATE requests the broker sends.
#[derive(Default)]
pub struct Checks(RefCell<Vec<RemotingCommand>>);

impl ServerRequestHandler for Checks {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        if request.code == request_code::CHECK_TRANSACTION_STATE {
            self.0.borrow_mut().push(request);
        }
        None
    }
}

impl Checks {
    pub fn of(&self, uniq: &str) -> Vec<RemotingCommand> {
        self.0
            .borrow()
            .iter()
            .filter(|c| c.ext("transactionId") == Some(uniq))
            .cloned()
            .collect()
    }
}

pub async fn producer(broker: &Broker, checks: &Rc<Checks>) -> Client {
    producer_at(broker.addr(), checks).await
}

/// A producer connected to `addr` (a broker, or one shard-broker of it).
pub async fn producer_at(addr: std::net::SocketAddr, checks: &Rc<Checks>) -> Client {
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
pub async fn prepare(client: &Client, uniq: &str) -> (i64, i64) {
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

pub async fn end(
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
pub async fn visible(client: &Client) -> Vec<String> {
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
pub async fn wait_checks(
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

pub fn check_offsets(check: &RemotingCommand) -> (i64, i64) {
    (
        check.ext("commitLogOffset").unwrap().parse().unwrap(),
        check.ext("tranStateTableOffset").unwrap().parse().unwrap(),
    )
}

//! Queries on a slave: VIEW_MESSAGE_BY_ID and QUERY_MESSAGE (by key, within a time range) find the
//! replicated messages, with the same bytes the master holds (issue 7: "on masters and slaves").

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod ha_common;

use std::time::{Duration, Instant};

use common::*;
use ha_common::*;
use protocol::{request_code, response_code, RemotingCommand};

const TOPIC: &str = "HaQueryTopic";

fn view(phys: i64) -> RemotingCommand {
    RemotingCommand::request(request_code::VIEW_MESSAGE_BY_ID).with_ext("offset", &phys.to_string())
}

fn query(key: &str, begin: i64, end: i64) -> RemotingCommand {
    RemotingCommand::request(request_code::QUERY_MESSAGE)
        .with_ext("topic", TOPIC)
        .with_ext("key", key)
        .with_ext("maxNum", "32")
        .with_ext("beginTimestamp", &begin.to_string())
        .with_ext("endTimestamp", &end.to_string())
}

#[test]
fn slave_answers_view_by_id_and_query_by_key() {
    let master = Broker::start(&master_extra("ASYNC_MASTER", "ASYNC_FLUSH"));
    let slave = Broker::start(&slave_extra(Some(&master), None));
    run_local(async {
        wait_slave_connected(master.addr(), Duration::from_secs(60)).await;
        let before = now_ms() - 1_000;
        let c = connect(master.addr()).await;
        let mut sent = Vec::new();
        for i in 0..8 {
            let key = format!("order-{i}");
            let body = format!("query me {i}").into_bytes();
            let props = format!("KEYS\u{1}{key}\u{2}");
            let r = send(&c, TOPIC, i % 4, &body, &props).await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            let msg_id = r.ext("msgId").expect("msgId").to_owned();
            sent.push((key, body, phys_of_msg_id(&msg_id)));
        }
        let after = now_ms() + 1_000;
        wait_caught_up(master.addr(), slave.addr(), 2, Duration::from_secs(60)).await;

        let m = connect(master.addr()).await;
        let s = connect(slave.addr()).await;
        for (key, body, phys) in &sent {
            let on_master = m
                .invoke(view(*phys), TIMEOUT)
                .await
                .expect("view on master");
            let on_slave = s.invoke(view(*phys), TIMEOUT).await.expect("view on slave");
            assert_eq!(
                on_slave.code,
                response_code::SUCCESS,
                "{:?}",
                on_slave.remark
            );
            assert_eq!(on_slave.body, on_master.body, "the slave's record differs");
            assert!(
                on_slave
                    .body
                    .windows(body.len())
                    .any(|w| w == body.as_slice()),
                "the record viewed on the slave lacks its body"
            );

            // The slave's index is built from replicated records; give it a moment to be dispatched.
            let start = Instant::now();
            loop {
                let r = s
                    .invoke(query(key, before, after), TIMEOUT)
                    .await
                    .expect("query");
                if r.code == response_code::SUCCESS {
                    assert!(
                        r.body.windows(body.len()).any(|w| w == body.as_slice()),
                        "query by key {key} on the slave returned other records"
                    );
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "query by key {key} on the slave: code {} {:?}",
                    r.code,
                    r.remark
                );
                glommio::timer::sleep(Duration::from_millis(200)).await;
            }
            // Outside the time range nothing is found.
            let r = s
                .invoke(query(key, after + 60_000, after + 120_000), TIMEOUT)
                .await
                .expect("query");
            assert_eq!(r.code, response_code::QUERY_NOT_FOUND);
        }
    });
}

//! Delivery accuracy of delayed messages under load (ignored by default; run with
//! `cargo test -p broker --release --test delay_accuracy -- --ignored --nocapture`): while producers
//! keep the broker busy with plain sends, other producers send level-1 (1 s) messages for a few
//! seconds; every delayed message must arrive once, never early. Prints lateness percentiles
//! (delivered copy's store time minus the parked copy's store time + 1 s).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use common::*;
use delay_support::*;
use protocol::message::properties;
use protocol::response_code;

const LOAD_CONNECTIONS: usize = 8;
const DELAY_CONNECTIONS: usize = 4;
const IN_FLIGHT: usize = 16;
const SEND_FOR: Duration = Duration::from_secs(4);

#[test]
#[ignore]
fn delayed_delivery_accuracy_under_load() {
    let broker = Broker::start(
        "messageDelayLevel = \"1s 2s 3s\"\nmappedFileSizeCommitLog = 67108864\nshardCount = 2\n",
    );
    let sent: Rc<RefCell<Vec<String>>> = Rc::default();
    let plain: Rc<RefCell<usize>> = Rc::default();
    run_local(async {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..LOAD_CONNECTIONS + DELAY_CONNECTIONS {
            let client = connect(broker.addr()).await;
            for w in 0..IN_FLIGHT {
                let (client, sent, plain) = (client.clone(), sent.clone(), plain.clone());
                let delayed = c >= LOAD_CONNECTIONS;
                tasks.push(glommio::spawn_local(async move {
                    let mut i = 0;
                    // Load runs a little longer than the delayed sends, so deliveries meet busy stores.
                    let run_for = if delayed {
                        SEND_FOR
                    } else {
                        SEND_FOR + Duration::from_secs(2)
                    };
                    while start.elapsed() < run_for {
                        i += 1;
                        let queue = ((c * IN_FLIGHT + w) % 4) as i32;
                        if delayed {
                            let key = format!("d-{c}-{w}-{i}");
                            let r = send(
                                &client,
                                "Delayed",
                                queue,
                                key.as_bytes(),
                                &delayed_props(1, &key),
                            )
                            .await;
                            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                            sent.borrow_mut().push(key);
                        } else {
                            let r = send(&client, "Load", queue, &[b'x'; 128], "").await;
                            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                            *plain.borrow_mut() += 1;
                        }
                    }
                }));
            }
        }
        for t in tasks {
            t.await;
        }
        let client = connect(broker.addr()).await;
        let total = sent.borrow().len();
        let parked = wait_records(
            &client,
            "SCHEDULE_TOPIC_XXXX",
            0,
            total,
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(parked.len(), total);
        let due: HashMap<String, i64> = parked
            .iter()
            .map(|(r, _)| {
                let key = properties::get(&r.properties, "UNIQ_KEY")
                    .unwrap()
                    .to_owned();
                (key, r.store_timestamp + 1000)
            })
            .collect();
        let mut late = Vec::with_capacity(total);
        let mut keys = Vec::with_capacity(total);
        for q in 0..4 {
            for r in pull_from(&client, "Delayed", q, 0).await {
                let key = properties::get(&r.properties, "UNIQ_KEY")
                    .unwrap()
                    .to_owned();
                late.push(r.store_timestamp - due[&key]);
                keys.push(key);
            }
        }
        keys.sort_unstable();
        let delivered = keys.len();
        keys.dedup();
        assert_eq!(delivered, total, "every delayed message delivered");
        assert_eq!(keys.len(), total, "none twice");
        late.sort_unstable();
        assert!(late[0] >= 0, "delivered {} ms early", -late[0]);
        let p = |q: f64| late[((late.len() - 1) as f64 * q) as usize];
        println!(
            "{total} delayed messages ({:.0}/s) among {} plain sends ({:.0}/s): lateness p50 {} ms, p90 {} ms, p99 {} ms, p99.9 {} ms, max {} ms; within 100 ms: {:.2}%",
            total as f64 / SEND_FOR.as_secs_f64(),
            plain.borrow(),
            *plain.borrow() as f64 / (SEND_FOR.as_secs_f64() + 2.0),
            p(0.5),
            p(0.9),
            p(0.99),
            p(0.999),
            p(1.0),
            late.iter().filter(|l| **l <= 100).count() as f64 * 100.0 / total as f64
        );
    });
}

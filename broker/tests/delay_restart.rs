//! A broker restart (SIGTERM or SIGKILL) in the middle of delays (SYNC_FLUSH): messages delivered before the stop
//! are not delivered again, messages not yet due are delivered once after the restart, none early.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod delay_support;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use delay_support::*;
use protocol::message::properties;
use protocol::response_code;

const CONFIG: &str = "messageDelayLevel = \"1s 2s 12s\"\nflushDiskType = \"SYNC_FLUSH\"\n";
const TOPIC: &str = "DelayRestart";
const EACH: usize = 12;

/// key -> store timestamps of its deliveries, over the topic's 4 queues.
async fn deliveries(client: &remoting::Client) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for q in 0..4 {
        for r in pull_from(client, TOPIC, q, 0).await {
            let key = properties::get(&r.properties, "UNIQ_KEY")
                .unwrap()
                .to_owned();
            out.entry(key).or_default().push(r.store_timestamp);
        }
    }
    out
}

async fn wait_deliveries(
    client: &remoting::Client,
    count: usize,
    limit: Duration,
) -> BTreeMap<String, Vec<i64>> {
    let start = std::time::Instant::now();
    loop {
        let d = deliveries(client).await;
        if d.values().map(Vec::len).sum::<usize>() >= count || start.elapsed() > limit {
            return d;
        }
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
}

fn restart_mid_delay(kill: bool) {
    let mut broker = Broker::start(CONFIG);
    let sent_at = now_ms();
    run_local(async {
        let client = connect(broker.addr()).await;
        for i in 0..EACH {
            for (level, prefix) in [(1, "soon"), (3, "late")] {
                let key = format!("{prefix}-{i}");
                let r = send(
                    &client,
                    TOPIC,
                    (i % 4) as i32,
                    key.as_bytes(),
                    &delayed_props(level, &key),
                )
                .await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
            }
        }
        let d = wait_deliveries(&client, EACH, Duration::from_secs(20)).await;
        assert_eq!(d.len(), EACH, "level 1 delivered before the stop: {d:?}");
        assert!(
            d.keys().all(|k| k.starts_with("soon")),
            "level 3 not yet due"
        );
        // Progress is persisted shortly after delivery (every 500 ms); wait for the file.
        let path = broker.dir.join("store/config/delayOffset-0.json");
        let want = format!("1:{EACH}");
        for _ in 0..200 {
            if std::fs::read_to_string(&path)
                .unwrap_or_default()
                .contains(&want)
            {
                break;
            }
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert!(std::fs::read_to_string(&path)
            .unwrap_or_default()
            .contains(&want));
    });
    assert!(
        now_ms() - sent_at < 12_000,
        "the stop must come before level 3 is due"
    );
    if kill {
        broker.kill9();
    } else {
        assert!(broker.stop().success(), "{}", broker.log());
    }
    broker.restart();
    run_local(async {
        let client = connect(broker.addr()).await;
        let d = wait_deliveries(&client, 2 * EACH, Duration::from_secs(30)).await;
        // Anything delivered twice would show up a little later: look again.
        glommio::timer::sleep(Duration::from_millis(1500)).await;
        let d2 = deliveries(&client).await;
        assert_eq!(d.len(), 2 * EACH, "every message delivered: {d:?}");
        for (key, times) in &d2 {
            assert_eq!(times.len(), 1, "{key} delivered {} times", times.len());
        }
        for (key, times) in &d2 {
            if key.starts_with("late") {
                assert!(times[0] >= sent_at + 12_000, "{key} delivered before due");
            }
        }
    });
}

#[test]
fn sigterm_mid_delay_neither_loses_nor_repeats() {
    restart_mid_delay(false);
}

#[test]
fn sigkill_mid_delay_neither_loses_nor_repeats() {
    restart_mid_delay(true);
}

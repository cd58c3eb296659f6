//! `loadgen orderly`: sends with a sharding key, each key always to the same queue and its sequence
//! numbers one after another (the next only once the previous was acknowledged, retrying until then);
//! an orderly consumer locks the queues (LOCK_BATCH_MQ, renewed as Apache's orderly push consumer does)
//! and consumes only queues it holds. Verdict: each key's sequence numbers arrive in order without a
//! gap up to the last acknowledged one (duplicates allowed: at-least-once).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::Args;
use client::broker_api::{heartbeat, lock_batch_mq, update_consumer_offset};
use client::{BrokerConnections, Message, MessageQueue, PullStatus};
use protocol::message::properties;
use serde::Serialize;

use super::{
    body, client_id, count_error, each_record, heartbeat_data, long_pull, on_executor, setup,
    wait_until, write_json, Pacer, WorkloadArgs,
};

const SEQ_PROPERTY: &str = "soakSeq";
const KEY_PREFIX: &str = "ord";

#[derive(Args, Debug, Clone)]
pub struct OrderlyArgs {
    #[command(flatten)]
    pub common: WorkloadArgs,
    /// Sharding keys; key k goes to write queue k % queues.
    #[arg(long, default_value_t = 16)]
    pub keys: u64,
    #[arg(long, default_value = "soak_orderly_consumer")]
    pub consumer_group: String,
}

#[derive(Debug, Default, Serialize)]
pub struct OrderlyReport {
    pub keys: u64,
    /// Messages acknowledged, and send attempts that failed (each retried until acknowledged).
    pub sent: u64,
    pub send_failures: u64,
    /// Why sends failed: error label -> count.
    pub errors: BTreeMap<String, u64>,
    pub delivered: u64,
    /// A key's message arrived after a later one was missing (must be 0).
    pub gaps: u64,
    pub gap_examples: Vec<String>,
    /// A sequence number at or below one already consumed (a redelivery or a retried send).
    pub duplicates: u64,
    /// Acknowledged messages never consumed (must be 0).
    pub missing: u64,
    pub lock_failures: u64,
    pub offset_resets: u64,
    /// Records a pull returned that did not decode (pulled again).
    pub undecodable_records: u64,
    pub settled_after_s: f64,
    pub ok: bool,
}

/// What the consumer saw of each key.
#[derive(Default)]
struct Seen {
    last: BTreeMap<u64, i64>,
    delivered: u64,
    gaps: u64,
    gap_examples: Vec<String>,
    duplicates: u64,
}

impl Seen {
    /// Takes message `seq` of `key` in consumption order.
    fn take(&mut self, key: u64, seq: i64) {
        self.delivered += 1;
        let last = self.last.entry(key).or_insert(-1);
        if seq <= *last {
            self.duplicates += 1;
            return;
        }
        if seq > *last + 1 {
            self.gaps += 1;
            if self.gap_examples.len() < 10 {
                self.gap_examples
                    .push(format!("key {key}: {} after {}", seq, *last));
            }
        }
        *last = seq;
    }

    /// Numbers below each key's `next` (all acknowledged) not consumed yet.
    fn missing(&self, next: &BTreeMap<u64, i64>) -> u64 {
        next.iter()
            .map(|(k, next)| {
                let last = self.last.get(k).copied().unwrap_or(-1);
                u64::try_from((next - 1) - last).unwrap_or(0)
            })
            .sum()
    }
}

pub fn run(args: OrderlyArgs) -> Result<OrderlyReport, String> {
    args.common.validate()?;
    if args.keys == 0 {
        return Err("--keys must be positive".into());
    }
    let report = on_executor(|| drive(args.clone()))?;
    println!(
        "orderly {}: {} keys, sent {} (failed attempts {}), delivered {}, gaps {}, duplicates {}, missing {}, \
         lock failures {}, offset resets {}; errors {:?}; {}",
        args.common.topic,
        report.keys,
        report.sent,
        report.send_failures,
        report.delivered,
        report.gaps,
        report.duplicates,
        report.missing,
        report.lock_failures,
        report.offset_resets,
        report.errors,
        if report.ok { "OK" } else { "FAILED" }
    );
    for g in &report.gap_examples {
        println!("gap: {g}");
    }
    write_json(args.common.json.as_ref(), &report)?;
    Ok(report)
}

async fn drive(args: OrderlyArgs) -> Result<OrderlyReport, String> {
    let a = &args.common;
    let producer = setup::producer(a, "soak_orderly_producer").await?;
    let route = setup::route(&producer, &a.topic).await?;
    let write_queues = route.write_queues().to_vec();
    let read_queues = route.read_queues().to_vec();
    if write_queues.is_empty() || read_queues.is_empty() {
        return Err(format!("{} has no queues", a.topic));
    }
    let brokers = setup::masters(&route);

    let consumer_conns = Rc::new(BrokerConnections::new(1, a.timeout));
    let seen = Rc::new(RefCell::new(Seen::default()));
    let locked: Rc<RefCell<Vec<MessageQueue>>> = Rc::new(RefCell::new(Vec::new()));
    let offsets: Rc<RefCell<BTreeMap<MessageQueue, i64>>> = Rc::new(RefCell::new(BTreeMap::new()));
    let stop = Rc::new(Cell::new(false));
    let (lock_failures, offset_resets) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let undecodable = Rc::new(Cell::new(0u64));

    // Heartbeat, lock every queue, commit offsets: every 5 s (the broker's lock lasts 60 s; a
    // restarted broker has forgotten it, so relocking often keeps a kill's pause short).
    {
        let (conns, locked, offsets, stop, lock_failures) = (
            consumer_conns.clone(),
            locked.clone(),
            offsets.clone(),
            stop.clone(),
            lock_failures.clone(),
        );
        let (group, topic, timeout, brokers, queues) = (
            args.consumer_group.clone(),
            a.topic.clone(),
            a.timeout,
            brokers.clone(),
            read_queues.clone(),
        );
        glommio::spawn_local(async move {
            let id = client_id("soak-orderly");
            let topics = [topic];
            let data = heartbeat_data(&id, None, Some((&group, &topics)));
            while !stop.get() {
                let mut now_locked = Vec::new();
                for (name, addr) in &brokers {
                    let mine: Vec<MessageQueue> = queues
                        .iter()
                        .filter(|q| &q.broker_name == name)
                        .cloned()
                        .collect();
                    let result = async {
                        let conn = conns.get(addr).await?;
                        heartbeat(&conn, &data, timeout).await?;
                        let got = lock_batch_mq(&conn, &group, &id, &mine, timeout).await?;
                        let to_commit: Vec<(MessageQueue, i64)> = offsets
                            .borrow()
                            .iter()
                            .filter(|(q, _)| &q.broker_name == name)
                            .map(|(q, o)| (q.clone(), *o))
                            .collect();
                        for (q, o) in to_commit {
                            update_consumer_offset(
                                &conn, &group, &q.topic, q.queue_id, o, true, timeout,
                            )
                            .await?;
                        }
                        Ok::<_, client::ClientError>(got)
                    };
                    match result.await {
                        Ok(got) => {
                            if got.len() < mine.len() {
                                lock_failures.set(lock_failures.get() + 1);
                            }
                            now_locked.extend(got);
                        }
                        Err(_) => lock_failures.set(lock_failures.get() + 1),
                    }
                }
                *locked.borrow_mut() = now_locked;
                glommio::timer::sleep(Duration::from_secs(5)).await;
            }
        })
        .detach();
    }

    // One consuming task per queue: pulls only while the queue is locked by us, in order.
    for queue in read_queues.clone() {
        let (conns, locked, offsets, stop, seen, offset_resets, undecodable) = (
            consumer_conns.clone(),
            locked.clone(),
            offsets.clone(),
            stop.clone(),
            seen.clone(),
            offset_resets.clone(),
            undecodable.clone(),
        );
        let (group, timeout) = (args.consumer_group.clone(), a.timeout);
        let Some(addr) = brokers.get(&queue.broker_name).cloned() else {
            continue;
        };
        glommio::spawn_local(async move {
            let mut offset = 0i64;
            while !stop.get() {
                if !locked.borrow().contains(&queue) {
                    glommio::timer::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                match long_pull(&conns, &addr, &group, &queue, offset, timeout).await {
                    Ok(r) if r.status == PullStatus::Found => {
                        let mut s = seen.borrow_mut();
                        offset = each_record(&r, offset, &undecodable, |view| {
                            let key = properties::get(view.properties, properties::KEYS)
                                .and_then(|k| k.strip_prefix(KEY_PREFIX))
                                .and_then(|k| k.parse::<u64>().ok());
                            let seq = properties::get(view.properties, SEQ_PROPERTY)
                                .and_then(|v| v.parse::<i64>().ok());
                            if let (Some(key), Some(seq)) = (key, seq) {
                                s.take(key, seq);
                            }
                        });
                        offsets.borrow_mut().insert(queue.clone(), offset);
                    }
                    Ok(r) if r.status == PullStatus::OffsetIllegal => {
                        offset_resets.set(offset_resets.get() + 1);
                        offset = r.next_begin_offset;
                    }
                    Ok(_) => {}
                    Err(_) => glommio::timer::sleep(Duration::from_millis(500)).await,
                }
            }
        })
        .detach();
    }

    // The producer: key k's messages one after another to its queue, each retried until acknowledged.
    let mut report = OrderlyReport {
        keys: args.keys,
        ..OrderlyReport::default()
    };
    let mut next_seq: BTreeMap<u64, i64> = (0..args.keys).map(|k| (k, 0)).collect();
    let mut pacer = Pacer::new(a.rate);
    let end = Instant::now() + a.duration;
    let give_up = end + Duration::from_secs(60);
    let mut tick = 0u64;
    'sending: while Instant::now() < end {
        pacer.tick().await;
        let key = tick % args.keys;
        tick += 1;
        let seq = next_seq.get(&key).copied().unwrap_or(0);
        let name = format!("{KEY_PREFIX}{key}");
        let msg = Message::new(a.topic.clone(), body(&format!("{name}-{seq}"), a.size))
            .with_keys(&name)
            .with_property(SEQ_PROPERTY, &seq.to_string());
        let Some(queue) = write_queues.get((key % write_queues.len() as u64) as usize) else {
            break;
        };
        loop {
            match producer.send_to_queue(&msg, queue).await {
                Ok(_) => break,
                Err(e) => {
                    report.send_failures += 1;
                    count_error(&mut report.errors, &e);
                    if Instant::now() >= give_up {
                        break 'sending;
                    }
                    glommio::timer::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        report.sent += 1;
        next_seq.insert(key, seq + 1);
    }

    // Settle: until every key's last acknowledged number was consumed in order.
    let settle_start = Instant::now();
    let all_in = || {
        let s = seen.borrow();
        next_seq
            .iter()
            .all(|(k, next)| *next == 0 || s.last.get(k).is_some_and(|l| *l >= next - 1))
    };
    wait_until(settle_start + a.settle, Duration::from_millis(500), all_in).await;
    report.settled_after_s = settle_start.elapsed().as_secs_f64();
    stop.set(true);
    let s = seen.borrow();
    report.missing = s.missing(&next_seq);
    report.delivered = s.delivered;
    report.gaps = s.gaps;
    report.gap_examples = s.gap_examples.clone();
    report.duplicates = s.duplicates;
    report.lock_failures = lock_failures.get();
    report.offset_resets = offset_resets.get();
    report.undecodable_records = undecodable.get();
    report.ok = report.sent > 0 && report.gaps == 0 && report.missing == 0;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_and_duplicates_are_told_apart() {
        let mut s = Seen::default();
        for seq in [0, 1, 1, 2, 0, 3] {
            s.take(7, seq);
        }
        assert_eq!((s.gaps, s.duplicates, s.last[&7]), (0, 2, 3));
        s.take(7, 5);
        assert_eq!(s.gaps, 1);
        assert_eq!(s.gap_examples, vec!["key 7: 5 after 3".to_owned()]);
        s.take(8, 1);
        assert_eq!(s.gaps, 2, "a key's first message must be number 0");
        // Key 7 acknowledged up to 7 but consumed up to 5; key 8 all; key 9 sent nothing.
        let next: BTreeMap<u64, i64> = [(7, 8), (8, 2), (9, 0)].into_iter().collect();
        assert_eq!(s.missing(&next), 2);
    }
}

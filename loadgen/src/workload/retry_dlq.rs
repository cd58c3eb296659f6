//! `loadgen retry-dlq`: a consumer group that consumes every message but hands some back
//! (CONSUMER_SEND_MSG_BACK with a small maxReconsumeTimes) each time it gets them, from the topic and
//! from its retry topic `%RETRY%group`, as a push consumer whose listener keeps failing does. Verdict:
//! each such message reached `%DLQ%group` after exactly 1 + maxReconsumeTimes deliveries (reconsume
//! times 0..=max, duplicates aside), and every other acknowledged message was consumed and not
//! dead-lettered. The dead-letter topic is write-only as RocketMQ creates it; the verdict makes it
//! readable (perm 6, as `mqadmin updateTopicPerm` would) to read it back.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::Args;
use client::broker_api::{consumer_send_msg_back, create_topic as create_on_broker, heartbeat};
use client::{BrokerConnections, MessageQueue, PullStatus};
use protocol::message::properties;
use serde::Serialize;

use super::{
    client_id, count_error, each_record, heartbeat_data, long_pull, on_executor, read_whole_queue,
    record_seq, setup, write_json, PacedMessages, WorkloadArgs,
};

const KEY_PREFIX: &str = "rt";

#[derive(Args, Debug, Clone)]
pub struct RetryDlqArgs {
    #[command(flatten)]
    pub common: WorkloadArgs,
    #[arg(long, default_value = "soak_retry_consumer")]
    pub consumer_group: String,
    /// The maxReconsumeTimes the consumer sends with each send-back.
    #[arg(long, default_value_t = 2)]
    pub max_reconsume_times: i32,
    /// Every Nth message (by sequence number) is never consumed successfully.
    #[arg(long, default_value_t = 10)]
    pub fail_every: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct RetryDlqReport {
    pub sent: u64,
    pub send_failed: u64,
    /// Why sends failed: error label -> count.
    pub errors: BTreeMap<String, u64>,
    pub max_reconsume_times: i32,
    /// Acknowledged messages the consumer accepts, and those of them never consumed (must be 0).
    pub normal_acked: u64,
    pub normal_lost: u64,
    /// Accepted messages redelivered from the retry topic or found in the DLQ (must be 0).
    pub normal_retried: u64,
    pub normal_in_dlq: u64,
    /// Acknowledged messages the consumer hands back, and those of them not in the DLQ (must be 0).
    pub failing_acked: u64,
    pub failing_not_in_dlq: u64,
    pub lost_examples: Vec<u64>,
    /// Handed-back messages in the DLQ whose deliveries were not exactly reconsume times 0..=max
    /// (must be 0).
    pub wrong_attempts: u64,
    pub wrong_attempt_examples: Vec<String>,
    pub deliveries: u64,
    pub send_backs: u64,
    pub send_back_failures: u64,
    /// Deliveries of one message with a reconsume count it already had, and DLQ copies beyond one.
    pub duplicate_deliveries: u64,
    pub dlq_duplicates: u64,
    /// reconsumeTimes of the DLQ copies -> how many.
    pub dlq_reconsume_times: BTreeMap<i32, u64>,
    /// Where each lost message is stored and what the consumer got at that position instead.
    pub lost_explained: Vec<String>,
    pub offset_resets: u64,
    /// Records a pull returned that did not decode (pulled again).
    pub undecodable_records: u64,
    pub unreadable: Vec<String>,
    pub settled_after_s: f64,
    pub ok: bool,
}

/// Deliveries per sequence number: the reconsume times of each.
type Deliveries = BTreeMap<u64, Vec<i32>>;

pub fn run(args: RetryDlqArgs) -> Result<RetryDlqReport, String> {
    args.common.validate()?;
    if args.fail_every == 0 || args.max_reconsume_times < 0 {
        return Err("--fail-every must be positive and --max-reconsume-times not negative".into());
    }
    let report = on_executor(|| drive(args.clone()))?;
    println!(
        "retry-dlq {}: sent {} (failed {}); accepted {} lost {} retried {} dead-lettered {}; handed back {} \
         not in DLQ {} wrong attempts {} (max reconsume {}); deliveries {}, send-backs {} (failed {}), \
         duplicate deliveries {}, DLQ duplicates {}, DLQ reconsume times {:?}; errors {:?}; {}",
        args.common.topic,
        report.sent,
        report.send_failed,
        report.normal_acked,
        report.normal_lost,
        report.normal_retried,
        report.normal_in_dlq,
        report.failing_acked,
        report.failing_not_in_dlq,
        report.wrong_attempts,
        report.max_reconsume_times,
        report.deliveries,
        report.send_backs,
        report.send_back_failures,
        report.duplicate_deliveries,
        report.dlq_duplicates,
        report.dlq_reconsume_times,
        report.errors,
        if report.ok { "OK" } else { "FAILED" }
    );
    for u in &report.unreadable {
        println!("unreadable: {u}");
    }
    for l in &report.lost_explained {
        println!("lost: {l}");
    }
    for w in &report.wrong_attempt_examples {
        println!("wrong attempts: {w}");
    }
    write_json(args.common.json.as_ref(), &report)?;
    Ok(report)
}

/// True for the messages the consumer never accepts.
fn failing(seq: u64, every: u64) -> bool {
    seq % every == 0
}

/// One delivered message: what the consumer needs after the pull's buffer is gone.
struct Delivered {
    seq: u64,
    reconsume_times: i32,
    commit_log_offset: i64,
    origin_msg_id: Option<String>,
    origin_topic: String,
}

async fn drive(args: RetryDlqArgs) -> Result<RetryDlqReport, String> {
    let a = &args.common;
    let producer = setup::producer(a, "soak_retry_producer").await?;
    let route = setup::route(&producer, &a.topic).await?;
    let brokers = setup::masters(&route);
    let retry_topic = format!("%RETRY%{}", args.consumer_group);
    let dlq_topic = format!("%DLQ%{}", args.consumer_group);
    let mut queues = route.read_queues().to_vec();
    for name in brokers.keys() {
        queues.push(MessageQueue {
            topic: retry_topic.clone(),
            broker_name: name.clone(),
            queue_id: 0,
        });
    }

    let conns = Rc::new(BrokerConnections::new(1, a.timeout));
    let deliveries: Rc<RefCell<Deliveries>> = Rc::new(RefCell::new(BTreeMap::new()));
    let stop = Rc::new(Cell::new(false));
    let (send_backs, send_back_failures) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let (offset_resets, undecodable) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    // Which message the consumer got at each position of the topic (to explain a loss).
    let positions: Rc<RefCell<BTreeMap<(MessageQueue, i64), u64>>> =
        Rc::new(RefCell::new(BTreeMap::new()));

    {
        let (conns, stop, brokers, group, timeout) = (
            conns.clone(),
            stop.clone(),
            brokers.clone(),
            args.consumer_group.clone(),
            a.timeout,
        );
        let topics = [a.topic.clone(), retry_topic.clone()];
        glommio::spawn_local(async move {
            let data = heartbeat_data(&client_id("soak-retry"), None, Some((&group, &topics)));
            while !stop.get() {
                for addr in brokers.values() {
                    if let Ok(conn) = conns.get(addr).await {
                        let _ = heartbeat(&conn, &data, timeout).await;
                    }
                }
                glommio::timer::sleep(Duration::from_secs(5)).await;
            }
        })
        .detach();
    }

    for queue in queues {
        let Some(addr) = brokers.get(&queue.broker_name).cloned() else {
            continue;
        };
        let (conns, stop, deliveries, send_backs, send_back_failures) = (
            conns.clone(),
            stop.clone(),
            deliveries.clone(),
            send_backs.clone(),
            send_back_failures.clone(),
        );
        let (positions, offset_resets, undecodable, topic) = (
            positions.clone(),
            offset_resets.clone(),
            undecodable.clone(),
            a.topic.clone(),
        );
        let (group, timeout, max, every) = (
            args.consumer_group.clone(),
            a.timeout,
            args.max_reconsume_times,
            args.fail_every,
        );
        glommio::spawn_local(async move {
            let mut offset = 0i64;
            while !stop.get() {
                let r = match long_pull(&conns, &addr, &group, &queue, offset, timeout).await {
                    Ok(r) => r,
                    // The retry topic exists only after the first send-back; brokers restart.
                    Err(_) => {
                        glommio::timer::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                };
                match r.status {
                    PullStatus::Found => {}
                    PullStatus::OffsetIllegal => {
                        offset_resets.set(offset_resets.get() + 1);
                        offset = r.next_begin_offset;
                        continue;
                    }
                    _ => continue,
                }
                let mut got = Vec::new();
                // The offset moves on once every delivered message was handled, below.
                let resume = each_record(&r, offset, &undecodable, |v| {
                    let Some(seq) = record_seq(v, KEY_PREFIX) else {
                        return;
                    };
                    if queue.topic == topic {
                        positions
                            .borrow_mut()
                            .insert((queue.clone(), v.queue_offset), seq);
                    }
                    got.push(Delivered {
                        seq,
                        reconsume_times: v.reconsume_times,
                        commit_log_offset: v.physical_offset,
                        origin_msg_id: properties::get(v.properties, properties::UNIQ_KEY)
                            .map(str::to_owned),
                        origin_topic: properties::get(v.properties, properties::RETRY_TOPIC)
                            .unwrap_or(v.topic)
                            .to_owned(),
                    });
                });
                for d in got {
                    deliveries
                        .borrow_mut()
                        .entry(d.seq)
                        .or_default()
                        .push(d.reconsume_times);
                    if !failing(d.seq, every) {
                        continue;
                    }
                    // Hand it back until the broker takes it (the offset moves on only after that).
                    while !stop.get() {
                        let sent = async {
                            let conn = conns.get(&addr).await?;
                            consumer_send_msg_back(
                                &conn,
                                &group,
                                d.commit_log_offset,
                                0,
                                d.origin_msg_id.as_deref(),
                                Some(&d.origin_topic),
                                max,
                                timeout,
                            )
                            .await
                        };
                        if sent.await.is_ok() {
                            send_backs.set(send_backs.get() + 1);
                            break;
                        }
                        send_back_failures.set(send_back_failures.get() + 1);
                        glommio::timer::sleep(Duration::from_millis(500)).await;
                    }
                }
                offset = resume.max(offset);
            }
        })
        .detach();
    }

    let mut report = RetryDlqReport {
        max_reconsume_times: args.max_reconsume_times,
        ..RetryDlqReport::default()
    };
    let mut acked = BTreeSet::new();
    let mut messages = PacedMessages::new(a, KEY_PREFIX);
    while let Some((seq, msg)) = messages.next().await {
        match producer.send(&msg).await {
            Ok(_) => {
                report.sent += 1;
                acked.insert(seq);
            }
            Err(e) => {
                report.send_failed += 1;
                count_error(&mut report.errors, &e);
            }
        }
    }

    // Settle: until every accepted message was consumed and every failing one is in the DLQ.
    let settle_start = Instant::now();
    let deadline = settle_start + a.settle;
    let mut dlq: BTreeMap<u64, Vec<i32>>;
    let mut readable = BTreeSet::new();
    loop {
        dlq = BTreeMap::new();
        report.unreadable.clear();
        for (name, addr) in &brokers {
            let queue = MessageQueue {
                topic: dlq_topic.clone(),
                broker_name: name.clone(),
                queue_id: 0,
            };
            let read = async {
                let conn = conns.get(addr).await.map_err(|e| e.to_string())?;
                if !readable.contains(name) {
                    // Fails until the broker created the DLQ with the first dead letter.
                    create_on_broker(&conn, &dlq_topic, 1, a.timeout)
                        .await
                        .map_err(|e| format!("making {dlq_topic} readable: {e}"))?;
                    readable.insert(name.clone());
                }
                read_whole_queue(&conn, "soak_retry_verify", &queue, a.timeout, |r| {
                    if let Some(s) = record_seq(r, KEY_PREFIX) {
                        dlq.entry(s).or_default().push(r.reconsume_times);
                    }
                })
                .await
            };
            if let Err(e) = read.await {
                report.unreadable.push(e);
            }
        }
        let done = {
            let d = deliveries.borrow();
            acked.iter().all(|s| {
                if failing(*s, args.fail_every) {
                    dlq.contains_key(s)
                } else {
                    d.contains_key(s)
                }
            })
        };
        if (done && report.unreadable.is_empty()) || Instant::now() >= deadline {
            break;
        }
        glommio::timer::sleep(Duration::from_secs(5)).await;
    }
    report.settled_after_s = settle_start.elapsed().as_secs_f64();
    stop.set(true);

    judge(
        &mut report,
        &acked,
        &deliveries.borrow(),
        &dlq,
        args.fail_every,
    );
    report.send_backs = send_backs.get();
    report.send_back_failures = send_back_failures.get();
    report.offset_resets = offset_resets.get();
    report.undecodable_records = undecodable.get();
    if !report.lost_examples.is_empty() {
        let lost: BTreeSet<u64> = report.lost_examples.iter().copied().collect();
        let mut stored_at = BTreeMap::new();
        for queue in route.read_queues() {
            if let Some(addr) = brokers.get(&queue.broker_name) {
                if let Ok(conn) = conns.get(addr).await {
                    let _ = read_whole_queue(&conn, "soak_retry_verify", queue, a.timeout, |r| {
                        if let Some(s) = record_seq(r, KEY_PREFIX).filter(|s| lost.contains(s)) {
                            stored_at.insert(s, (queue.clone(), r.queue_offset));
                        }
                    })
                    .await;
                }
            }
        }
        let positions = positions.borrow();
        for s in &lost {
            report.lost_explained.push(match stored_at.get(s) {
                None => format!("{KEY_PREFIX}-{s}: not stored in {}", a.topic),
                Some((q, o)) => format!(
                    "{KEY_PREFIX}-{s}: stored at {}/{} offset {o}; the consumer got {} there",
                    q.broker_name,
                    q.queue_id,
                    positions
                        .get(&(q.clone(), *o))
                        .map_or("nothing".to_owned(), |x| format!("{KEY_PREFIX}-{x}"))
                ),
            });
        }
    }
    Ok(report)
}

/// Fills in the verdict from the acknowledged messages, the consumer's deliveries and the DLQ's copies
/// (number -> reconsume times of each), with `report.max_reconsume_times` the limit sent.
fn judge(
    report: &mut RetryDlqReport,
    acked: &BTreeSet<u64>,
    deliveries: &Deliveries,
    dlq: &Deliveries,
    every: u64,
) {
    let max = report.max_reconsume_times;
    for s in acked {
        let lost = if failing(*s, every) {
            report.failing_acked += 1;
            let lost = !dlq.contains_key(s);
            report.failing_not_in_dlq += u64::from(lost);
            lost
        } else {
            report.normal_acked += 1;
            let lost = !deliveries.contains_key(s);
            report.normal_lost += u64::from(lost);
            lost
        };
        if lost && report.lost_examples.len() < 10 {
            report.lost_examples.push(*s);
        }
    }
    let expected: BTreeSet<i32> = (0..=max).collect();
    for (s, times) in deliveries {
        report.deliveries += times.len() as u64;
        let distinct: BTreeSet<i32> = times.iter().copied().collect();
        report.duplicate_deliveries += (times.len() - distinct.len()) as u64;
        if !failing(*s, every) {
            report.normal_retried += u64::from(distinct.iter().any(|t| *t > 0));
            continue;
        }
        let too_many = distinct.iter().any(|t| *t > max);
        if (dlq.contains_key(s) && distinct != expected) || too_many {
            report.wrong_attempts += 1;
            if report.wrong_attempt_examples.len() < 10 {
                report.wrong_attempt_examples.push(format!(
                    "{KEY_PREFIX}-{s}: delivered with reconsume times {times:?}"
                ));
            }
        }
    }
    for (s, copies) in dlq {
        if !failing(*s, every) {
            report.normal_in_dlq += 1;
        }
        report.dlq_duplicates += copies.len().saturating_sub(1) as u64;
        for t in copies {
            *report.dlq_reconsume_times.entry(*t).or_default() += 1;
        }
    }
    report.ok = report.failing_acked > 0
        && report.normal_acked > 0
        && report.normal_lost == 0
        && report.failing_not_in_dlq == 0
        && report.normal_retried == 0
        && report.normal_in_dlq == 0
        && report.wrong_attempts == 0
        && report.unreadable.is_empty();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages 0..20, every 10th failing, max 2: what a correct broker leads to.
    fn correct() -> (BTreeSet<u64>, Deliveries, Deliveries) {
        let acked: BTreeSet<u64> = (0..20).collect();
        let mut deliveries: Deliveries = (0..20).map(|s| (s, vec![0])).collect();
        let mut dlq = Deliveries::new();
        for s in [0, 10] {
            deliveries.insert(s, vec![0, 1, 2]);
            dlq.insert(s, vec![3]);
        }
        (acked, deliveries, dlq)
    }

    fn verdict(acked: &BTreeSet<u64>, deliveries: &Deliveries, dlq: &Deliveries) -> RetryDlqReport {
        let mut r = RetryDlqReport {
            max_reconsume_times: 2,
            ..RetryDlqReport::default()
        };
        judge(&mut r, acked, deliveries, dlq, 10);
        r
    }

    #[test]
    fn exactly_one_plus_max_deliveries_then_the_dlq_passes_and_duplicates_are_counted() {
        let (acked, mut deliveries, mut dlq) = correct();
        let r = verdict(&acked, &deliveries, &dlq);
        assert!(r.ok, "{r:?}");
        assert_eq!((r.failing_acked, r.normal_acked, r.deliveries), (2, 18, 24));
        deliveries.insert(10, vec![0, 1, 1, 2]);
        dlq.insert(10, vec![3, 3]);
        let r = verdict(&acked, &deliveries, &dlq);
        assert!(r.ok, "{r:?}");
        assert_eq!((r.duplicate_deliveries, r.dlq_duplicates), (1, 1));
    }

    #[test]
    fn the_verdict_fails_on_loss_wrong_attempts_or_a_dead_lettered_good_message() {
        let (acked, deliveries, dlq) = correct();
        let mut d = deliveries.clone();
        d.remove(&5);
        assert_eq!(verdict(&acked, &d, &dlq).normal_lost, 1);
        assert!(!verdict(&acked, &d, &dlq).ok);
        let mut q = dlq.clone();
        q.remove(&10);
        assert!(!verdict(&acked, &deliveries, &q).ok);
        let mut d = deliveries.clone();
        d.insert(10, vec![0, 2]);
        assert_eq!(verdict(&acked, &d, &dlq).wrong_attempts, 1);
        d.insert(10, vec![0, 1, 2, 3]);
        assert!(!verdict(&acked, &d, &dlq).ok);
        let mut q = dlq.clone();
        q.insert(5, vec![1]);
        assert_eq!(verdict(&acked, &deliveries, &q).normal_in_dlq, 1);
        let mut d = deliveries.clone();
        d.insert(5, vec![0, 1]);
        assert_eq!(verdict(&acked, &d, &dlq).normal_retried, 1);
        assert!(!verdict(&acked, &d, &dlq).ok);
    }
}

//! `loadgen transaction`: half messages at a fixed rate, committed, rolled back or left unknown by a
//! rule on their sequence number; a check-back listener answers the broker's CHECK_TRANSACTION_STATE
//! by the same rule. Verdict: every message whose transaction ends committed is readable, no rolled
//! back one is, and every unknown one was checked back.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::Args;
use client::broker_api::heartbeat;
use client::transaction::{send_half, EndTransaction, LocalTransactionState, TransactionCheck};
use glommio::channels::local_channel::{self, LocalSender};
use protocol::{request_code, RemotingCommand};
use remoting::ServerRequestHandler;
use serde::Serialize;

use super::{
    client_id, count_error, heartbeat_data, on_executor, read_whole_queue, record_seq, seq_of,
    setup, write_json, PacedMessages, WorkloadArgs,
};

const KEY_PREFIX: &str = "tx";

#[derive(Args, Debug, Clone)]
pub struct TransactionArgs {
    #[command(flatten)]
    pub common: WorkloadArgs,
    #[arg(long, default_value = "soak_tx_producer")]
    pub producer_group: String,
}

/// What the producer answers right after sending half message `seq`: of every 10, 6 commit, 2 roll
/// back, 2 are left unknown for the check-back.
pub fn decision(seq: u64) -> LocalTransactionState {
    match seq % 10 {
        0..=5 => LocalTransactionState::Commit,
        6 | 7 => LocalTransactionState::Rollback,
        _ => LocalTransactionState::Unknown,
    }
}

/// What the check-back answers for `seq`: its decision, and for unknown ones commit when `seq % 10`
/// is 8, roll back when 9.
pub fn check_answer(seq: u64) -> LocalTransactionState {
    match decision(seq) {
        LocalTransactionState::Unknown if seq % 10 == 8 => LocalTransactionState::Commit,
        LocalTransactionState::Unknown => LocalTransactionState::Rollback,
        decided => decided,
    }
}

/// The verdict (also written as JSON).
#[derive(Debug, Default, Serialize)]
pub struct TransactionReport {
    pub half_sent: u64,
    pub half_failed: u64,
    pub end_failed: u64,
    /// Why sends and END_TRANSACTIONs failed: error label -> count.
    pub errors: BTreeMap<String, u64>,
    pub checks_received: u64,
    pub checks_unreadable: u64,
    pub check_answers_failed: u64,
    /// Acknowledged halves whose transaction ends committed, and how many of them are readable.
    pub expected_committed: u64,
    pub committed_read: u64,
    pub missing_committed: u64,
    pub missing_examples: Vec<u64>,
    /// Messages readable whose transaction ends rolled back (must be 0).
    pub rolled_back_delivered: u64,
    pub rolled_back_examples: Vec<u64>,
    /// Acknowledged halves left unknown, and how many of them the broker never checked back.
    pub unknown_sent: u64,
    pub unknown_never_checked: u64,
    /// Readable more than once (a commit repeated after a restart).
    pub duplicates: u64,
    /// Readable although the half's send was not acknowledged (allowed when its rule commits).
    pub committed_without_ack: u64,
    pub unreadable: Vec<String>,
    pub settled_after_s: f64,
    pub ok: bool,
}

#[derive(Default)]
struct Checks {
    by_seq: BTreeMap<u64, u32>,
    unreadable: u64,
    answers_failed: u64,
}

/// Passes CHECK_TRANSACTION_STATE requests to the answering task.
struct CheckListener(LocalSender<RemotingCommand>);

impl ServerRequestHandler for CheckListener {
    fn handle(&self, request: RemotingCommand) -> Option<RemotingCommand> {
        if request.code == request_code::CHECK_TRANSACTION_STATE {
            let _ = self.0.try_send(request);
        }
        // The check is oneway: the answer is an END_TRANSACTION of our own.
        None
    }
}

pub fn run(args: TransactionArgs) -> Result<TransactionReport, String> {
    args.common.validate()?;
    let report = on_executor(|| drive(args.clone()))?;
    println!(
        "transaction {}: halves sent {} (failed {}), end failed {}, checks {} (unreadable {}, answers failed {}); \
         committed expected {} read {} missing {}; rolled back delivered {}; unknown {} never checked {}; \
         duplicates {}; committed without ack {}; errors {:?}; {}",
        args.common.topic,
        report.half_sent,
        report.half_failed,
        report.end_failed,
        report.checks_received,
        report.checks_unreadable,
        report.check_answers_failed,
        report.expected_committed,
        report.committed_read,
        report.missing_committed,
        report.rolled_back_delivered,
        report.unknown_sent,
        report.unknown_never_checked,
        report.duplicates,
        report.committed_without_ack,
        report.errors,
        if report.ok { "OK" } else { "FAILED" }
    );
    for u in &report.unreadable {
        println!("unreadable: {u}");
    }
    write_json(args.common.json.as_ref(), &report)?;
    Ok(report)
}

async fn drive(args: TransactionArgs) -> Result<TransactionReport, String> {
    let a = &args.common;
    let producer = setup::producer(a, &args.producer_group).await?;
    let (to_answerer, checks_in) = local_channel::new_unbounded::<RemotingCommand>();
    producer
        .connections()
        .set_request_handler(Some(Rc::new(CheckListener(to_answerer))));
    let checks = Rc::new(RefCell::new(Checks::default()));
    let stop = Rc::new(std::cell::Cell::new(false));

    // Answers check-backs by the rule, oneway like the Java client.
    let answerer = {
        let (producer, checks, group, topic) = (
            producer.clone(),
            checks.clone(),
            args.producer_group.clone(),
            a.topic.clone(),
        );
        glommio::spawn_local(async move {
            while let Some(cmd) = checks_in.recv().await {
                let check = match TransactionCheck::from_request(&cmd) {
                    Ok(c) => c,
                    Err(_) => {
                        checks.borrow_mut().unreadable += 1;
                        continue;
                    }
                };
                let Some(seq) = seq_of(check.keys.as_deref(), KEY_PREFIX) else {
                    checks.borrow_mut().unreadable += 1;
                    continue;
                };
                *checks.borrow_mut().by_seq.entry(seq).or_default() += 1;
                let answer = check.answer(&group, check_answer(seq));
                let sent = async {
                    let route = producer.route(&topic).await?;
                    let addr = route
                        .master_addrs()
                        .next()
                        .ok_or_else(|| client::ClientError::NoRoute(topic.clone()))?
                        .to_owned();
                    let conn = producer.connections().get(&addr).await?;
                    answer.send_oneway(&conn).await
                };
                if sent.await.is_err() {
                    checks.borrow_mut().answers_failed += 1;
                }
            }
        })
        .detach()
    };

    // Heartbeats register the producer group on every connection, so the broker has someone to check
    // with (again after each restart).
    let beats = {
        let (producer, stop, topic, group) = (
            producer.clone(),
            stop.clone(),
            a.topic.clone(),
            args.producer_group.clone(),
        );
        let id = client_id("soak-tx");
        let timeout = a.timeout;
        glommio::spawn_local(async move {
            let data = heartbeat_data(&id, Some(&group), None);
            while !stop.get() {
                if let Ok(route) = producer.route(&topic).await {
                    for addr in route.master_addrs() {
                        for slot in 0..producer.connections().size() {
                            if let Ok(conn) = producer.connections().get_slot(addr, slot).await {
                                let _ = heartbeat(&conn, &data, timeout).await;
                            }
                        }
                    }
                }
                glommio::timer::sleep(Duration::from_secs(3)).await;
            }
        })
        .detach()
    };

    let mut report = TransactionReport::default();
    let mut acked = BTreeSet::new();
    let mut messages = PacedMessages::new(a, KEY_PREFIX);
    while let Some((seq, msg)) = messages.next().await {
        match send_half(&producer, &msg).await {
            Ok(sent) => {
                report.half_sent += 1;
                acked.insert(seq);
                let state = decision(seq);
                if state != LocalTransactionState::Unknown {
                    let ended = async {
                        let end = EndTransaction::after_send(&args.producer_group, &sent, state)?;
                        let route = producer.route(&a.topic).await?;
                        let conn = producer
                            .connections()
                            .get(route.master_addr(&sent.queue.broker_name)?)
                            .await?;
                        end.send(&conn, a.timeout).await
                    };
                    if let Err(e) = ended.await {
                        report.end_failed += 1;
                        count_error(&mut report.errors, &e);
                    }
                }
            }
            Err(e) => {
                report.half_failed += 1;
                count_error(&mut report.errors, &e);
            }
        }
    }

    // Settle: wait until every expected commit is readable and every unknown one was checked.
    let settle_start = Instant::now();
    let deadline = settle_start + a.settle;
    let expected: BTreeSet<u64> = acked
        .iter()
        .copied()
        .filter(|s| check_answer(*s) == LocalTransactionState::Commit)
        .collect();
    let unknown: BTreeSet<u64> = acked
        .iter()
        .copied()
        .filter(|s| decision(*s) == LocalTransactionState::Unknown)
        .collect();
    let mut seen: BTreeMap<u64, u64>;
    loop {
        seen = BTreeMap::new();
        report.unreadable.clear();
        let route = producer
            .refresh_route(&a.topic)
            .await
            .map_err(|e| format!("route of {}: {e}", a.topic))?;
        for queue in route.read_queues() {
            let addr = route
                .master_addr(&queue.broker_name)
                .map_err(|e| e.to_string())?;
            let conn = producer
                .connections()
                .get(addr)
                .await
                .map_err(|e| e.to_string())?;
            if let Err(e) = read_whole_queue(&conn, "soak_tx_verify", queue, a.timeout, |r| {
                if let Some(s) = record_seq(r, KEY_PREFIX) {
                    *seen.entry(s).or_default() += 1;
                }
            })
            .await
            {
                report.unreadable.push(e);
            }
        }
        let all_read = expected.iter().all(|s| seen.contains_key(s));
        let all_checked = unknown
            .iter()
            .all(|s| checks.borrow().by_seq.contains_key(s));
        if (all_read && all_checked && report.unreadable.is_empty()) || Instant::now() >= deadline {
            break;
        }
        glommio::timer::sleep(Duration::from_secs(5)).await;
    }
    report.settled_after_s = settle_start.elapsed().as_secs_f64();
    stop.set(true);
    drop((answerer, beats));

    let c = checks.borrow();
    judge(&mut report, &acked, &seen, &c);
    Ok(report)
}

/// Fills in the verdict from the acknowledged halves, what was readable (number -> times) and the
/// checks received.
fn judge(
    report: &mut TransactionReport,
    acked: &BTreeSet<u64>,
    seen: &BTreeMap<u64, u64>,
    checks: &Checks,
) {
    let expected = acked
        .iter()
        .filter(|s| check_answer(**s) == LocalTransactionState::Commit);
    for s in expected {
        report.expected_committed += 1;
        if seen.contains_key(s) {
            report.committed_read += 1;
        } else {
            report.missing_committed += 1;
            if report.missing_examples.len() < 10 {
                report.missing_examples.push(*s);
            }
        }
    }
    for (s, n) in seen {
        report.duplicates += n.saturating_sub(1);
        if check_answer(*s) != LocalTransactionState::Commit {
            report.rolled_back_delivered += 1;
            if report.rolled_back_examples.len() < 10 {
                report.rolled_back_examples.push(*s);
            }
        } else if !acked.contains(s) {
            report.committed_without_ack += 1;
        }
    }
    let unknown = acked
        .iter()
        .filter(|s| decision(**s) == LocalTransactionState::Unknown);
    for s in unknown {
        report.unknown_sent += 1;
        report.unknown_never_checked += u64::from(!checks.by_seq.contains_key(s));
    }
    report.checks_received = checks.by_seq.values().map(|n| u64::from(*n)).sum();
    report.checks_unreadable = checks.unreadable;
    report.check_answers_failed = checks.answers_failed;
    report.ok = report.half_sent > 0
        && report.missing_committed == 0
        && report.rolled_back_delivered == 0
        && report.unknown_never_checked == 0
        && report.unreadable.is_empty();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_commits_seven_in_ten_and_leaves_two_to_the_check() {
        let commits = (0..100)
            .filter(|s| check_answer(*s) == LocalTransactionState::Commit)
            .count();
        let unknown = (0..100)
            .filter(|s| decision(*s) == LocalTransactionState::Unknown)
            .count();
        assert_eq!((commits, unknown), (70, 20));
        assert_eq!(check_answer(18), LocalTransactionState::Commit);
        assert_eq!(check_answer(19), LocalTransactionState::Rollback);
        assert_eq!(check_answer(16), LocalTransactionState::Rollback);
        assert_eq!(seq_of(Some("tx-42"), KEY_PREFIX), Some(42));
        assert_eq!(seq_of(Some("other tx-7"), KEY_PREFIX), Some(7));
        assert_eq!(seq_of(Some("ord-7"), KEY_PREFIX), None);
    }

    #[test]
    fn the_verdict_fails_on_a_missing_commit_a_delivered_rollback_or_an_unchecked_unknown() {
        let acked: BTreeSet<u64> = (0..20).collect();
        let committed = |extra: &[u64], without: &[u64]| -> BTreeMap<u64, u64> {
            (0..20)
                .filter(|s| {
                    check_answer(*s) == LocalTransactionState::Commit && !without.contains(s)
                })
                .chain(extra.iter().copied())
                .map(|s| (s, 1))
                .collect()
        };
        let checked = Checks {
            by_seq: [8, 9, 18, 19].into_iter().map(|s| (s, 1)).collect(),
            ..Checks::default()
        };
        let verdict = |seen: &BTreeMap<u64, u64>, checks: &Checks| {
            let mut r = TransactionReport {
                half_sent: 20,
                ..TransactionReport::default()
            };
            judge(&mut r, &acked, seen, checks);
            r
        };
        let good = verdict(&committed(&[], &[]), &checked);
        assert!(good.ok, "{good:?}");
        assert_eq!((good.expected_committed, good.unknown_sent), (14, 4));
        let lost = verdict(&committed(&[], &[18]), &checked);
        assert!(!lost.ok);
        assert_eq!(lost.missing_examples, vec![18]);
        let leaked = verdict(&committed(&[6], &[]), &checked);
        assert!(!leaked.ok);
        assert_eq!(leaked.rolled_back_examples, vec![6]);
        let unchecked = Checks {
            by_seq: [8, 9, 18].into_iter().map(|s| (s, 1)).collect(),
            ..Checks::default()
        };
        let r = verdict(&committed(&[], &[]), &unchecked);
        assert_eq!((r.ok, r.unknown_never_checked), (false, 1));
    }
}

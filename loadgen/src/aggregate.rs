//! Main-thread side: merges the executors' interval reports into one line per interval (once every
//! executor has reported it or finished before it), and the measured totals for the summary.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::stats::Snapshot;

/// One executor's figures for one interval.
#[derive(Debug, Clone)]
pub struct Report {
    pub executor: usize,
    pub seq: u64,
    /// Interval end, measured from the run's start.
    pub at: Duration,
    pub warmup: bool,
    /// The executor's final report (its load has stopped).
    pub last: bool,
    /// In a final report: when this executor's producers stopped (from the run's start).
    pub producers_done: Option<Duration>,
    pub snapshot: Snapshot,
}

/// All executors' figures for one interval.
#[derive(Debug, Clone)]
pub struct Interval {
    pub seq: u64,
    pub start: Duration,
    pub end: Duration,
    pub warmup: bool,
    pub snapshot: Snapshot,
}

impl Interval {
    pub fn length(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

#[derive(Default)]
struct Pending {
    snapshot: Snapshot,
    reported: Vec<bool>,
    at: Duration,
    warmup: bool,
}

/// Collects reports until intervals are complete.
pub struct Aggregator {
    executors: usize,
    pending: BTreeMap<u64, Pending>,
    /// The seq of each executor's final report (-1: it sent none).
    last_seq: Vec<Option<i64>>,
    next_seq: u64,
    previous_end: Duration,
    /// Sum of every measured (non-warm-up) interval.
    pub measured: Snapshot,
    /// Sum of every interval, warm-up included.
    pub all: Snapshot,
    /// End of the latest completed interval.
    pub end: Duration,
    /// When the last producer stopped (None: no producers).
    pub producers_done: Option<Duration>,
}

impl Aggregator {
    pub fn new(executors: usize) -> Aggregator {
        Aggregator {
            executors,
            pending: BTreeMap::new(),
            last_seq: vec![None; executors],
            next_seq: 0,
            previous_end: Duration::ZERO,
            measured: Snapshot::default(),
            all: Snapshot::default(),
            end: Duration::ZERO,
            producers_done: None,
        }
    }

    /// Whether every executor has sent its final report.
    pub fn all_finished(&self) -> bool {
        self.last_seq.iter().all(Option::is_some)
    }

    /// Marks an executor that will send no report at all (it failed to start).
    pub fn give_up(&mut self, executor: usize) -> Vec<Interval> {
        if let Some(slot) = self.last_seq.get_mut(executor) {
            slot.get_or_insert(-1);
        }
        self.complete()
    }

    /// Adds a report; returns the intervals it completed, in order.
    pub fn push(&mut self, report: Report) -> Vec<Interval> {
        let executors = self.executors;
        let Some(slot) = self.last_seq.get_mut(report.executor) else {
            return Vec::new();
        };
        if report.last {
            *slot = Some(i64::try_from(report.seq).unwrap_or(i64::MAX));
            if let Some(done) = report.producers_done {
                self.producers_done = Some(self.producers_done.map_or(done, |d| d.max(done)));
            }
        }
        let entry = self.pending.entry(report.seq).or_insert_with(|| Pending {
            reported: vec![false; executors],
            warmup: true,
            ..Pending::default()
        });
        if let Some(flag) = entry.reported.get_mut(report.executor) {
            *flag = true;
        }
        entry.snapshot.merge(&report.snapshot);
        entry.at = entry.at.max(report.at);
        entry.warmup &= report.warmup;
        self.complete()
    }

    fn is_complete(&self, seq: u64) -> bool {
        let seq_i = i64::try_from(seq).unwrap_or(i64::MAX);
        let reported = self.pending.get(&seq).map(|p| p.reported.as_slice());
        (0..self.executors).all(|e| {
            let sent = reported.and_then(|r| r.get(e)).copied().unwrap_or(false);
            let finished_before = self
                .last_seq
                .get(e)
                .copied()
                .flatten()
                .is_some_and(|last| last < seq_i);
            sent || finished_before
        })
    }

    fn complete(&mut self) -> Vec<Interval> {
        let mut done = Vec::new();
        loop {
            let seq = self.next_seq;
            let seq_i = i64::try_from(seq).unwrap_or(i64::MAX);
            let beyond_all =
                self.all_finished() && self.last_seq.iter().flatten().all(|last| *last < seq_i);
            if beyond_all || !self.is_complete(seq) {
                break;
            }
            self.next_seq += 1;
            let Some(pending) = self.pending.remove(&seq) else {
                // Nobody reported it (everyone had finished): nothing to show.
                continue;
            };
            let interval = Interval {
                seq,
                start: self.previous_end,
                end: pending.at.max(self.previous_end),
                warmup: pending.warmup,
                snapshot: pending.snapshot,
            };
            self.previous_end = interval.end;
            self.end = interval.end;
            self.all.accumulate(&interval.snapshot);
            if !interval.warmup {
                self.measured.accumulate(&interval.snapshot);
            }
            done.push(interval);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(executor: usize, seq: u64, at_ms: u64, last: bool, msgs: u64) -> Report {
        let mut snapshot = Snapshot::default();
        snapshot.send.ok_msgs = msgs;
        Report {
            executor,
            seq,
            at: Duration::from_millis(at_ms),
            warmup: seq == 0,
            last,
            producers_done: None,
            snapshot,
        }
    }

    #[test]
    fn intervals_complete_when_every_executor_reported_or_finished() {
        let mut agg = Aggregator::new(2);
        assert!(agg.push(report(0, 0, 1000, false, 5)).is_empty());
        let done = agg.push(report(1, 0, 1001, false, 7));
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].snapshot.send.ok_msgs, 12);
        assert!(done[0].warmup);
        assert_eq!(done[0].end, Duration::from_millis(1001));
        // Executor 0 stops at seq 1; executor 1 goes on to seq 2.
        assert!(agg.push(report(0, 1, 1500, true, 3)).is_empty());
        let done = agg.push(report(1, 1, 2000, false, 4));
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].snapshot.send.ok_msgs, 7);
        assert_eq!(done[0].length(), Duration::from_millis(999));
        let done = agg.push(report(1, 2, 2300, true, 1));
        assert_eq!(done.len(), 1);
        assert!(agg.all_finished());
        // Warm-up (seq 0) is left out of the measured sum, kept in the overall one.
        assert_eq!(agg.measured.send.ok_msgs, 8);
        assert_eq!(agg.all.send.ok_msgs, 20);
        assert_eq!(agg.end, Duration::from_millis(2300));
    }

    #[test]
    fn an_executor_that_never_started_does_not_block() {
        let mut agg = Aggregator::new(2);
        assert!(agg.push(report(0, 0, 1000, true, 1)).is_empty());
        let done = agg.give_up(1);
        assert_eq!(done.len(), 1);
        assert!(agg.all_finished());
    }
}

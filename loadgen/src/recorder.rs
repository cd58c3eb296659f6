//! The executor-local recorder workers write into, and the stop rule that bounds a run by time and
//! count.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::ClientError;

use crate::errors::ErrorKey;
use crate::stats::Snapshot;

/// What this executor measured since the last report.
#[derive(Default)]
pub struct Recorder {
    current: RefCell<Snapshot>,
    /// Latest backlog of each consumed queue (None until its first answer).
    backlogs: RefCell<Vec<Option<i64>>>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Runs `f` on the current interval's snapshot (the borrow ends with `f`).
    pub fn with<R>(&self, f: impl FnOnce(&mut Snapshot) -> R) -> R {
        f(&mut self.current.borrow_mut())
    }

    /// Records the outcome of one send request of `msgs` messages; returns the error key on failure.
    pub fn record_send(
        &self,
        result: Result<(), ClientError>,
        msgs: u64,
        bytes: u64,
        latency: Duration,
    ) -> Option<ErrorKey> {
        self.with(|s| match result {
            Ok(()) => {
                s.send.record_ok(msgs, bytes, latency);
                None
            }
            Err(e) => {
                let key = ErrorKey::of(&e);
                s.send.record_error(key, msgs);
                Some(key)
            }
        })
    }

    /// A new backlog slot for one consumed queue.
    pub fn backlog_slot(&self) -> usize {
        let mut slots = self.backlogs.borrow_mut();
        slots.push(None);
        slots.len() - 1
    }

    pub fn set_backlog(&self, slot: usize, backlog: i64) {
        if let Some(entry) = self.backlogs.borrow_mut().get_mut(slot) {
            *entry = Some(backlog.max(0));
        }
    }

    /// Hands over the interval's figures and starts a new interval.
    pub fn take(&self) -> Snapshot {
        let mut snapshot = std::mem::take(&mut *self.current.borrow_mut());
        let backlogs = self.backlogs.borrow();
        if backlogs.iter().any(Option::is_some) {
            snapshot.consume.backlog = Some(
                backlogs
                    .iter()
                    .flatten()
                    .fold(0i64, |a, b| a.saturating_add(*b)),
            );
        }
        snapshot
    }
}

/// How many messages may still go: per executor (no sharing) or shared by all executors.
#[derive(Debug)]
pub enum Budget {
    Unlimited,
    Local(Cell<u64>),
    Shared(Arc<AtomicU64>),
}

/// Stops work at a deadline or when the message budget is spent.
#[derive(Debug)]
pub struct StopRule {
    deadline: Cell<Option<Instant>>,
    budget: Budget,
    halted: Cell<bool>,
}

impl StopRule {
    pub fn new(deadline: Option<Instant>, budget: Budget) -> StopRule {
        StopRule {
            deadline: Cell::new(deadline),
            budget,
            halted: Cell::new(false),
        }
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.get()
    }

    /// Sets the deadline (known only once the common start is).
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.deadline.set(deadline);
    }

    /// Whether no more work should start.
    pub fn is_over(&self) -> bool {
        if self.halted.get() {
            return true;
        }
        if self.deadline.get().is_some_and(|d| Instant::now() >= d) {
            return true;
        }
        match &self.budget {
            Budget::Unlimited => false,
            Budget::Local(left) => left.get() == 0,
            Budget::Shared(left) => left.load(Ordering::Relaxed) == 0,
        }
    }

    /// Whether a count bounded the run and is used up.
    pub fn budget_spent(&self) -> bool {
        match &self.budget {
            Budget::Unlimited => false,
            Budget::Local(left) => left.get() == 0,
            Budget::Shared(left) => left.load(Ordering::Relaxed) == 0,
        }
    }

    /// Stops everything now.
    pub fn halt(&self) {
        self.halted.set(true);
    }

    /// Claims up to `want` messages; 0 means stop.
    pub fn take(&self, want: u64) -> u64 {
        if self.halted.get() || self.deadline.get().is_some_and(|d| Instant::now() >= d) {
            return 0;
        }
        match &self.budget {
            Budget::Unlimited => want,
            Budget::Local(left) => {
                let granted = left.get().min(want);
                left.set(left.get() - granted);
                granted
            }
            Budget::Shared(left) => {
                let mut granted = 0;
                let _ = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                    granted = l.min(want);
                    Some(l - granted)
                });
                granted
            }
        }
    }
}

/// Splits `total` into `parts` shares that differ by at most one and add up to `total`.
pub fn share(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts.max(1) as u64;
    let index = index as u64;
    total / parts + u64::from(index < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_grant_exactly_the_count() {
        let rule = StopRule::new(None, Budget::Local(Cell::new(10)));
        assert_eq!(rule.take(4), 4);
        assert_eq!(rule.take(4), 4);
        assert_eq!(rule.take(4), 2);
        assert_eq!(rule.take(4), 0);
        assert!(rule.is_over());
        let shared = Arc::new(AtomicU64::new(5));
        let a = StopRule::new(None, Budget::Shared(shared.clone()));
        let b = StopRule::new(None, Budget::Shared(shared));
        assert_eq!(a.take(3) + b.take(3) + a.take(3), 5);
        assert!(b.is_over());
    }

    #[test]
    fn deadlines_and_halts_stop_work() {
        let past = StopRule::new(Some(Instant::now()), Budget::Unlimited);
        assert_eq!(past.take(1), 0);
        let open = StopRule::new(None, Budget::Unlimited);
        assert_eq!(open.take(7), 7);
        open.halt();
        assert!(open.is_over());
        assert_eq!(open.take(1), 0);
    }

    #[test]
    fn shares_add_up() {
        assert_eq!(
            (0..3).map(|i| share(10, 3, i)).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
        assert_eq!((0..4).map(|i| share(2, 4, i)).sum::<u64>(), 2);
    }

    #[test]
    fn recorder_hands_over_and_resets() {
        let rec = Recorder::new();
        rec.record_send(Ok(()), 2, 20, Duration::from_millis(1));
        let busy = ClientError::Response {
            code: 2,
            remark: String::new(),
        };
        assert_eq!(
            rec.record_send(Err(busy), 1, 10, Duration::ZERO),
            Some(ErrorKey::Code(2))
        );
        let slot = rec.backlog_slot();
        let other = rec.backlog_slot();
        rec.set_backlog(slot, 5);
        rec.set_backlog(other, -3);
        let snap = rec.take();
        assert_eq!((snap.send.ok_msgs, snap.send.response_failed), (2, 1));
        assert_eq!(snap.consume.backlog, Some(5));
        assert_eq!(rec.take().send.ok_msgs, 0);
    }
}

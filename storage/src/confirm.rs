//! The confirm-offset gate (controller mode, RocketMQ 5's `CommitLog.getConfirmOffset` with
//! `readUnCommitted` false): readers see a ConsumeQueue entry only once its record's CommitLog end is
//! at or below the confirm offset, the point every in-sync replica holds. Records stored above it
//! wait here, and their queues' long-polling hook fires when the confirm offset passes them. Without
//! a gate (classic mode, `readUnCommitted`) nothing is held here.

use crate::arrival::Arrival;
use crate::store::MessageStore;

impl MessageStore {
    /// The confirm offset readers are held at, or None when there is no gate.
    pub fn confirm_offset(&self) -> Option<i64> {
        self.inner.confirm.borrow().offset
    }

    /// Installs the gate at `at` (records ending at or below it stay readable), or with None lifts it
    /// and announces everything it held.
    pub fn set_confirm_gate(&self, at: Option<i64>) {
        match at {
            Some(at) => {
                let installed = {
                    let mut g = self.inner.confirm.borrow_mut();
                    if g.offset.is_none() {
                        g.offset = Some(at);
                        true
                    } else {
                        false
                    }
                };
                if !installed {
                    self.set_confirm_offset(at);
                }
            }
            None => {
                let released: Vec<Arrival> = {
                    let mut g = self.inner.confirm.borrow_mut();
                    g.offset = None;
                    g.held.drain(..).map(|(_, a)| a).collect()
                };
                self.notify_arrivals(released.into_iter());
            }
        }
    }

    /// Moves the confirm offset up to `offset` (never down; no effect without a gate) and announces
    /// the records it now covers to the long-polling hook.
    pub fn set_confirm_offset(&self, offset: i64) {
        let released: Vec<Arrival> = {
            let mut g = self.inner.confirm.borrow_mut();
            match g.offset {
                Some(c) if offset > c => g.offset = Some(offset),
                _ => return,
            }
            let n = g.held.iter().take_while(|(end, _)| *end <= offset).count();
            g.held.drain(..n).map(|(_, a)| a).collect()
        };
        self.notify_arrivals(released.into_iter());
    }

    /// With a gate: holds the arrival of a record ending at `end` until the confirm offset reaches
    /// it (the queue's announced max stays below it meanwhile). Hands it back without a gate.
    pub(crate) fn hold_for_confirm(&self, end: i64, arrival: Arrival) -> Option<Arrival> {
        let mut g = self.inner.confirm.borrow_mut();
        let Some(c) = g.offset else {
            return Some(arrival);
        };
        if end <= c {
            return Some(arrival);
        }
        {
            let mut q = arrival.queue.borrow_mut();
            q.announced_max = Some(q.announced_max.unwrap_or(arrival.max_offset - 1));
        }
        g.held.push_back((end, arrival));
        None
    }

    /// After a tail cut to `offset`: records above it are gone, and records written there later
    /// must be confirmed again.
    pub(crate) fn confirm_cut(&self, offset: i64) {
        let mut g = self.inner.confirm.borrow_mut();
        if let Some(c) = g.offset {
            g.offset = Some(c.min(offset));
        }
        g.held.retain(|(end, _)| *end <= offset);
    }

    /// The max offset clients are told of and pulls are bounded by: with a gate, the last entry the
    /// confirm offset covers (as RocketMQ 5 dispatches its ConsumeQueue only up to there); without
    /// one, `max_offset`.
    pub fn readable_max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        if self.inner.confirm.borrow().offset.is_some() {
            self.visible_max_offset(topic, queue_id)
        } else {
            self.max_offset(topic, queue_id)
        }
    }
}

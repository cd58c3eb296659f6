//! The pending timers of one timer queue: a heap ordered by due time, and the low watermark (the lowest
//! queue offset not yet safely delivered) that is persisted.
//!
//! Timers fall due out of offset order, so the watermark can stay far below offsets already delivered.
//! Those are kept in memory only: after a crash the queue is scanned again from the watermark and every
//! unit above it is delivered again (duplicates, never losses). Persisting them would shrink that
//! repeat window at the cost of a second, growing file; at-least-once is what the delay levels give too.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// Delivered units waiting for their copies to be flushed: their offsets, and per target shard the
/// physical end offset it must have flushed.
struct Unsettled {
    offsets: Vec<i64>,
    flush_marks: Vec<(usize, i64)>,
}

#[derive(Default)]
pub struct TimerIndex {
    /// (due ms, queue offset), earliest first.
    heap: BinaryHeap<Reverse<(i64, i64)>>,
    /// Offsets below `scan_next` not yet safely delivered: in the heap, being delivered, or delivered
    /// but not yet known to be flushed.
    outstanding: BTreeSet<i64>,
    unsettled: Vec<Unsettled>,
    /// The next queue offset to read into the heap.
    scan_next: i64,
}

impl TimerIndex {
    /// An index that starts reading its queue at the persisted watermark.
    pub fn new(watermark: i64) -> Self {
        TimerIndex {
            scan_next: watermark.max(0),
            ..TimerIndex::default()
        }
    }

    pub fn scan_next(&self) -> i64 {
        self.scan_next
    }

    /// Moves the read position without adding timers (units gone, or a corrected position).
    pub fn set_scan_next(&mut self, next: i64) {
        self.scan_next = next.max(0);
    }

    /// A parked unit read from the queue.
    pub fn add(&mut self, due_ms: i64, offset: i64) {
        if offset < self.scan_next || !self.outstanding.insert(offset) {
            return;
        }
        self.heap.push(Reverse((due_ms, offset)));
        self.scan_next = offset.saturating_add(1);
    }

    /// When the earliest pending timer is due.
    pub fn next_due(&self) -> Option<i64> {
        self.heap.peek().map(|Reverse((due, _))| *due)
    }

    /// Takes up to `max` timers due at `now`, earliest first; each must come back through
    /// `delivered`, `skipped` or `retry`.
    pub fn take_due(&mut self, now: i64, max: usize) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        while out.len() < max {
            match self.heap.peek() {
                Some(Reverse((due, _))) if *due <= now => {}
                _ => break,
            }
            if let Some(Reverse(entry)) = self.heap.pop() {
                out.push(entry);
            }
        }
        out
    }

    /// A timer whose delivery failed: tried again at `at`.
    pub fn retry(&mut self, at: i64, offset: i64) {
        self.heap.push(Reverse((at, offset)));
    }

    /// A unit that can never be delivered: done.
    pub fn skipped(&mut self, offset: i64) {
        self.outstanding.remove(&offset);
    }

    /// Units stored on their real queues; done once `flush_marks` are flushed (at once without any).
    pub fn delivered(&mut self, offsets: Vec<i64>, flush_marks: Vec<(usize, i64)>) {
        if flush_marks.is_empty() {
            for o in &offsets {
                self.outstanding.remove(o);
            }
        } else if !offsets.is_empty() {
            self.unsettled.push(Unsettled {
                offsets,
                flush_marks,
            });
        }
    }

    /// The shards whose flushed offset `settle` needs.
    pub fn flush_targets(&self) -> Vec<usize> {
        let mut t: Vec<usize> = self
            .unsettled
            .iter()
            .flat_map(|u| u.flush_marks.iter().map(|(s, _)| *s))
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// Marks done the deliveries whose copies are flushed (`flushed(shard)` = its flushed offset).
    pub fn settle(&mut self, flushed: impl Fn(usize) -> Option<i64>) {
        let outstanding = &mut self.outstanding;
        self.unsettled.retain(|u| {
            let done = u
                .flush_marks
                .iter()
                .all(|(s, end)| flushed(*s).is_some_and(|f| f >= *end));
            if done {
                for o in &u.offsets {
                    outstanding.remove(o);
                }
            }
            !done
        });
    }

    /// The lowest offset not yet safely delivered: where a restart must read from.
    pub fn watermark(&self) -> i64 {
        self.outstanding
            .first()
            .copied()
            .unwrap_or(self.scan_next)
            .min(self.scan_next)
    }

    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// Whether deliveries wait for their copies to be flushed (the watermark may move once they are).
    pub fn has_unsettled(&self) -> bool {
        !self.unsettled.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_order_and_watermark() {
        let mut ix = TimerIndex::new(10);
        // Units 10..=13 due out of offset order.
        for (due, off) in [(400, 10), (100, 11), (300, 12), (200, 13)] {
            ix.add(due, off);
        }
        ix.add(50, 12); // read twice: ignored
        ix.add(50, 3); // below the read position: ignored
        assert_eq!(ix.scan_next(), 14);
        assert_eq!(ix.next_due(), Some(100));
        assert_eq!(ix.take_due(99, 10), vec![]);
        assert_eq!(ix.take_due(250, 10), vec![(100, 11), (200, 13)]);
        assert_eq!(ix.watermark(), 10);
        // 11 delivered and flushed at once, 13 waits for shard 1 to flush to 500.
        ix.delivered(vec![11], Vec::new());
        ix.delivered(vec![13], vec![(1, 500)]);
        assert_eq!(ix.flush_targets(), vec![1]);
        assert_eq!(ix.take_due(400, 10), vec![(300, 12), (400, 10)]);
        ix.delivered(vec![10], Vec::new());
        ix.retry(1000, 12);
        assert_eq!(ix.watermark(), 12);
        assert_eq!(ix.take_due(999, 10), vec![]);
        assert_eq!(ix.take_due(1000, 10), vec![(1000, 12)]);
        ix.skipped(12);
        // 13 is not flushed yet: the watermark stays on it.
        assert_eq!(ix.watermark(), 13);
        ix.settle(|s| (s == 1).then_some(499));
        assert_eq!(ix.watermark(), 13);
        ix.settle(|s| (s == 1).then_some(500));
        assert_eq!(ix.watermark(), 14);
        assert!(ix.flush_targets().is_empty());
        assert_eq!(ix.pending(), 0);
        assert_eq!(TimerIndex::new(ix.watermark()).watermark(), 14);
    }

    #[test]
    fn take_due_is_bounded() {
        let mut ix = TimerIndex::new(0);
        for off in 0..5 {
            ix.add(1, off);
        }
        assert_eq!(ix.take_due(1, 2).len(), 2);
        assert_eq!(ix.pending(), 3);
        assert_eq!(ix.watermark(), 0);
    }
}

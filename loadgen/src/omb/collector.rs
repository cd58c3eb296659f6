//! Sums the merged samples into report periods (printed, and kept for the result when they are part
//! of the test) and into the test's total, and counts what was sent and received for the phases.

use std::time::Duration;

use super::result::Period;
use crate::stats::Snapshot;

/// Sums samples into periods (printed, and kept for the result when measured) and the test's total.
pub struct Collector {
    period: Snapshot,
    pub period_start: Duration,
    period_warmup: bool,
    pub sent: u64,
    pub received: u64,
    pub test: Snapshot,
    pub test_seconds: f64,
    pub periods: Vec<Period>,
}

impl Collector {
    pub fn new(warmup: bool) -> Collector {
        Collector {
            period: Snapshot::default(),
            period_start: Duration::ZERO,
            period_warmup: warmup,
            sent: 0,
            received: 0,
            test: Snapshot::default(),
            test_seconds: 0.0,
            periods: Vec::new(),
        }
    }

    pub fn add(&mut self, sample: &Snapshot, measuring: bool) {
        self.sent = self.sent.saturating_add(sample.send.ok_msgs);
        self.received = self.received.saturating_add(sample.consume.msgs);
        self.period.accumulate(sample);
        if measuring {
            self.test.accumulate(sample);
        }
    }

    /// Ends the period at `end`; returns its line. `next_warmup`: whether the next one is warm-up.
    pub fn flush(&mut self, end: Duration, backlog: u64, next_warmup: bool) -> String {
        let length = end.saturating_sub(self.period_start);
        let period = Period::of(&self.period, length, backlog);
        let tag = if self.period_warmup { " warm-up" } else { "" };
        let line = format!("[{:>7.1}s{tag}] {}", end.as_secs_f64(), period.line());
        if !self.period_warmup {
            self.test_seconds += length.as_secs_f64();
            self.periods.push(period);
        }
        self.period = Snapshot::default();
        self.period_start = end;
        self.period_warmup = next_warmup;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_after_the_warmup_make_the_series() {
        let mut c = Collector::new(true);
        let mut s = Snapshot::default();
        s.send.record_ok(10, 640, Duration::from_millis(1));
        c.add(&s, false);
        let line = c.flush(Duration::from_secs(1), 0, false);
        assert!(line.contains("warm-up] Pub rate 10.0 msg/s"), "{line}");
        c.add(&s, true);
        c.add(&s, true);
        let line = c.flush(Duration::from_secs(3), 5, false);
        assert!(line.starts_with("[    3.0s] Pub rate 10.0 msg/s"), "{line}");
        assert_eq!(c.periods.len(), 1);
        assert_eq!(c.periods[0].backlog, 5);
        assert_eq!((c.sent, c.test.send.ok_msgs, c.test_seconds), (30, 20, 2.0));
    }
}

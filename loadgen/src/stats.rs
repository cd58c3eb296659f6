//! What each executor measures per report interval (counts, bytes, latency histograms, errors), and
//! the figures derived from it (TPS, MB/s, percentiles).

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::errors::{ErrorCounts, ErrorKey};

/// Latencies are recorded in microseconds, 1 us to 1 h, 3 significant digits.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    pub fn new() -> Latency {
        // Bounds are constant and valid, so creation cannot fail; fall back to auto-resize anyway.
        let hist = Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
            .or_else(|_| Histogram::new(3))
            .unwrap_or_else(|_| unreachable_histogram());
        Latency { hist }
    }

    /// Records one latency (clamped into the histogram's range).
    pub fn record(&mut self, latency: Duration) {
        self.record_n(latency, 1);
    }

    pub fn record_n(&mut self, latency: Duration, n: u64) {
        let us = u64::try_from(latency.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_LATENCY_US);
        let _ = self.hist.record_n(us, n);
    }

    pub fn merge(&mut self, other: &Latency) {
        let _ = self.hist.add(&other.hist);
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Milliseconds at a percentile (0..=100), 0 when empty.
    pub fn percentile_ms(&self, percentile: f64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        self.hist.value_at_percentile(percentile) as f64 / 1000.0
    }

    pub fn mean_ms(&self) -> f64 {
        if self.hist.is_empty() {
            0.0
        } else {
            self.hist.mean() / 1000.0
        }
    }

    pub fn max_ms(&self) -> f64 {
        if self.hist.is_empty() {
            0.0
        } else {
            self.hist.max() as f64 / 1000.0
        }
    }

    /// Milliseconds at each of [`CURVE_PERCENTILES`], then the maximum as percentile 100: enough of
    /// the histogram to draw a percentile curve.
    pub fn percentile_curve(&self) -> Vec<PercentilePoint> {
        CURVE_PERCENTILES
            .iter()
            .map(|&percentile| PercentilePoint {
                percentile,
                ms: self.percentile_ms(percentile),
            })
            .chain(std::iter::once(PercentilePoint {
                percentile: 100.0,
                ms: self.max_ms(),
            }))
            .collect()
    }

    pub fn figures(&self) -> LatencyFigures {
        LatencyFigures {
            avg: self.mean_ms(),
            p50: self.percentile_ms(50.0),
            p90: self.percentile_ms(90.0),
            p99: self.percentile_ms(99.0),
            p999: self.percentile_ms(99.9),
            p9999: self.percentile_ms(99.99),
            max: self.max_ms(),
        }
    }
}

fn unreachable_histogram() -> Histogram<u64> {
    // Histogram::new(3) only fails for sigfig > 5; reaching here means hdrhistogram changed.
    panic!("hdrhistogram rejected constant bounds")
}

/// The percentiles of [`Latency::percentile_curve`] (the maximum follows them as 100).
pub const CURVE_PERCENTILES: [f64; 11] = [
    50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999,
];

/// One point of a percentile curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PercentilePoint {
    pub percentile: f64,
    pub ms: f64,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LatencyFigures {
    pub avg: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

/// Producer side of one interval.
#[derive(Debug, Clone, Default)]
pub struct SendStats {
    /// Messages the broker accepted (SUCCESS), or handed to the socket for oneway sends.
    pub ok_msgs: u64,
    /// Body bytes of those messages.
    pub ok_bytes: u64,
    /// Messages whose send failed without a response (timeout, connection...).
    pub send_failed: u64,
    /// Messages the broker answered with a code other than SUCCESS.
    pub response_failed: u64,
    pub errors: ErrorCounts,
    /// Open loop only: messages that were due before the end but never sent, because every
    /// in-flight slot was taken (a stalled broker shows here, not as a quiet gap).
    pub missed: u64,
    /// One sample per request (a batch is one request).
    pub latency: Latency,
    /// Open loop measured as OMB does (`loadgen omb`): how late each request left after its intended
    /// time (`latency` then runs from the actual send).
    pub delay: Latency,
}

impl SendStats {
    pub fn record_ok(&mut self, msgs: u64, bytes: u64, latency: Duration) {
        self.ok_msgs = self.ok_msgs.saturating_add(msgs);
        self.ok_bytes = self.ok_bytes.saturating_add(bytes);
        self.latency.record(latency);
    }

    pub fn record_error(&mut self, key: ErrorKey, msgs: u64) {
        if key.is_response() {
            self.response_failed = self.response_failed.saturating_add(msgs);
        } else {
            self.send_failed = self.send_failed.saturating_add(msgs);
        }
        self.errors.add(key, msgs);
    }

    pub fn merge(&mut self, other: &SendStats) {
        self.ok_msgs = self.ok_msgs.saturating_add(other.ok_msgs);
        self.ok_bytes = self.ok_bytes.saturating_add(other.ok_bytes);
        self.send_failed = self.send_failed.saturating_add(other.send_failed);
        self.response_failed = self.response_failed.saturating_add(other.response_failed);
        self.missed = self.missed.saturating_add(other.missed);
        self.errors.merge(&other.errors);
        self.latency.merge(&other.latency);
        self.delay.merge(&other.delay);
    }

    /// Every message attempted: accepted or failed.
    pub fn attempted(&self) -> u64 {
        self.ok_msgs
            .saturating_add(self.send_failed)
            .saturating_add(self.response_failed)
    }
}

/// Consumer side of one interval.
#[derive(Debug, Clone, Default)]
pub struct ConsumeStats {
    pub msgs: u64,
    pub bytes: u64,
    /// Pulls that failed (by code or local kind); pulls answering "nothing new" are not failures.
    pub pull_failed: u64,
    pub errors: ErrorCounts,
    /// End-to-end latency per message: consume time minus the time the producer stamped.
    pub e2e: Latency,
    /// Messages stored but not yet consumed, as of each queue's latest pull (None: no pull answered yet).
    pub backlog: Option<i64>,
}

impl ConsumeStats {
    pub fn record_error(&mut self, key: ErrorKey) {
        self.pull_failed = self.pull_failed.saturating_add(1);
        self.errors.add(key, 1);
    }

    /// Adds counts; backlogs of different executors (different queues) add up.
    pub fn merge(&mut self, other: &ConsumeStats) {
        self.msgs = self.msgs.saturating_add(other.msgs);
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.pull_failed = self.pull_failed.saturating_add(other.pull_failed);
        self.errors.merge(&other.errors);
        self.e2e.merge(&other.e2e);
        self.backlog = match (self.backlog, other.backlog) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Everything one executor measured in one interval.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub send: SendStats,
    pub consume: ConsumeStats,
}

impl Snapshot {
    /// Adds another executor's figures for the same interval (backlogs of their queues add up).
    pub fn merge(&mut self, other: &Snapshot) {
        self.send.merge(&other.send);
        self.consume.merge(&other.consume);
    }

    /// Adds a later interval: counts add up, the backlog is the later one (it is a level, not a count).
    pub fn accumulate(&mut self, later: &Snapshot) {
        let backlog = later.consume.backlog.or(self.consume.backlog);
        self.merge(later);
        self.consume.backlog = backlog;
    }
}

/// Messages per second over `elapsed` (0 for an empty window).
pub fn per_second(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        0.0
    } else {
        count as f64 / secs
    }
}

/// MB/s (10^6 bytes, as RocketMQ's tools and disk vendors count) over `elapsed`.
pub fn mb_per_second(bytes: u64, elapsed: Duration) -> f64 {
    per_second(bytes, elapsed) / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_recorded_samples() {
        let mut lat = Latency::new();
        for us in 1..=1000u64 {
            lat.record(Duration::from_micros(us));
        }
        let f = lat.figures();
        assert_eq!(lat.count(), 1000);
        assert!((f.p50 - 0.5).abs() < 0.002, "{f:?}");
        assert!((f.p99 - 0.99).abs() < 0.002, "{f:?}");
        assert!((f.max - 1.0).abs() < 0.002, "{f:?}");
        assert!((f.avg - 0.5005).abs() < 0.002, "{f:?}");
        assert_eq!(Latency::new().figures(), LatencyFigures::default());
    }

    #[test]
    fn out_of_range_latencies_are_clamped_not_lost() {
        let mut lat = Latency::new();
        lat.record(Duration::ZERO);
        lat.record(Duration::from_secs(100_000));
        assert_eq!(lat.count(), 2);
        assert!(lat.max_ms() >= 3_599_000.0);
    }

    #[test]
    fn send_stats_split_failures_by_kind_and_merge() {
        let mut a = SendStats::default();
        a.record_ok(32, 32 * 1024, Duration::from_millis(2));
        a.record_error(ErrorKey::Code(2), 32);
        a.record_error(ErrorKey::Local("timeout"), 1);
        assert_eq!((a.ok_msgs, a.response_failed, a.send_failed), (32, 32, 1));
        assert_eq!(a.attempted(), 65);
        let mut total = SendStats::default();
        total.merge(&a);
        total.merge(&a);
        assert_eq!(total.ok_bytes, 2 * 32 * 1024);
        assert_eq!(total.errors.get(ErrorKey::Code(2)), 64);
        assert_eq!(total.latency.count(), 2);
    }

    #[test]
    fn consume_backlogs_add_across_executors() {
        let mut a = ConsumeStats {
            msgs: 5,
            backlog: Some(10),
            ..ConsumeStats::default()
        };
        let b = ConsumeStats {
            msgs: 1,
            backlog: None,
            ..ConsumeStats::default()
        };
        let c = ConsumeStats {
            backlog: Some(7),
            ..ConsumeStats::default()
        };
        a.merge(&b);
        assert_eq!(a.backlog, Some(10));
        a.merge(&c);
        assert_eq!((a.msgs, a.backlog), (6, Some(17)));
    }

    #[test]
    fn backlog_is_a_level_over_time() {
        let mut total = Snapshot::default();
        for backlog in [Some(100), Some(40), None] {
            let mut interval = Snapshot::default();
            interval.consume.msgs = 10;
            interval.consume.backlog = backlog;
            total.accumulate(&interval);
        }
        assert_eq!((total.consume.msgs, total.consume.backlog), (30, Some(40)));
    }

    #[test]
    fn rates_over_time() {
        assert_eq!(per_second(500, Duration::from_millis(500)), 1000.0);
        assert_eq!(mb_per_second(2_000_000, Duration::from_secs(2)), 1.0);
        assert_eq!(per_second(5, Duration::ZERO), 0.0);
    }
}

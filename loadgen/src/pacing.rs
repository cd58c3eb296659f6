//! Open-loop pacing: the intended send time of every message at a fixed rate, so latency is measured
//! from when a message should have left, and a stalled broker cannot hide its stalls.

use std::time::{Duration, Instant};

/// Intended times `start + n / rate` for tickets n = 0, 1, 2...
#[derive(Debug, Clone)]
pub struct Pacer {
    start: Instant,
    rate_per_sec: f64,
    next: u64,
}

impl Pacer {
    /// `rate_per_sec` must be positive (callers check; a non-positive rate is treated as 1/s).
    pub fn new(start: Instant, rate_per_sec: f64) -> Pacer {
        let rate_per_sec = if rate_per_sec.is_finite() && rate_per_sec > 0.0 {
            rate_per_sec
        } else {
            1.0
        };
        Pacer {
            start,
            rate_per_sec,
            next: 0,
        }
    }

    /// When ticket `n` is due.
    pub fn intended(&self, n: u64) -> Instant {
        self.start + Duration::from_secs_f64(n as f64 / self.rate_per_sec)
    }

    /// The next ticket and its intended time.
    pub fn next_ticket(&mut self) -> (u64, Instant) {
        let n = self.next;
        self.next = n.saturating_add(1);
        (n, self.intended(n))
    }

    /// Tickets already handed out.
    pub fn issued(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_are_spaced_by_the_rate() {
        let start = Instant::now();
        let mut pacer = Pacer::new(start, 20_000.0);
        let (n0, t0) = pacer.next_ticket();
        let (n1, t1) = pacer.next_ticket();
        assert_eq!((n0, n1), (0, 1));
        assert_eq!(t0, start);
        assert_eq!(t1 - t0, Duration::from_micros(50));
        assert_eq!(pacer.intended(20_000) - start, Duration::from_secs(1));
        assert_eq!(pacer.issued(), 2);
        assert_eq!(
            Pacer::new(start, 0.0).intended(3) - start,
            Duration::from_secs(3)
        );
    }
}

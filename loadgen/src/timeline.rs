//! When report intervals end: warm-up ticks every interval until the warm-up ends (exactly at its
//! end), then measured ticks every interval from there, until the run's end (if it has one).

use std::time::{Duration, Instant};

/// The schedule every executor of a run shares (all built from the same start instant).
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    pub start: Instant,
    pub warmup: Duration,
    pub interval: Duration,
    /// Measured duration after the warm-up; None = until a count is reached.
    pub measured: Option<Duration>,
}

/// One interval end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub seq: u64,
    pub at: Instant,
    pub warmup: bool,
}

impl Timeline {
    pub fn warmup_end(&self) -> Instant {
        self.start + self.warmup
    }

    /// When load stops (None when only a count bounds the run).
    pub fn end(&self) -> Option<Instant> {
        self.measured.map(|m| self.warmup_end() + m)
    }

    /// Number of warm-up intervals.
    fn warmup_ticks(&self) -> u64 {
        if self.warmup.is_zero() || self.interval.is_zero() {
            return 0;
        }
        let n = self.warmup.as_nanos().div_ceil(self.interval.as_nanos());
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// Interval end number `seq`; None once it would be at or past the end (the final report,
    /// sent when the load has stopped, covers the rest).
    pub fn tick(&self, seq: u64) -> Option<Tick> {
        let warmup_ticks = self.warmup_ticks();
        let (at, warmup) = if seq < warmup_ticks {
            let at = self.start + mul(self.interval, seq.saturating_add(1));
            (at.min(self.warmup_end()), true)
        } else {
            let k = seq - warmup_ticks;
            (
                self.warmup_end() + mul(self.interval, k.saturating_add(1)),
                false,
            )
        };
        match self.end() {
            Some(end) if at >= end => None,
            _ => Some(Tick { seq, at, warmup }),
        }
    }

    /// Whether `at` still lies in the warm-up.
    pub fn in_warmup(&self, at: Instant) -> bool {
        at < self.warmup_end()
    }
}

fn mul(d: Duration, n: u64) -> Duration {
    d.checked_mul(u32::try_from(n).unwrap_or(u32::MAX))
        .unwrap_or(Duration::MAX / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_ticks_end_exactly_at_the_warmup_end() {
        let start = Instant::now();
        let t = Timeline {
            start,
            warmup: Duration::from_millis(2500),
            interval: Duration::from_secs(1),
            measured: Some(Duration::from_millis(2500)),
        };
        let ticks: Vec<(Duration, bool)> = (0..10)
            .map_while(|s| t.tick(s))
            .map(|tick| (tick.at - start, tick.warmup))
            .collect();
        assert_eq!(
            ticks,
            vec![
                (Duration::from_secs(1), true),
                (Duration::from_secs(2), true),
                (Duration::from_millis(2500), true),
                (Duration::from_millis(3500), false),
                (Duration::from_millis(4500), false),
            ]
        );
        assert_eq!(t.end(), Some(start + Duration::from_secs(5)));
        assert!(t.in_warmup(start + Duration::from_secs(2)));
        assert!(!t.in_warmup(start + Duration::from_millis(2500)));
    }

    #[test]
    fn count_bounded_runs_tick_forever() {
        let t = Timeline {
            start: Instant::now(),
            warmup: Duration::ZERO,
            interval: Duration::from_secs(1),
            measured: None,
        };
        assert_eq!(t.tick(0).map(|x| x.warmup), Some(false));
        assert!(t.tick(1_000_000).is_some());
        assert_eq!(t.end(), None);
    }
}

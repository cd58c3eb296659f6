//! One statistics item (RocketMQ's `StatsItem`): a counter with its sum and number of additions over
//! the last minute, hour and day, kept as ring buffers of fixed-length buckets (10 s, 10 min, 1 h)
//! that are rotated when written or read, so no timer is needed.

/// Sum and count of additions over one window, with the milliseconds it covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowSum {
    pub sum: u64,
    pub times: u64,
    pub covered_ms: u64,
}

impl WindowSum {
    /// Additions of several shards over the same window.
    pub fn merge(self, other: WindowSum) -> WindowSum {
        WindowSum {
            sum: self.sum.wrapping_add(other.sum),
            times: self.times.wrapping_add(other.times),
            covered_ms: self.covered_ms.max(other.covered_ms),
        }
    }

    /// Per second over the covered time (0 when nothing is covered).
    pub fn tps(&self) -> f64 {
        if self.covered_ms == 0 {
            return 0.0;
        }
        self.sum as f64 * 1000.0 / self.covered_ms as f64
    }

    /// The mean value per addition (RocketMQ's `avgpt`).
    pub fn avg(&self) -> f64 {
        if self.times == 0 {
            return 0.0;
        }
        self.sum as f64 / self.times as f64
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    index: u64,
    sum: u64,
    times: u64,
}

/// `N` buckets of `unit_ms` each; a window is the current bucket and the `N - 1` before it.
#[derive(Debug, Clone)]
struct Ring<const N: usize> {
    unit_ms: u64,
    buckets: [Bucket; N],
}

impl<const N: usize> Ring<N> {
    fn new(unit_ms: u64) -> Self {
        Ring {
            unit_ms: unit_ms.max(1),
            buckets: [Bucket::default(); N],
        }
    }

    fn add(&mut self, now_ms: u64, value: u64) {
        let index = now_ms / self.unit_ms;
        let slot = (index % N as u64) as usize;
        if let Some(b) = self.buckets.get_mut(slot) {
            if b.index != index {
                *b = Bucket {
                    index,
                    sum: 0,
                    times: 0,
                };
            }
            b.sum = b.sum.wrapping_add(value);
            b.times = b.times.wrapping_add(1);
        }
    }

    /// The window ending now; `since_ms` (the start of counting) shortens the covered time.
    fn window(&self, now_ms: u64, since_ms: u64) -> WindowSum {
        let current = now_ms / self.unit_ms;
        let oldest = current.saturating_sub(N as u64 - 1);
        let mut out = WindowSum::default();
        for b in &self.buckets {
            if b.times > 0 && b.index >= oldest && b.index <= current {
                out.sum = out.sum.wrapping_add(b.sum);
                out.times = out.times.wrapping_add(b.times);
            }
        }
        let start = (oldest * self.unit_ms).max(since_ms);
        out.covered_ms = now_ms.saturating_sub(start);
        out
    }
}

/// The minute, hour and day windows of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemWindows {
    pub minute: WindowSum,
    pub hour: WindowSum,
    pub day: WindowSum,
}

impl ItemWindows {
    pub fn merge(self, other: ItemWindows) -> ItemWindows {
        ItemWindows {
            minute: self.minute.merge(other.minute),
            hour: self.hour.merge(other.hour),
            day: self.day.merge(other.day),
        }
    }
}

/// One counter (e.g. messages put to one topic) with its recent windows.
#[derive(Debug, Clone)]
pub struct StatsItem {
    minute: Ring<6>,
    hour: Ring<6>,
    day: Ring<24>,
}

impl Default for StatsItem {
    fn default() -> Self {
        StatsItem {
            minute: Ring::new(10_000),
            hour: Ring::new(600_000),
            day: Ring::new(3_600_000),
        }
    }
}

impl StatsItem {
    /// Adds `value` (one addition) at `now_ms`.
    pub fn add(&mut self, now_ms: u64, value: u64) {
        self.minute.add(now_ms, value);
        self.hour.add(now_ms, value);
        self.day.add(now_ms, value);
    }

    /// The windows ending at `now_ms`; counting began at `since_ms` (the broker's start).
    pub fn windows(&self, now_ms: u64, since_ms: u64) -> ItemWindows {
        ItemWindows {
            minute: self.minute.window(now_ms, since_ms),
            hour: self.hour.window(now_ms, since_ms),
            day: self.day.window(now_ms, since_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn minute_window_forgets_old_buckets_and_rates_over_covered_time() {
        let mut item = StatsItem::default();
        item.add(T0, 100);
        item.add(T0 + 5_000, 50);
        let w = item.windows(T0 + 10_000, 0);
        assert_eq!((w.minute.sum, w.minute.times), (150, 2));
        assert!(w.minute.covered_ms >= 50_000 && w.minute.covered_ms <= 60_000);
        // Counting began at T0: the rate is over the 10 s since then, not a whole minute.
        let w = item.windows(T0 + 10_000, T0);
        assert_eq!(w.minute.covered_ms, 10_000);
        assert!((w.minute.tps() - 15.0).abs() < 1e-9);
        assert!((w.minute.avg() - 75.0).abs() < 1e-9);
        // Two minutes later the minute window is empty; the hour and day still hold it.
        let w = item.windows(T0 + 120_000, T0);
        assert_eq!(w.minute.sum, 0);
        assert_eq!(w.hour.sum, 150);
        assert_eq!(w.day.sum, 150);
        // A reused slot starts from zero.
        item.add(T0 + 120_000, 7);
        let w = item.windows(T0 + 120_000, T0);
        assert_eq!((w.minute.sum, w.minute.times), (7, 1));
        assert_eq!(w.day.sum, 157);
    }

    #[test]
    fn merged_windows_add_up() {
        let a = WindowSum {
            sum: 10,
            times: 2,
            covered_ms: 1000,
        };
        let b = WindowSum {
            sum: 30,
            times: 3,
            covered_ms: 1000,
        };
        let m = a.merge(b);
        assert_eq!((m.sum, m.times), (40, 5));
        assert!((m.tps() - 40.0).abs() < 1e-9);
        assert_eq!(WindowSum::default().tps(), 0.0);
        assert_eq!(WindowSum::default().avg(), 0.0);
    }
}

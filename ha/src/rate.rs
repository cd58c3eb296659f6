//! Bytes moved per second on one replication stream, as RocketMQ's `haStatus` shows them
//! (`transferredByteInSecond`): the bytes of the last whole second, 0 once a second went by without
//! any. Single-threaded (one shard's executor), so plain cells.

use std::cell::Cell;
use std::time::{Duration, Instant};

const SECOND: Duration = Duration::from_secs(1);

/// A one-second window of byte counts.
#[derive(Debug)]
pub struct ByteRate {
    window_start: Cell<Instant>,
    in_window: Cell<u64>,
    last_second: Cell<u64>,
}

impl Default for ByteRate {
    fn default() -> Self {
        ByteRate {
            window_start: Cell::new(Instant::now()),
            in_window: Cell::new(0),
            last_second: Cell::new(0),
        }
    }
}

impl ByteRate {
    /// Counts `bytes` moved now.
    pub fn add(&self, bytes: u64) {
        self.add_at(bytes, Instant::now());
    }

    fn roll(&self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.window_start.get());
        if elapsed < SECOND {
            return;
        }
        // The window that just ended is the last second only if it ended less than a second ago.
        let last = if elapsed < SECOND * 2 {
            self.in_window.get()
        } else {
            0
        };
        self.last_second.set(last);
        self.in_window.set(0);
        self.window_start.set(now);
    }

    fn add_at(&self, bytes: u64, now: Instant) {
        self.roll(now);
        self.in_window
            .set(self.in_window.get().saturating_add(bytes));
    }

    /// Bytes moved in the last whole second.
    pub fn per_second(&self) -> u64 {
        self.per_second_at(Instant::now())
    }

    fn per_second_at(&self, now: Instant) -> u64 {
        self.roll(now);
        self.last_second.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_whole_second_counts_and_silence_clears_it() {
        let r = ByteRate::default();
        let t0 = r.window_start.get();
        r.add_at(100, t0);
        r.add_at(50, t0 + Duration::from_millis(500));
        assert_eq!(r.per_second_at(t0 + Duration::from_millis(900)), 0);
        assert_eq!(r.per_second_at(t0 + Duration::from_millis(1100)), 150);
        r.add_at(10, t0 + Duration::from_millis(1200));
        assert_eq!(r.per_second_at(t0 + Duration::from_millis(2150)), 10);
        // Two idle seconds: nothing moved in the last one.
        assert_eq!(r.per_second_at(t0 + Duration::from_millis(4500)), 0);
    }
}

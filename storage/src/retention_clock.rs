//! The clock retention reads: the wall clock, but never ahead of the wall clock the store opened with
//! plus the monotonic time since. A forward step of the wall clock while the broker runs (an operator's
//! `date -s`, a VM resumed with a stale clock corrected by NTP) would otherwise make every segment look
//! older by the step and let retention delete data that has not expired; a backward step only makes
//! retention later. Both clocks are slewed alike by NTP, so without steps they agree. A step made while
//! the broker was down cannot be told from a correct clock and is trusted.

use std::cell::Cell;
use std::time::Instant;

/// Steps smaller than this are not worth a warning.
const STEP_WARN_MS: i64 = 1000;

#[derive(Debug)]
pub struct RetentionClock {
    wall_at_open: i64,
    opened: Instant,
    warned: Cell<bool>,
}

impl RetentionClock {
    pub fn new(wall_now_ms: i64) -> Self {
        RetentionClock {
            wall_at_open: wall_now_ms,
            opened: Instant::now(),
            warned: Cell::new(false),
        }
    }

    /// Retention's "now" for the wall clock reading `wall_now_ms`, with the monotonic time since the
    /// store opened.
    pub fn now(&self, wall_now_ms: i64) -> i64 {
        self.now_after(wall_now_ms, self.opened.elapsed().as_millis() as i64)
    }

    fn now_after(&self, wall_now_ms: i64, elapsed_ms: i64) -> i64 {
        let steady = self.wall_at_open.saturating_add(elapsed_ms);
        let ahead = wall_now_ms.saturating_sub(steady);
        if ahead > STEP_WARN_MS {
            if !self.warned.replace(true) {
                tracing::warn!(
                    "the wall clock stepped {} s ahead of the time since the store opened: retention \
                     ignores the step until the broker restarts",
                    ahead / 1000
                );
            }
        } else {
            self.warned.set(false);
        }
        wall_now_ms.min(steady)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forward_step_is_ignored_and_a_backward_one_is_followed() {
        let c = RetentionClock::new(1_000_000);
        assert_eq!(c.now_after(1_005_000, 5_000), 1_005_000, "no step");
        assert_eq!(
            c.now_after(1_005_000 + 7_200_000, 5_000),
            1_005_000,
            "two hours ahead: ignored"
        );
        assert_eq!(
            c.now_after(1_005_000 - 3_600_000, 5_000),
            1_005_000 - 3_600_000
        );
    }
}

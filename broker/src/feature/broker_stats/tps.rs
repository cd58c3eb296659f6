//! The broker-wide rates of GET_BROKER_RUNTIME_INFO (`putTps`, `getFoundTps`, `getMissTps`,
//! `getTotalTps`, `getTransferedTps`): cumulative counters sampled about once a second, the last
//! ten minutes of samples kept, each rate given over 10 s, 1 min and 10 min as RocketMQ's store
//! prints them ("x.xx y.yy z.zz"). A window longer than the samples held (a young broker) is
//! measured over the samples there are.

use std::collections::VecDeque;

/// The counters sampled on one shard, all cumulative since the broker started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages stored (every put, client sends and the broker's own).
    pub put_msgs: u64,
    /// Pulls that found messages.
    pub get_found: u64,
    /// Pulls that found none.
    pub get_miss: u64,
    /// Messages returned by pulls.
    pub get_transferred: u64,
}

/// The windows of every rate, in seconds.
pub const WINDOWS_S: [u64; 3] = [10, 60, 600];
const MAX_SAMPLES: usize = 601;

/// Samples `(time ms, counters)`, oldest first.
#[derive(Debug, Default)]
pub struct TpsSamples {
    samples: VecDeque<(u64, Counters)>,
}

impl TpsSamples {
    pub fn push(&mut self, now_ms: u64, c: Counters) {
        self.samples.push_back((now_ms, c));
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// The rate of `field` over about the last `window_s` seconds of samples.
    pub fn rate(&self, window_s: u64, field: fn(&Counters) -> u64) -> f64 {
        let Some(&(t_last, last)) = self.samples.back() else {
            return 0.0;
        };
        let since = t_last.saturating_sub(window_s.saturating_mul(1000));
        // The oldest sample inside the window, else the oldest there is.
        let first = self
            .samples
            .iter()
            .find(|(t, _)| *t + 500 >= since)
            .or(self.samples.front());
        let Some(&(t_first, first)) = first else {
            return 0.0;
        };
        let dt = t_last.saturating_sub(t_first);
        if dt == 0 {
            return 0.0;
        }
        field(&last).saturating_sub(field(&first)) as f64 * 1000.0 / dt as f64
    }

    /// "x.xx y.yy z.zz": the rate over 10 s, 1 min and 10 min.
    #[cfg(test)]
    pub fn format(&self, field: fn(&Counters) -> u64) -> String {
        format_rates(&WINDOWS_S.map(|w| self.rate(w, field)))
    }
}

/// Rates over `WINDOWS_S` as RocketMQ prints them: "x.xx y.yy z.zz".
pub fn format_rates(rates: &[f64; WINDOWS_S.len()]) -> String {
    let text: Vec<String> = rates.iter().map(|r| format!("{r:.2}")).collect();
    text.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn puts(n: u64) -> Counters {
        Counters {
            put_msgs: n,
            ..Counters::default()
        }
    }

    #[test]
    fn rates_over_each_window() {
        let mut s = TpsSamples::default();
        assert_eq!(s.format(|c| c.put_msgs), "0.00 0.00 0.00");
        // 100 msg/s for 120 s, then 10 msg/s for the last 10 s.
        let mut total = 0;
        for sec in 0..=130u64 {
            s.push(sec * 1000, puts(total));
            total += if sec < 120 { 100 } else { 10 };
        }
        assert!((s.rate(10, |c| c.put_msgs) - 10.0).abs() < 1e-9);
        // Last 60 s: 50 s at 100, 10 s at 10.
        assert!((s.rate(60, |c| c.put_msgs) - (5000.0 + 100.0) / 60.0).abs() < 1e-9);
        // Only 130 s of samples for the 10-minute window.
        assert!((s.rate(600, |c| c.put_msgs) - (12000.0 + 100.0) / 130.0).abs() < 1e-9);
        assert_eq!(s.format(|c| c.put_msgs), "10.00 85.00 93.08");
    }

    #[test]
    fn keeps_ten_minutes_of_samples() {
        let mut s = TpsSamples::default();
        for sec in 0..2000u64 {
            s.push(sec * 1000, puts(sec * 3));
        }
        assert_eq!(s.samples.len(), MAX_SAMPLES);
        assert!((s.rate(600, |c| c.put_msgs) - 3.0).abs() < 1e-9);
    }
}

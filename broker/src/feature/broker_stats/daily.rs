//! Yesterday's and today's message totals, as Apache's BrokerStats keeps them for `clusterList`
//! (InTotalYest = todayMorning - yesterdayMorning, InTotalToday = todayNow - todayMorning): at the
//! first sample after local midnight, today's morning snapshot becomes yesterday's and the current
//! totals become today's. Counters start at zero with the process, so before the first midnight
//! "today" is everything since start (as Apache's).

/// The morning snapshots of one shard's cumulative put/get totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DailyTotals {
    /// The local day (`year * 1000 + day of year`) the snapshots were last rolled for; `None` until
    /// the first sample.
    day: Option<i64>,
    pub put_today_morning: u64,
    pub got_today_morning: u64,
    pub put_yesterday_morning: u64,
    pub got_yesterday_morning: u64,
}

impl DailyTotals {
    /// Called with every sample: rolls the snapshots when `day` differs from the last sample's.
    pub fn sample(&mut self, day: i64, put_total: u64, got_total: u64) {
        match self.day {
            None => self.day = Some(day),
            Some(d) if d != day => {
                self.day = Some(day);
                self.put_yesterday_morning = self.put_today_morning;
                self.got_yesterday_morning = self.got_today_morning;
                self.put_today_morning = put_total;
                self.got_today_morning = got_total;
            }
            Some(_) => {}
        }
    }

    /// Sums two shards' snapshots (wrapping, like the counters).
    pub fn merge(self, other: DailyTotals) -> DailyTotals {
        DailyTotals {
            day: self.day.or(other.day),
            put_today_morning: self.put_today_morning.wrapping_add(other.put_today_morning),
            got_today_morning: self.got_today_morning.wrapping_add(other.got_today_morning),
            put_yesterday_morning: self
                .put_yesterday_morning
                .wrapping_add(other.put_yesterday_morning),
            got_yesterday_morning: self
                .got_yesterday_morning
                .wrapping_add(other.got_yesterday_morning),
        }
    }
}

/// Today's local day number (`year * 1000 + day of year`), in the machine's time zone as Apache's
/// broker rolls at its JVM's local midnight.
pub fn local_day(epoch_ms: i64) -> i64 {
    let secs: libc::time_t = epoch_ms.div_euclid(1000) as libc::time_t;
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are valid; `localtime_r` only writes
    // into it and reads `secs`, both live for the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return epoch_ms.div_euclid(86_400_000);
        }
        tm
    };
    i64::from(tm.tm_year) * 1000 + i64::from(tm.tm_yday)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midnight_moves_today_to_yesterday_and_snapshots_the_totals() {
        let mut d = DailyTotals::default();
        d.sample(10, 5, 1);
        assert_eq!(
            d.put_today_morning, 0,
            "the first day starts at the process's zero"
        );
        d.sample(10, 50, 20);
        assert_eq!((d.put_today_morning, d.got_today_morning), (0, 0));
        d.sample(11, 70, 30);
        assert_eq!((d.put_today_morning, d.got_today_morning), (70, 30));
        assert_eq!((d.put_yesterday_morning, d.got_yesterday_morning), (0, 0));
        d.sample(12, 100, 31);
        assert_eq!((d.put_today_morning, d.got_today_morning), (100, 31));
        assert_eq!((d.put_yesterday_morning, d.got_yesterday_morning), (70, 30));
        let both = d.merge(d);
        assert_eq!(both.put_today_morning, 200);
    }

    #[test]
    fn local_days_change_once_a_day() {
        let t = 1_764_547_200_000; // 2025-12-01T00:00:00Z
        assert_eq!(local_day(t), local_day(t + 3_600_000 * 24) - 1);
        assert_ne!(local_day(t), local_day(t - 86_400_000));
    }
}

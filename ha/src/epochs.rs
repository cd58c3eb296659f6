//! The master's rule for a returning slave in controller mode: where the slave's log stops agreeing
//! with the master's, found by epoch (RocketMQ 5's AutoSwitchHAConnection rule). Pure functions.

use storage::EpochEntry;

/// Where the data of `list[i]` ends: the next entry's start, or the log end for the last one (never
/// past the log end).
fn epoch_end(list: &[EpochEntry], i: usize, log_end: i64) -> i64 {
    list.get(i + 1)
        .map_or(log_end, |next| next.start_offset)
        .min(log_end)
}

/// The highest offset up to which the slave's log and the master's hold the same data, by epoch:
/// walking the slave's entries from its last, the first epoch the master also has with the same start
/// gives min(the slave's end of that epoch, the master's end of it). None when they share no epoch.
/// Entries of the slave that start past its log end carry no data there and are skipped.
pub fn consistent_offset(
    master: &[EpochEntry],
    master_end: i64,
    slave: &[EpochEntry],
    slave_end: i64,
) -> Option<i64> {
    for (i, se) in slave.iter().enumerate().rev() {
        if se.start_offset > slave_end {
            continue;
        }
        let Some(j) = master.iter().position(|m| m.epoch == se.epoch) else {
            continue;
        };
        let same_start = master
            .get(j)
            .is_some_and(|m| m.start_offset == se.start_offset);
        if same_start {
            return Some(epoch_end(slave, i, slave_end).min(epoch_end(master, j, master_end)));
        }
    }
    None
}

/// What the master tells a version 2 slave about its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Replicate from the slave's log end; nothing to cut.
    From(i64),
    /// Cut the log back to this offset, then replicate from it.
    Truncate(i64),
}

impl Start {
    /// Where replication starts.
    pub fn offset(&self) -> i64 {
        match *self {
            Start::From(o) | Start::Truncate(o) => o,
        }
    }
}

/// The rule for a slave that sent its epochs: a slave whose log goes past the common point cuts it
/// there; a slave with data but no epoch in common with the master is refused (`Err`, the reason). A
/// slave without epochs is not decided here (the classic rule applies).
pub fn decide_start(
    master: &[EpochEntry],
    master_end: i64,
    slave: &[EpochEntry],
    slave_end: i64,
    slave_has_data: bool,
) -> Result<Start, String> {
    match consistent_offset(master, master_end, slave, slave_end) {
        Some(p) if p < slave_end => Ok(Start::Truncate(p)),
        Some(_) => Ok(Start::From(slave_end)),
        None if !slave_has_data => Ok(Start::From(slave_end)),
        None => Err(format!(
            "the slave's log shares no epoch with the master's (slave epochs {}, master epochs {}): it holds data of another history; clear the slave's store",
            describe(slave),
            describe(master)
        )),
    }
}

fn describe(list: &[EpochEntry]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|e| format!("{}@{}", e.epoch, e.start_offset))
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(v: &[(u32, i64)]) -> Vec<EpochEntry> {
        v.iter()
            .map(|&(epoch, start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
            .collect()
    }

    #[test]
    fn old_master_with_a_diverged_tail_is_cut_at_the_new_epoch_start() {
        // Old master wrote epoch 1 up to 1500; the new master took over in epoch 2 at 1000.
        let master = l(&[(1, 0), (2, 1000)]);
        let slave = l(&[(1, 0)]);
        assert_eq!(consistent_offset(&master, 3000, &slave, 1500), Some(1000));
        assert_eq!(
            decide_start(&master, 3000, &slave, 1500, true),
            Ok(Start::Truncate(1000))
        );
    }

    #[test]
    fn slave_behind_in_the_same_or_an_older_epoch_just_catches_up() {
        let master = l(&[(1, 0), (2, 1000), (5, 2000)]);
        assert_eq!(
            decide_start(&master, 3000, &l(&[(1, 0)]), 800, true),
            Ok(Start::From(800))
        );
        assert_eq!(
            decide_start(&master, 3000, &l(&[(1, 0), (2, 1000)]), 1000, true),
            Ok(Start::From(1000))
        );
        // Same current epoch, behind.
        assert_eq!(
            decide_start(&master, 3000, &master, 2500, true),
            Ok(Start::From(2500))
        );
        // An adopted entry past the slave's end says nothing about its data.
        assert_eq!(
            decide_start(&master, 3000, &master, 1200, true),
            Ok(Start::From(1200))
        );
    }

    #[test]
    fn same_epoch_with_another_start_is_not_common() {
        // Epoch 3 began at 900 on the slave's history but at 1000 on the master's: fall back to 1.
        let master = l(&[(1, 0), (3, 1000)]);
        let slave = l(&[(1, 0), (3, 900)]);
        assert_eq!(consistent_offset(&master, 2000, &slave, 1200), Some(900));
        assert_eq!(
            decide_start(&master, 2000, &slave, 1200, true),
            Ok(Start::Truncate(900))
        );
    }

    #[test]
    fn master_shorter_in_the_common_epoch_bounds_the_cut() {
        // Both had epoch 2 from 1000; the master's epoch 2 ended at 1200 (epoch 3 from there), the
        // slave went on to 1800 in epoch 2.
        let master = l(&[(2, 1000), (3, 1200)]);
        let slave = l(&[(2, 1000)]);
        assert_eq!(
            decide_start(&master, 5000, &slave, 1800, true),
            Ok(Start::Truncate(1200))
        );
    }

    #[test]
    fn no_common_epoch_is_refused_when_the_slave_has_data() {
        let master = l(&[(4, 0)]);
        let slave = l(&[(3, 0)]);
        let err = decide_start(&master, 100, &slave, 50, true).unwrap_err();
        assert!(err.contains("shares no epoch"), "{err}");
        assert_eq!(
            decide_start(&master, 100, &slave, 0, false),
            Ok(Start::From(0))
        );
        assert!(decide_start(&[], 100, &slave, 50, true).is_err());
    }
}

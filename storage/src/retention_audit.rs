//! What retention deletes, said: the rule that took each CommitLog segment, and the messages consumer
//! groups had not consumed yet when their queue's first offset moved past them.

use std::fmt;

/// Why retention deleted a CommitLog segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteRule {
    /// Older than `fileReservedTime`, in a `deleteWhen` hour (or deletion was asked for).
    Expired,
    /// Older than `fileReservedTime`, outside `deleteWhen`: the disk is fuller than
    /// `diskMaxUsedSpaceRatio`.
    ExpiredDiskPressure,
    /// Not expired, or held back by a topic's own policy: the disk is fuller than
    /// `diskSpaceCleanForciblyRatio` (`cleanFileForciblyEnable`).
    Forced,
}

impl DeleteRule {
    /// The rule's short name (log lines, metric labels).
    pub fn as_str(self) -> &'static str {
        match self {
            DeleteRule::Expired => "expired",
            DeleteRule::ExpiredDiskPressure => "expired_disk_pressure",
            DeleteRule::Forced => "forced",
        }
    }
}

impl fmt::Display for DeleteRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One deleted CommitLog segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedSegment {
    pub path: String,
    pub rule: DeleteRule,
}

/// The committed offsets of one queue, by consumer group: (group, next offset it consumes). The broker
/// sets it (`MessageStore::set_consumer_positions`); the store has no consumer offsets of its own.
pub type ConsumerPositionsFn = dyn Fn(&str, i32) -> Vec<(String, i64)>;

/// Messages of one queue deleted before one consumer group consumed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnconsumedLoss {
    pub topic: String,
    pub queue_id: i32,
    pub group: String,
    /// The group's committed offset when they went.
    pub committed: i64,
    /// The queue's first offset after the deletion.
    pub new_min: i64,
    pub messages: i64,
}

/// The losses when a queue's first offset moves from `old_min` to `new_min`: for each group whose
/// committed offset is below `new_min`, the messages between it (or `old_min`) and `new_min`. Groups
/// with no committed offset on the queue are not counted (they start wherever the queue starts).
pub fn unconsumed_losses(
    topic: &str,
    queue_id: i32,
    old_min: i64,
    new_min: i64,
    positions: &[(String, i64)],
) -> Vec<UnconsumedLoss> {
    positions
        .iter()
        .filter_map(|(group, committed)| {
            let messages = new_min.saturating_sub((*committed).max(old_min));
            (messages > 0).then(|| UnconsumedLoss {
                topic: topic.to_owned(),
                queue_id,
                group: group.clone(),
                committed: *committed,
                new_min,
                messages,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_what_each_group_had_not_consumed() {
        let positions = vec![
            ("behind".to_owned(), 120),
            ("caught_up".to_owned(), 900),
            ("at_the_edge".to_owned(), 500),
            ("older_than_the_queue".to_owned(), 10),
        ];
        let losses = unconsumed_losses("T", 3, 100, 500, &positions);
        let by_group: Vec<(&str, i64)> = losses
            .iter()
            .map(|l| (l.group.as_str(), l.messages))
            .collect();
        // 120..500 for `behind`; the older group lost only what the queue still held (100..500).
        assert_eq!(
            by_group,
            vec![("behind", 380), ("older_than_the_queue", 400)]
        );
        assert!(losses
            .iter()
            .all(|l| l.topic == "T" && l.queue_id == 3 && l.new_min == 500));
    }

    #[test]
    fn nothing_when_the_start_did_not_move() {
        assert!(unconsumed_losses("T", 0, 100, 100, &[("g".to_owned(), 0)]).is_empty());
    }
}

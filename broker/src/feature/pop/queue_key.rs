//! A consumer group's view of one queue: the key of POP's check points, ordered batches and locks.

/// A group's view of one queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
}

impl QueueKey {
    pub fn new(group: &str, topic: &str, queue_id: i32) -> QueueKey {
        QueueKey {
            group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
        }
    }
}

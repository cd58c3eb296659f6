//! Check points of non-ordered pops (RocketMQ's `PopCheckPoint`): which messages one pop took from a
//! queue, when, for how long they are invisible, and which of them are acked. A check point whose
//! invisible time has passed with messages unacked is revived (`revive`).

use std::collections::{BTreeSet, HashMap};

/// What an ack names to find its check point: group, topic, queue, start offset and pop time (the
/// receipt handle's `ckQueueOffset` and `popTime`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CkKey {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    pub start_offset: i64,
    pub pop_time: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ck {
    pub key: CkKey,
    /// Queue offsets of the popped messages, ascending.
    pub offsets: Vec<i64>,
    pub acked: Vec<bool>,
    pub invisible_time: i64,
    /// The check point's own offset in the revive queue.
    pub revive_offset: i64,
    /// When the revive loop looks at it next (its deadline, later after a failed revive).
    pub revive_at: i64,
}

impl Ck {
    pub fn new(key: CkKey, offsets: Vec<i64>, invisible_time: i64, revive_offset: i64) -> Ck {
        let revive_at = key.pop_time.saturating_add(invisible_time);
        Ck {
            acked: vec![false; offsets.len()],
            key,
            offsets,
            invisible_time,
            revive_offset,
            revive_at,
        }
    }

    /// Marks `offset` acked; false when it is not in this check point or was acked already.
    pub fn ack(&mut self, offset: i64) -> bool {
        match self.offsets.binary_search(&offset) {
            Ok(i) => match self.acked.get_mut(i) {
                Some(a) if !*a => {
                    *a = true;
                    true
                }
                _ => false,
            },
            Err(_) => false,
        }
    }

    pub fn is_unacked(&self, offset: i64) -> bool {
        self.offsets
            .binary_search(&offset)
            .ok()
            .and_then(|i| self.acked.get(i))
            .is_some_and(|a| !a)
    }

    pub fn all_acked(&self) -> bool {
        self.acked.iter().all(|a| *a)
    }

    pub fn unacked(&self) -> impl Iterator<Item = i64> + '_ {
        self.offsets
            .iter()
            .zip(&self.acked)
            .filter(|(_, a)| !**a)
            .map(|(o, _)| *o)
    }
}

/// The check points of one shard, by key and by revive time.
#[derive(Default)]
pub struct CkTable {
    by_key: HashMap<CkKey, Ck>,
    by_time: BTreeSet<(i64, CkKey)>,
}

impl CkTable {
    pub fn insert(&mut self, ck: Ck) {
        if let Some(old) = self.by_key.remove(&ck.key) {
            self.by_time.remove(&(old.revive_at, old.key));
        }
        self.by_time.insert((ck.revive_at, ck.key.clone()));
        self.by_key.insert(ck.key.clone(), ck);
    }

    pub fn get(&self, key: &CkKey) -> Option<&Ck> {
        self.by_key.get(key)
    }

    /// Acks `offset` of a check point; removes the check point once all its messages are acked.
    /// True when the offset was unacked there.
    pub fn ack(&mut self, key: &CkKey, offset: i64) -> bool {
        let Some(ck) = self.by_key.get_mut(key) else {
            return false;
        };
        let newly = ck.ack(offset);
        if ck.all_acked() {
            self.remove(key);
        }
        newly
    }

    pub fn remove(&mut self, key: &CkKey) -> Option<Ck> {
        let ck = self.by_key.remove(key)?;
        self.by_time.remove(&(ck.revive_at, ck.key.clone()));
        Some(ck)
    }

    /// Keys of check points due at `now`, earliest first (at most `limit`).
    pub fn due(&self, now: i64, limit: usize) -> Vec<CkKey> {
        self.by_time
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Moves a check point's next revive attempt.
    pub fn postpone(&mut self, key: &CkKey, at: i64) {
        if let Some(ck) = self.by_key.get_mut(key) {
            self.by_time.remove(&(ck.revive_at, key.clone()));
            ck.revive_at = at;
            self.by_time.insert((at, key.clone()));
        }
    }

    /// The smallest revive-queue offset of a check point still open: replay must start there.
    pub fn min_revive_offset(&self) -> Option<i64> {
        self.by_key.values().map(|c| c.revive_offset).min()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Messages popped and not acked yet, over all check points.
    pub fn unacked_messages(&self) -> usize {
        self.by_key.values().map(|c| c.unacked().count()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: i64, pop_time: i64) -> CkKey {
        CkKey {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: start,
            pop_time,
        }
    }

    #[test]
    fn acks_remove_a_check_point_when_complete_and_due_orders_by_time() {
        let mut t = CkTable::default();
        t.insert(Ck::new(key(0, 100), vec![0, 1, 3], 50, 7));
        t.insert(Ck::new(key(4, 90), vec![4], 100, 8));
        assert_eq!(t.due(149, 10), Vec::<CkKey>::new());
        assert_eq!(t.due(150, 10), vec![key(0, 100)]);
        assert_eq!(t.due(190, 10), vec![key(0, 100), key(4, 90)]);
        assert!(t.ack(&key(0, 100), 1));
        assert!(!t.ack(&key(0, 100), 1), "acked twice");
        assert!(!t.ack(&key(0, 100), 2), "not popped");
        assert_eq!(t.min_revive_offset(), Some(7));
        assert_eq!(
            t.get(&key(0, 100)).unwrap().unacked().collect::<Vec<_>>(),
            vec![0, 3]
        );
        assert!(t.ack(&key(0, 100), 0));
        assert!(t.ack(&key(0, 100), 3));
        assert!(t.get(&key(0, 100)).is_none());
        assert_eq!(t.min_revive_offset(), Some(8));
        t.postpone(&key(4, 90), 500);
        assert_eq!(t.due(499, 10), Vec::<CkKey>::new());
        assert_eq!(t.due(500, 10), vec![key(4, 90)]);
        assert_eq!(t.len(), 1);
    }
}

//! One shard's delay-level state: per level the next unit to read, the safe offset (delivered and
//! flushed) and the deliveries waiting for their flush.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Deliveries done but not yet known to be flushed: the offset they advance `safe` to, and per target
/// shard the physical end offset that shard must have flushed.
pub(super) struct Pending {
    pub(super) next: i64,
    pub(super) flush_marks: Vec<(usize, i64)>,
}

pub(super) struct LevelState {
    pub(super) next: i64,
    pub(super) safe: i64,
    pub(super) pending: VecDeque<Pending>,
}

/// This shard's delay-level state.
pub fn schedule(shard: &crate::shard::Shard) -> Rc<Schedule> {
    shard.extensions.get()
}

/// One shard's delay-level state.
#[derive(Default)]
pub struct Schedule {
    pub(super) levels: RefCell<BTreeMap<i32, LevelState>>,
    pub(super) stopping: Cell<bool>,
    /// Delivery rounds running now (the drain phase waits for 0).
    pub(super) busy: Cell<usize>,
    /// Shard 0: the table last written, so unchanged tables are not rewritten.
    pub(super) written: RefCell<Option<BTreeMap<i32, i64>>>,
    pub(super) persist_lock: RefCell<Option<Rc<glommio::sync::Semaphore>>>,
    pub(super) max_level: Cell<Option<usize>>,
}

impl Schedule {
    pub(super) fn persist_lock(&self) -> Rc<glommio::sync::Semaphore> {
        self.persist_lock
            .borrow_mut()
            .get_or_insert_with(|| Rc::new(glommio::sync::Semaphore::new(1)))
            .clone()
    }

    /// The next unit to read of a level this shard owns.
    pub(crate) fn next_offset(&self, level: i32) -> Option<i64> {
        self.levels.borrow().get(&level).map(|l| l.next)
    }

    /// Records that units before `next` are handled; `flush_marks` must be flushed before it is safe.
    pub(crate) fn advance(&self, level: i32, next: i64, flush_marks: Vec<(usize, i64)>) {
        if let Some(l) = self.levels.borrow_mut().get_mut(&level) {
            if next > l.next {
                l.next = next;
                l.pending.push_back(Pending { next, flush_marks });
            }
        }
    }

    /// Moves a level's read position back or forth without a delivery (a corrected offset).
    pub(crate) fn reset_next(&self, level: i32, next: i64) {
        if let Some(l) = self.levels.borrow_mut().get_mut(&level) {
            l.next = next;
            l.pending.clear();
            l.pending.push_back(Pending {
                next,
                flush_marks: Vec::new(),
            });
        }
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.get()
    }

    pub(crate) fn enter(&self) {
        self.busy.set(self.busy.get() + 1);
    }

    pub(crate) fn leave(&self) {
        self.busy.set(self.busy.get().saturating_sub(1));
    }

    /// The safe offsets of the levels this shard owns.
    pub(super) fn safe_table(&self) -> Vec<(i32, i64)> {
        self.levels
            .borrow()
            .iter()
            .map(|(level, l)| (*level, l.safe))
            .collect()
    }
}

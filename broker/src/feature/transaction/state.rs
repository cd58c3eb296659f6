//! The transaction state of the half queue's shard (kept per executor thread, one per shard) and the
//! check service's progress.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::op_set::OpSet;
use crate::shard::Shard;
use crate::state::topics::TRANS_HALF_TOPIC;

/// The system group whose offset on the half queue is the check service's progress: Apache's
/// `MixAll.CID_SYS_RMQ_TRANS`, whose value is `CID_RMQ_SYS_TRANS` (so a store moved from Apache's
/// broker, or to it, keeps its check progress).
pub const PROGRESS_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// The name this broker gave the progress group before 2026-12-07 (read when the other is missing).
pub const OLD_PROGRESS_GROUP: &str = "CID_SYS_RMQ_TRANS";
/// Records read per store call while scanning the half or op queue.
pub(super) const SCAN_BATCH: i32 = 32;
pub(super) const SCAN_BYTES: usize = 1024 * 1024;

/// The transaction state of the half queue's shard.
pub struct TxState {
    pub ops: RefCell<OpSet>,
    /// Next half queue offset the check service looks at.
    pub half_offset: Cell<i64>,
}

thread_local! {
    /// Set on the half queue's shard (one executor thread per shard) once the op queue is loaded.
    static STATE: RefCell<Option<Rc<TxState>>> = const { RefCell::new(None) };
}

/// This thread's transaction state, if this shard owns the half queue.
pub fn state() -> Option<Rc<TxState>> {
    STATE.with(|s| s.borrow().clone())
}

/// Records where the check service has got to (persisted with the shard's consumer offsets).
pub fn save_progress(shard: &Shard, state: &TxState, next: i64) {
    state.half_offset.set(next);
    shard
        .offsets
        .borrow_mut()
        .commit(PROGRESS_GROUP, TRANS_HALF_TOPIC, 0, next);
}

/// Makes `state` this shard's transaction state (once its op queue is loaded).
pub(super) fn install(state: Rc<TxState>) {
    STATE.with(|s| *s.borrow_mut() = Some(state));
}

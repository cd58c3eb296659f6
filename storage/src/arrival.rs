//! A queue's new max offset on its way to the long-polling hook, and the confirm-offset gate that
//! holds such announcements until every in-sync replica has the record (the gate's rules are in
//! `confirm`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::consume_queue::ConsumeQueue;

/// A queue's new max offset, announced to the arrival hook after the flush (`consume_durable_only`).
pub(crate) struct Arrival {
    pub topic: String,
    pub queue_id: i32,
    pub max_offset: i64,
    pub queue: Rc<RefCell<ConsumeQueue>>,
}

/// The gate's state: the confirm offset (physical, this shard's) and the arrivals above it.
#[derive(Default)]
pub(crate) struct ConfirmGate {
    /// None: no gate, readers see every dispatched record.
    pub offset: Option<i64>,
    /// Arrivals not announced yet, by their record's CommitLog end (ascending).
    pub held: VecDeque<(i64, Arrival)>,
    /// On a slave whose master sends its confirm offset: the gate never passes it, whatever the
    /// slave holds (None: the gate follows what is replicated).
    pub replica_bound: Option<i64>,
}

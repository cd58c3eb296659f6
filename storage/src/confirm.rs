//! The confirm-offset gate (controller mode, RocketMQ 5's `CommitLog.getConfirmOffset` with
//! `readUnCommitted` false): readers see a ConsumeQueue entry only once its record's CommitLog end is
//! at or below the confirm offset, the point every in-sync replica holds. Records stored above it
//! wait here, and their queues' long-polling hook fires when the confirm offset passes them. Without
//! a gate (classic mode, `readUnCommitted`) nothing is held here. Every checkpoint keeps the confirm
//! offset, so a store opened with `confirm_gate_at_open` (a restarted controller-mode replica) starts
//! with the gate where it was, not with its whole log readable before its role is known.

use crate::arrival::Arrival;
use crate::offset::{local_of, physical};
use crate::store::MessageStore;

impl MessageStore {
    /// The confirm offset readers are held at, or None when there is no gate.
    pub fn confirm_offset(&self) -> Option<i64> {
        self.inner.confirm.borrow().offset
    }

    /// Installs the gate at `at` (records ending at or below it stay readable), or with None lifts it
    /// and announces everything it held.
    pub fn set_confirm_gate(&self, at: Option<i64>) {
        match at {
            Some(at) => {
                let installed = {
                    let mut g = self.inner.confirm.borrow_mut();
                    if g.offset.is_none() {
                        g.offset = Some(at);
                        true
                    } else {
                        false
                    }
                };
                if !installed {
                    self.set_confirm_offset(at);
                }
            }
            None => {
                let released: Vec<Arrival> = {
                    let mut g = self.inner.confirm.borrow_mut();
                    g.offset = None;
                    g.held.drain(..).map(|(_, a)| a).collect()
                };
                self.notify_arrivals(released.into_iter());
            }
        }
    }

    /// Moves the confirm offset up to `offset` (never down; no effect without a gate) and announces
    /// the records it now covers to the long-polling hook.
    pub fn set_confirm_offset(&self, offset: i64) {
        let released: Vec<Arrival> = {
            let mut g = self.inner.confirm.borrow_mut();
            match g.offset {
                Some(c) if offset > c => g.offset = Some(offset),
                _ => return,
            }
            let n = g.held.iter().take_while(|(end, _)| *end <= offset).count();
            g.held.drain(..n).map(|(_, a)| a).collect()
        };
        self.notify_arrivals(released.into_iter());
    }

    /// A slave: its master's confirm offset, which its gate never passes (None: the gate follows
    /// what it replicates, for a master that does not send one). The gate moves up to it at once,
    /// within what this log holds, and replicated records above it stay hidden until the master's
    /// confirm offset passes them: a slave must not show what the master would not (RocketMQ 5's
    /// slave takes the confirm offset its master sends in every transfer header).
    pub fn set_replica_bound(&self, bound: Option<i64>) {
        self.inner.confirm.borrow_mut().replica_bound = bound;
        if let Some(b) = bound {
            self.set_confirm_offset(b.min(self.max_physical_offset()));
        }
    }

    /// The confirm offset a slave may move its gate to once its log ends at `end`.
    pub(crate) fn replica_confirm_at(&self, end: i64) -> i64 {
        self.inner
            .confirm
            .borrow()
            .replica_bound
            .map_or(end, |b| b.min(end))
    }

    /// With a gate: holds the arrival of a record ending at `end` until the confirm offset reaches
    /// it (the queue's announced max stays below it meanwhile). Hands it back without a gate.
    pub(crate) fn hold_for_confirm(&self, end: i64, arrival: Arrival) -> Option<Arrival> {
        let mut g = self.inner.confirm.borrow_mut();
        let Some(c) = g.offset else {
            return Some(arrival);
        };
        if end <= c {
            return Some(arrival);
        }
        {
            let mut q = arrival.queue.borrow_mut();
            q.announced_max = Some(q.announced_max.unwrap_or(arrival.max_offset - 1));
        }
        g.held.push_back((end, arrival));
        None
    }

    /// The confirm offset a checkpoint keeps (shard-local): the gate's, or without a gate the log's
    /// end (nothing held back); never past `durable`, the CommitLog end that checkpoint vouches for.
    pub(crate) fn confirmed_local(&self, durable: u64) -> u64 {
        let confirmed = match self.confirm_offset() {
            Some(c) => local_of(c),
            None => self.inner.log.write_pos(),
        };
        confirmed.min(durable)
    }

    /// At open (`confirm_gate_at_open`): installs the gate at the confirm offset the last checkpoint
    /// kept, or, without one, at the log's start: a store from before the confirm offset was kept
    /// cannot tell its confirmed records from a deposed master's unconfirmed tail, so it shows none
    /// until its role moves the gate (a slave's handshake, a master's acks or a SyncStateSet of its
    /// own). Never past the recovered end: records written there later are not confirmed yet. Each
    /// queue with entries above the gate ends for readers before them, and one held arrival at its
    /// last entry lifts that when the confirm offset passes it.
    pub(crate) async fn gate_at_restored_confirm(&self, restored: Option<u64>) {
        let shard = self.inner.cfg.shard_id;
        let end = self.max_physical_offset();
        let at = match restored {
            Some(local) => physical(shard, local).min(end),
            None => self.min_physical_offset(),
        };
        self.set_confirm_gate(Some(at));
        let mut held = Vec::new();
        for queue in self.queue_handles() {
            let (topic, queue_id, min, max) = {
                let q = queue.borrow();
                (q.topic.clone(), q.queue_id, q.min_offset, q.max_offset)
            };
            if max <= min {
                continue;
            }
            let Some(last_end) = self.entry_end(&topic, queue_id, max - 1).await else {
                continue;
            };
            if last_end <= at {
                continue;
            }
            // The first entry above the gate (an unreadable unit counts as above: hidden, not shown).
            let (mut lo, mut hi) = (min, max - 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                match self.entry_end(&topic, queue_id, mid).await {
                    Some(e) if e <= at => lo = mid + 1,
                    _ => hi = mid,
                }
            }
            queue.borrow_mut().announced_max = Some(lo);
            held.push((
                last_end,
                Arrival {
                    topic,
                    queue_id,
                    max_offset: max,
                    queue,
                },
            ));
        }
        held.sort_by_key(|(e, _)| *e);
        let queues = held.len();
        self.inner.confirm.borrow_mut().held.extend(held);
        tracing::info!(
            "shard {shard}: reads held at the confirm offset {} (log end {}{}) until the role is known; {queues} queues hold entries back",
            local_of(at),
            local_of(end),
            if restored.is_none() {
                "; none kept: the whole log"
            } else {
                ""
            }
        );
    }

    /// The CommitLog end of the record at `offset` of a queue, if its unit reads.
    async fn entry_end(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let units = self.units(topic, queue_id, offset, 1).await.ok()??;
        let (_, unit) = units.into_iter().find(|(o, _)| *o == offset)?;
        unit.map(|u| u.phys.saturating_add(i64::from(u.size)))
    }

    /// After a tail cut to `offset`: records above it are gone, and records written there later
    /// must be confirmed again.
    /// Arrivals held for records above it stay, due at the cut: one held at open stands for a
    /// queue's whole tail, whose entries below the cut are shown once the confirm offset is there.
    pub(crate) fn confirm_cut(&self, offset: i64) {
        let mut g = self.inner.confirm.borrow_mut();
        if let Some(c) = g.offset {
            g.offset = Some(c.min(offset));
        }
        for (end, _) in g.held.iter_mut() {
            *end = (*end).min(offset);
        }
    }

    /// The max offset clients are told of and pulls are bounded by: with a gate, the last entry the
    /// confirm offset covers (as RocketMQ 5 dispatches its ConsumeQueue only up to there); without
    /// one, `max_offset`.
    pub fn readable_max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        if self.inner.confirm.borrow().offset.is_some() {
            self.visible_max_offset(topic, queue_id)
        } else {
            self.max_offset(topic, queue_id)
        }
    }
}

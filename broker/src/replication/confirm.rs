//! Controller mode: the confirm offset readers are held at (RocketMQ 5's `CommitLog.getConfirmOffset`
//! with `readUnCommitted` false). A master with `allAckInSyncStateSet` and other members in its
//! SyncStateSet shows a record to pulls, POP and max-offset answers only once every member has
//! acknowledged it: the least ack of the other members (kept where it was while one of them is not
//! connected). A master alone in its set, or without `allAckInSyncStateSet`, holds nothing back (the
//! gate is lifted, as Apache's confirm offset is then the log's end). A slave's gate moves with the
//! confirm offset its master sends with every frame (`ha` version 3, as Apache's transfer header),
//! never past what it holds: a slave serves no record its master does not (a client whose route
//! lists no master pulls from a slave); a deposed master's own unconfirmed tail stays hidden until
//! it follows the new master. A restarted replica opens with the gate at the confirm
//! offset its last checkpoint kept (`StoreConfig::confirm_gate_at_open`, RocketMQ 5's
//! `confirmPhyOffset`), and it stays there until the controllers give it a role.

use crate::config::BrokerRole;
use crate::shard::Shard;

/// Recomputes this shard's confirm offset (after an ack, a put, a role or SyncStateSet change).
pub fn update(shard: &Shard) {
    let cfg = &shard.cfg.controller;
    if !cfg.enabled || cfg.read_un_committed || shard.role() == BrokerRole::Slave {
        return;
    }
    if shard.chosen_role.get().is_none() {
        // No role from the controllers yet: the gate stays where the store opened it.
        return;
    }
    let state = crate::replication::ha_state::ha(shard);
    let me = state.controller_id.get();
    let others: Vec<u64> = state
        .sync_state_set
        .borrow()
        .iter()
        .copied()
        .filter(|id| Some(*id) != me)
        .collect();
    let store = &shard.store;
    let end = store.max_physical_offset();
    if !cfg.all_ack_in_sync_state_set || others.is_empty() {
        store.set_confirm_gate(None);
        return;
    }
    if store.confirm_offset().is_none() {
        // What readers see already stays visible; what comes next waits for the set.
        store.set_confirm_gate(Some(end));
        return;
    }
    let mut confirm = end;
    for id in others {
        let Some(acked) = i64::try_from(id)
            .ok()
            .and_then(|id| state.watermark.acked_of(id))
        else {
            // A member not connected: the confirm offset cannot be computed, it stays.
            return;
        };
        confirm = confirm.min(acked);
    }
    store.set_confirm_offset(confirm);
}

/// Controller mode: recompute the confirm offset after every replica ack of this shard.
pub fn start(shard: &std::rc::Rc<Shard>) {
    let weak = std::rc::Rc::downgrade(shard);
    crate::replication::ha_state::ha(shard)
        .watermark
        .set_ack_hook(Box::new(move || {
            if let Some(s) = weak.upgrade() {
                update(&s);
            }
        }));
}

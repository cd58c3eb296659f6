//! Controller mode: what becoming master or slave does on one shard. The control shard's replica
//! manager (`replicas`) decides; each shard applies it here on its own executor.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::config::BrokerRole;
use crate::shard::Shard;

/// This shard becomes its group's master at `epoch`: replication from the old master stops (and
/// has stopped before anything else changes), then the shard takes writes and starts the services
/// only a master runs (delay and timer deliveries, transaction check-back, POP revive).
pub async fn become_master(shard: &Rc<Shard>, epoch: i32, sync_state_set: BTreeSet<u64>) {
    crate::replication::ha::stop_replication(shard).await;
    // The log from its end on is this epoch's: what a returning old master truncates by.
    match u32::try_from(epoch).map(|e| shard.store.begin_epoch(e)) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!("shard {}: epoch {epoch} not recorded: {e}", shard.id),
        Err(_) => tracing::error!("shard {}: epoch {epoch} out of range", shard.id),
    }
    *crate::replication::ha_state::ha(shard)
        .master_ha_addr
        .borrow_mut() = None;
    *crate::replication::ha_state::ha(shard)
        .master_addr
        .borrow_mut() = None;
    let ha = crate::replication::ha_state::ha(shard);
    *ha.sync_state_set.borrow_mut() = sync_state_set;
    ha.joining.borrow_mut().clear();
    ha.term.set(ha.term.get().wrapping_add(1));
    shard.chosen_role.set(Some((BrokerRole::SyncMaster, 0)));
    crate::replication::confirm::update(shard);
    tracing::info!(
        "shard {}: master at epoch {epoch} from local offset {}",
        shard.id,
        storage::local_of(shard.store.max_physical_offset())
    );
    if crate::replication::ha_state::ha(shard)
        .master_services_started
        .replace(true)
    {
        return;
    }
    crate::feature::schedule::start_deliveries(shard);
    crate::feature::timer::start(shard);
    if let Err(e) = crate::feature::transaction::start(shard).await {
        tracing::error!(
            "shard {}: transaction check-back not started: {e}",
            shard.id
        );
    }
    if let Err(e) = crate::feature::pop::revive::start(shard).await {
        tracing::error!("shard {}: POP revive not started: {e}", shard.id);
    }
}

/// This shard becomes a slave (brokerId `broker_id`) of the master whose shard-broker for this
/// shard is at `master_addr`; replication starts once the master's HA address is known.
pub async fn become_slave(shard: &Rc<Shard>, broker_id: u64, master_addr: String) {
    shard.chosen_role.set(Some((BrokerRole::Slave, broker_id)));
    let ha = crate::replication::ha_state::ha(shard);
    ha.term.set(ha.term.get().wrapping_add(1));
    ha.sync_state_set.borrow_mut().clear();
    ha.joining.borrow_mut().clear();
    *crate::replication::ha_state::ha(shard)
        .master_ha_addr
        .borrow_mut() = None;
    *crate::replication::ha_state::ha(shard)
        .master_addr
        .borrow_mut() = Some(master_addr);
    crate::replication::ha::follow_master(shard).await;
}

/// Controller mode: the brokerId the controllers gave this broker.
pub fn controller_id_known(shard: &Shard, broker_id: u64) {
    crate::replication::ha_state::ha(shard)
        .controller_id
        .set(Some(broker_id));
}

/// The master's HA address is known (every shard's streams go through its one HA port).
pub fn master_ha_known(shard: &Shard, ha_addr: String) {
    if shard.role() == BrokerRole::Slave {
        *crate::replication::ha_state::ha(shard)
            .master_ha_addr
            .borrow_mut() = Some(ha_addr);
    }
}

/// A new SyncStateSet for the master's sends to wait on (the replicas that were joining are in it,
/// or were refused).
pub fn sync_state_set_changed(shard: &Shard, sync_state_set: BTreeSet<u64>) {
    let ha = crate::replication::ha_state::ha(shard);
    *ha.sync_state_set.borrow_mut() = sync_state_set;
    ha.joining.borrow_mut().clear();
    crate::replication::confirm::update(shard);
}

/// The round that chose joining replicas is over (they were added, or not): sends stop waiting for
/// those outside the SyncStateSet.
pub fn end_joining(shard: &Shard) {
    crate::replication::ha_state::ha(shard)
        .joining
        .borrow_mut()
        .clear();
}

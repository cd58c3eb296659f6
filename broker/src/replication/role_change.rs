//! Controller mode: what becoming master or slave does on one shard. The control shard's replica
//! manager (`replicas`) decides; each shard applies it here on its own executor.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use crate::config::BrokerRole;
use crate::shard::Shard;

/// How often a master whose epoch could not be recorded tries again.
const EPOCH_RETRY: Duration = Duration::from_millis(500);

/// This shard becomes its group's master at `epoch`: replication from the old master stops (and
/// has stopped before anything else changes), the epoch is recorded in the store's epoch file, then
/// the shard takes writes and starts the services only a master runs (delay and timer deliveries,
/// transaction check-back, POP revive).
///
/// The epoch entry is what a returning replica truncates by: data written in an epoch the file does
/// not list would count as the previous epoch's, so a replica holding other bytes of that epoch at
/// the same offsets (the old master's unreplicated tail) would keep them. Until the entry is durable
/// (a full disk, an I/O error) the shard takes no writes and tries again every [`EPOCH_RETRY`], until
/// it succeeds or a later role change supersedes this one.
pub async fn become_master(shard: &Rc<Shard>, epoch: i32, sync_state_set: BTreeSet<u64>) {
    crate::replication::ha::stop_replication(shard).await;
    let ha = crate::replication::ha_state::ha(shard);
    *ha.master_ha_addr.borrow_mut() = None;
    *ha.master_addr.borrow_mut() = None;
    // Kept up to date by SyncStateSet notices while the epoch waits to be recorded.
    *ha.sync_state_set.borrow_mut() = sync_state_set;
    ha.joining.borrow_mut().clear();
    ha.term.set(ha.term.get().wrapping_add(1));
    let Ok(epoch_u32) = u32::try_from(epoch) else {
        tracing::error!(
            "shard {}: epoch {epoch} out of range: no writes in it",
            shard.id
        );
        hold_writes(shard);
        return;
    };
    match shard.store.begin_epoch(epoch_u32) {
        Ok(_) => take_writes(shard, epoch).await,
        Err(e) => {
            tracing::error!(
                "shard {}: epoch {epoch} not recorded: {e}; no writes until it is (tried again every {EPOCH_RETRY:?})",
                shard.id
            );
            hold_writes(shard);
            let (shard, term) = (shard.clone(), ha.term.get());
            glommio::spawn_local(async move { retry_epoch(shard, epoch, epoch_u32, term).await })
                .detach();
        }
    }
}

/// Elected, but the epoch is not recorded: the shard refuses writes as a slave does (its own
/// services' writes too) and registers as one, so clients send elsewhere or retry.
fn hold_writes(shard: &Rc<Shard>) {
    let ha = crate::replication::ha_state::ha(shard);
    let id = ha.controller_id.get().unwrap_or_else(|| shard.broker_id());
    shard.chosen_role.set(Some((BrokerRole::Slave, id)));
}

/// Records `epoch` again until it is durable, then takes writes; gives up once another role change
/// (a later epoch, or this broker made a slave) moved the term on.
async fn retry_epoch(shard: Rc<Shard>, epoch: i32, epoch_u32: u32, term: u64) {
    let ha = crate::replication::ha_state::ha(&shard);
    let mut tries = 1u32;
    loop {
        glommio::timer::sleep(EPOCH_RETRY).await;
        if ha.term.get() != term || shard.shutting_down.get() {
            return;
        }
        tries = tries.saturating_add(1);
        match shard.store.begin_epoch(epoch_u32) {
            Ok(_) => {
                tracing::info!(
                    "shard {}: epoch {epoch} recorded at try {tries}; taking writes",
                    shard.id
                );
                take_writes(&shard, epoch).await;
                crate::role::control::register_soon(&shard);
                return;
            }
            Err(e) if tries % 20 == 0 => {
                tracing::error!(
                    "shard {}: epoch {epoch} still not recorded after {tries} tries: {e}",
                    shard.id
                );
            }
            Err(_) => {}
        }
    }
}

/// The epoch is recorded: the shard takes writes from its log end on, in that epoch.
async fn take_writes(shard: &Rc<Shard>, epoch: i32) {
    let ha = crate::replication::ha_state::ha(shard);
    shard.chosen_role.set(Some((BrokerRole::SyncMaster, 0)));
    crate::replication::confirm::update(shard);
    tracing::info!(
        "shard {}: master at epoch {epoch} from local offset {}",
        shard.id,
        storage::local_of(shard.store.max_physical_offset())
    );
    if ha.master_services_started.replace(true) {
        // The services follow the role themselves; POP's in-memory state is read again here (a pop
        // or ack served while it is read may miss part of it: at worst a duplicate delivery).
        crate::feature::pop::revive::reload(shard).await;
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
    let controller = &shard.cfg.controller;
    if controller.enabled && !controller.read_un_committed && shard.store.confirm_offset().is_none()
    {
        // A master alone in its SyncStateSet had no gate (all it stored was confirmed); as a slave
        // it shows what it replicates only once its new master confirmed it.
        shard
            .store
            .set_confirm_gate(Some(shard.store.max_physical_offset()));
    }
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

/// The round that chose joining replicas is over (they were added, or not): sends and readers stop
/// waiting for those outside the SyncStateSet (a master still alone in it lifts its gate again).
pub fn end_joining(shard: &Shard) {
    crate::replication::ha_state::ha(shard)
        .joining
        .borrow_mut()
        .clear();
    crate::replication::confirm::update(shard);
}

//! One shard's replication state (kept in the shard's extensions) and the figures it reports.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::shard::stats::HaStats;
use crate::shard::Shard;

/// This shard's replication state.
pub fn ha(shard: &Shard) -> Rc<HaShard> {
    shard.extensions.get()
}

/// This shard's HA figures (GET_BROKER_RUNTIME_INFO, metrics).
pub fn figures(shard: &Shard) -> HaStats {
    ha(shard).stats(shard.store.max_physical_offset())
}

/// One shard's replication state (both roles; only the parts of its role are used).
#[derive(Default)]
pub struct HaShard {
    /// Slave (controller mode): this shard's replication task, cancelled when the shard becomes
    /// master or follows another one.
    pub(crate) replication: RefCell<Option<glommio::task::JoinHandle<()>>>,
    /// Master (controller mode): the replicas in sync, this one included, by controller brokerId.
    pub sync_state_set: RefCell<std::collections::BTreeSet<u64>>,
    /// Master (controller mode): replicas about to be proposed for the SyncStateSet. Puts wait for
    /// them as for members from the moment they are chosen, so that once one holds the log end of
    /// that moment it holds every record acknowledged without it; the confirm offset counts them
    /// too (`confirm::update`), so readers see nothing they do not hold.
    pub joining: RefCell<std::collections::BTreeSet<u64>>,
    /// Controller mode: counts this shard's role changes. A put notes it before its role check and
    /// is not acknowledged if it changed meanwhile (deposed, maybe re-elected, during the put).
    pub term: Cell<u64>,
    /// Controller mode: the brokerId the controllers gave this broker (not 0 when it is master).
    pub controller_id: Cell<Option<u64>>,
    /// Controller mode: the master-only services were started (once; a slave's puts are refused).
    pub(crate) master_services_started: Cell<bool>,
    /// Master: the slaves' acks for this shard's stream.
    pub watermark: ha::Watermark,
    /// Master: raised on every append so senders stream at once.
    pub signal: ha::DataSignal,
    /// Slave: what this shard's replication does.
    pub slave: Rc<ha::SlaveStatus>,
    /// Slave: the master's HA address learned from the name server.
    pub master_ha_addr: RefCell<Option<String>>,
    /// Slave: the master's remoting address learned from the name server.
    pub master_addr: RefCell<Option<String>>,
    /// Slave: topics seen in replicated data before their config arrived (asked for once each).
    pub(crate) unknown_topics: RefCell<std::collections::HashSet<(String, i32)>>,
    /// Slave, shard 0: copy the master's metadata at the next tick instead of waiting 60 s.
    pub sync_soon: std::cell::Cell<bool>,
}

impl HaShard {
    /// This shard's HA figures; `max_physical_offset` is the end of its CommitLog.
    pub fn stats(&self, max_physical_offset: i64) -> HaStats {
        let lag = self.watermark.lag();
        let st = &self.slave;
        HaStats {
            slaves: lag.slaves,
            slave_ack_offset: lag.slave_ack_offset,
            behind_bytes: if lag.slaves == 0 {
                0
            } else {
                u64::try_from(max_physical_offset.saturating_sub(lag.slave_ack_offset)).unwrap_or(0)
            },
            behind_ms: lag.behind_ms,
            slave_connected: st.connected.get(),
            slave_last_append_ms: st.last_append_ms.get(),
            slave_rejected_frames: st.rejected.get(),
        }
    }
}

//! The store's epoch history for controller mode (`epochFileCheckpoint`, see `epoch_file`): the broker
//! starts an epoch when this shard becomes master; a slave adopts its master's history; a cut of the
//! log drops the epochs that started in the cut part.

use crate::epoch_file::EpochEntry;
use crate::error::StoreError;
use crate::store::MessageStore;

impl MessageStore {
    /// The epoch entries, oldest first (empty when the store never ran in controller mode).
    pub fn epochs(&self) -> Vec<EpochEntry> {
        self.inner.epochs.borrow().entries().to_vec()
    }

    pub fn last_epoch(&self) -> Option<EpochEntry> {
        self.inner.epochs.borrow().last()
    }

    /// This shard became master in `epoch`: its data from the log end on belongs to that epoch.
    /// Entries with an epoch at or above it (or starting past the log end) are dropped first. Returns
    /// false when `epoch` is already the last entry (nothing written); an older epoch is refused.
    /// Writes and syncs the file (a blocking call: once per role change).
    pub fn begin_epoch(&self, epoch: u32) -> Result<bool, StoreError> {
        let start = self.max_physical_offset();
        self.inner.epochs.borrow_mut().begin(epoch, start)
    }

    /// Drops the entries that start at or after `offset`.
    pub fn truncate_epochs_from(&self, offset: i64) -> Result<(), StoreError> {
        self.inner.epochs.borrow_mut().truncate_from(offset)
    }

    /// Replaces the history (a slave adopting its master's, up to its own log end). The list must be
    /// ordered: epochs increasing, start offsets not decreasing.
    pub fn set_epochs(&self, list: Vec<EpochEntry>) -> Result<(), StoreError> {
        self.inner.epochs.borrow_mut().set(list)
    }
}

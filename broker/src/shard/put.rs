//! A put on a queue's owner: the records go into the owner's store and are counted. The outcome says
//! how far the records got, as RocketMQ's `SendStatus` does: a record stored without its sync (or,
//! once replication has waited for it, without the slave's ack) is still stored, so its send result
//! goes back with the code. The `put` request (`requests`) adds replication's wait.

use protocol::message::record::MessageRecord;
use protocol::response_code as rc;
use storage::PutOk;

use crate::shard::mesh::MeshError;
use crate::shard::Shard;

/// How far stored records got (RocketMQ's `SendStatus` beyond SEND_OK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    SendOk,
    /// SYNC_FLUSH: no fdatasync covered the records within `syncFlushTimeout`.
    FlushDiskTimeout,
    /// SYNC_MASTER: no slave acknowledged the records within `syncFlushTimeout`.
    FlushSlaveTimeout,
    /// SYNC_MASTER: no slave is connected, or the slave lags too far.
    SlaveNotAvailable,
}

impl SendStatus {
    /// The response code a send answers with.
    pub fn response_code(self) -> i32 {
        match self {
            SendStatus::SendOk => rc::SUCCESS,
            SendStatus::FlushDiskTimeout => rc::FLUSH_DISK_TIMEOUT,
            SendStatus::FlushSlaveTimeout => rc::FLUSH_SLAVE_TIMEOUT,
            SendStatus::SlaveNotAvailable => rc::SLAVE_NOT_AVAILABLE,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            SendStatus::SendOk => "stored",
            SendStatus::FlushDiskTimeout => "stored, but the flush did not complete in time",
            SendStatus::FlushSlaveTimeout => "wait for the slave's ack timed out",
            SendStatus::SlaveNotAvailable => "slave not available",
        }
    }
}

/// One item or several: a put of one record (the usual send) and its one result travel without a
/// `Vec` (no allocation); a batch keeps its `Vec`. Reads as a slice either way.
#[derive(Debug, Clone)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> std::ops::Deref for OneOrMany<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

impl<T> From<T> for OneOrMany<T> {
    fn from(one: T) -> Self {
        OneOrMany::One(one)
    }
}

impl<T> From<Vec<T>> for OneOrMany<T> {
    fn from(many: Vec<T>) -> Self {
        OneOrMany::Many(many)
    }
}

/// Records stored by their queue's owner, one `PutOk` per record, in order.
#[derive(Debug)]
pub struct PutOutcome {
    pub stored: OneOrMany<PutOk>,
    pub status: SendStatus,
}

/// Why records were not stored.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    #[error(transparent)]
    Store(#[from] storage::PutError),
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// Controller mode: the broker became a slave; only its new master takes writes.
    #[error("the broker is a slave now and does not take writes")]
    NotMaster,
}

/// On the owner: stores the records (one queue) and counts them. Replication is not waited for here:
/// `ShardRef::put` does that.
pub async fn put_here(
    shard: &Shard,
    records: OneOrMany<MessageRecord>,
) -> Result<PutOutcome, PutError> {
    // Sends check the role first; this also stops the broker's own writers (delay and timer
    // deliveries, transaction ops, retries) of a master the controllers turned into a slave.
    if shard.role() == crate::config::BrokerRole::Slave {
        return Err(PutError::NotMaster);
    }
    let count = records.len() as u64;
    let bytes: u64 = records.iter().map(|r| r.body.len() as u64).sum();
    let result = match records {
        OneOrMany::One(record) => shard.store.put(record).await.map(OneOrMany::One),
        OneOrMany::Many(mut records) if records.len() == 1 => match records.pop() {
            Some(record) => shard.store.put(record).await.map(OneOrMany::One),
            None => Ok(OneOrMany::Many(Vec::new())),
        },
        OneOrMany::Many(records) => shard.store.put_batch(records).await.map(OneOrMany::Many),
    };
    let (stored, flushed) = match result {
        Ok(stored) => (stored, true),
        // Appended; only its sync is late: a status of the outcome, with the send result.
        Err(storage::PutError::FlushTimeout { stored, .. }) if !stored.is_empty() => {
            (OneOrMany::Many(stored), false)
        }
        Err(e) => return Err(e.into()),
    };
    shard.counters.put(count, bytes);
    let status = if flushed {
        SendStatus::SendOk
    } else {
        SendStatus::FlushDiskTimeout
    };
    Ok(PutOutcome { stored, status })
}

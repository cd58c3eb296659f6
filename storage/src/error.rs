//! Error values of the store: `StoreError` for opening and reading, `PutError` for appends.

use protocol::message::record::RecordError;

/// Why the store could not open, read or maintain itself.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("store config: {0}")]
    Config(String),
    #[error("I/O error on {path}: {message}")]
    Io { path: String, message: String },
    #[error("corrupt data in {path} at offset {offset}: {reason}")]
    Corrupt {
        path: String,
        offset: u64,
        reason: String,
    },
    #[error("bad record: {0}")]
    Record(#[from] RecordError),
    #[error("physical offset {0} belongs to another shard")]
    WrongShard(i64),
    #[error("store is read-only: {0}")]
    ReadOnly(String),
    #[error("replicated data does not continue the log: expected offset {expected}, got {got}")]
    NotContiguous { expected: i64, got: i64 },
}

impl PutError {
    /// A flush timeout names the records it concerns (they are stored); other errors stay as they are.
    pub(crate) fn with_stored(self, oks: Vec<crate::types::PutOk>) -> PutError {
        match self {
            PutError::FlushTimeout { timeout_ms, .. } => PutError::FlushTimeout {
                timeout_ms,
                stored: oks,
            },
            other => other,
        }
    }
}

impl StoreError {
    pub(crate) fn io(path: impl std::fmt::Display, err: impl std::fmt::Display) -> StoreError {
        StoreError::Io {
            path: path.to_string(),
            message: err.to_string(),
        }
    }
}

/// Why an append was not stored (or not confirmed durable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PutError {
    /// Too much data waits for a flush; the broker answers SYSTEM_BUSY.
    #[error("store busy: {unflushed} bytes wait for a flush")]
    Busy { unflushed: u64 },
    /// The records were appended (here is where) but no sync covered them within `syncFlushTimeout`
    /// (FLUSH_DISK_TIMEOUT, answered with the send result as RocketMQ does).
    #[error("flush did not complete within {timeout_ms} ms")]
    FlushTimeout {
        timeout_ms: u64,
        stored: Vec<crate::types::PutOk>,
    },
    /// Disk full or a failed write: the store accepts no appends.
    #[error("store is read-only: {0}")]
    ReadOnly(String),
    #[error("message of {size} bytes exceeds the limit of {max}")]
    MessageTooLarge { size: usize, max: usize },
    /// The record could not be encoded (e.g. properties too long).
    #[error("message illegal: {0}")]
    Illegal(String),
    #[error("I/O error: {0}")]
    Io(String),
}

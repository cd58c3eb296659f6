//! Why a replication connection ended.

use storage::StoreError;
use thiserror::Error;

use crate::wire::WireError;

#[derive(Debug, Error)]
pub enum HaError {
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Wire(#[from] WireError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("refused: {0}")]
    Refused(String),
    #[error("peer silent for {0:?}")]
    Timeout(std::time::Duration),
    #[error("{0}")]
    Other(String),
}

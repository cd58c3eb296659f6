//! `BrokerError`: why the broker could not start or keep running.

/// A failure that stops the broker (start-up problems, a shard that cannot run).
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    Config(#[from] crate::config::LoadError),
    #[error("{0}")]
    ShardCount(String),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("metadata file {path} is not valid: {reason}")]
    BadMetadata { path: String, reason: String },
    #[error("store of shard {shard}: {reason}")]
    Store { shard: usize, reason: String },
    #[error("executor: {0}")]
    Executor(String),
    #[error("cross-shard call failed: {0}")]
    Mesh(String),
}

impl BrokerError {
    pub(crate) fn io(path: impl std::fmt::Display, source: std::io::Error) -> BrokerError {
        BrokerError::Io {
            path: path.to_string(),
            source,
        }
    }
}

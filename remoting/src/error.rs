//! Errors of the remoting layer.

use std::time::Duration;

/// Why a remoting operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad frame: {0}")]
    Frame(#[from] protocol::frame::FrameError),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("connection closed")]
    Closed,
    #[error("runtime error: {0}")]
    Runtime(String),
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
}

impl From<glommio::GlommioError<()>> for RemotingError {
    fn from(e: glommio::GlommioError<()>) -> Self {
        match e {
            glommio::GlommioError::IoError(io) => RemotingError::Io(io),
            other => RemotingError::Runtime(other.to_string()),
        }
    }
}

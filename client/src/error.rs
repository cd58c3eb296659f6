//! Errors of the client, with a coarse kind so callers (loadgen) can count them without string matching.

use protocol::body::BodyError;
use protocol::header::HeaderError;
use protocol::message::batch::BatchError;
use protocol::message::record::RecordError;
use remoting::RemotingError;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Remoting(#[from] RemotingError),
    /// The server answered with a code other than the ones this call treats as success.
    #[error("server answered {} ({code}): {remark}", protocol::response_code::name(*code).unwrap_or("UNKNOWN"))]
    Response { code: i32, remark: String },
    #[error("bad response header: {0}")]
    Header(#[from] HeaderError),
    #[error("bad response body: {0}")]
    Body(#[from] BodyError),
    #[error("bad message record in a pull response: {0}")]
    Record(#[from] RecordError),
    #[error("cannot encode batch: {0}")]
    Batch(#[from] BatchError),
    #[error("no route for topic {0}")]
    NoRoute(String),
    #[error("topic {0} has no writable queue with a master")]
    NoWritableQueue(String),
    #[error("no master address for broker {0}")]
    NoBrokerAddr(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// The coarse class of an error: a response code from the server, or a local failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server answered with this response code.
    Response(i32),
    /// No answer within the timeout.
    Timeout,
    /// The connection closed or could not be made.
    Connection,
    /// The server's answer could not be decoded.
    Decode,
    /// No route / queue / address for the topic.
    Route,
    /// The request could not be built.
    Invalid,
}

impl ErrorKind {
    /// A short stable label ("timeout", "connection", ...; response codes are labelled by callers).
    pub fn local_label(self) -> &'static str {
        match self {
            ErrorKind::Response(_) => "response",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Decode => "decode",
            ErrorKind::Route => "route",
            ErrorKind::Invalid => "invalid",
        }
    }
}

impl ClientError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            ClientError::Response { code, .. } => ErrorKind::Response(*code),
            ClientError::Remoting(e) => match e {
                RemotingError::Timeout(_) => ErrorKind::Timeout,
                RemotingError::Frame(_) => ErrorKind::Decode,
                RemotingError::Io(_)
                | RemotingError::Closed
                | RemotingError::Connect { .. }
                | RemotingError::Runtime(_) => ErrorKind::Connection,
            },
            ClientError::Header(_) | ClientError::Body(_) | ClientError::Record(_) => {
                ErrorKind::Decode
            }
            ClientError::NoRoute(_)
            | ClientError::NoWritableQueue(_)
            | ClientError::NoBrokerAddr(_) => ErrorKind::Route,
            ClientError::Batch(_) | ClientError::Invalid(_) => ErrorKind::Invalid,
        }
    }

    /// The server's response code, when the server answered.
    pub fn response_code(&self) -> Option<i32> {
        match self {
            ClientError::Response { code, .. } => Some(*code),
            _ => None,
        }
    }
}

//! Errors of the proxy and the `apache.rocketmq.v2.Status` each becomes, mapped from the brokers'
//! remoting response codes the way Apache's proxy maps them.

use protocol::{response_code, RemotingCommand};

use crate::pb::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{1}")]
    Code(Code, String),
    #[error("topic {0} not found")]
    TopicNotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
    #[error("{0}")]
    Timeout(String),
}

impl ProxyError {
    /// The error a failed remoting response means; `what` names the call for the message.
    pub fn from_remoting(resp: &RemotingCommand, what: &str) -> ProxyError {
        let remark = resp.remark.clone().unwrap_or_default();
        let msg = format!("{what}: broker answered {} {remark}", resp.code);
        let code = match resp.code {
            response_code::TOPIC_NOT_EXIST => return ProxyError::TopicNotFound(msg),
            response_code::NO_PERMISSION => return ProxyError::Forbidden(msg),
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST => Code::ConsumerGroupNotFound,
            response_code::MESSAGE_ILLEGAL => Code::BadRequest,
            response_code::SYSTEM_BUSY => Code::TooManyRequests,
            response_code::FLUSH_DISK_TIMEOUT => Code::MasterPersistenceTimeout,
            response_code::FLUSH_SLAVE_TIMEOUT => Code::SlavePersistenceTimeout,
            response_code::SLAVE_NOT_AVAILABLE => Code::HaNotAvailable,
            response_code::REQUEST_CODE_NOT_SUPPORTED => Code::NotImplemented,
            _ => Code::InternalServerError,
        };
        ProxyError::Code(code, msg)
    }

    pub fn code(&self) -> Code {
        match self {
            ProxyError::BadRequest(_) => Code::BadRequest,
            ProxyError::Code(c, _) => *c,
            ProxyError::TopicNotFound(_) => Code::TopicNotFound,
            ProxyError::Forbidden(_) => Code::Forbidden,
            ProxyError::Unauthorized(_) => Code::Unauthorized,
            ProxyError::Unavailable(_) | ProxyError::Internal(_) => Code::InternalServerError,
            ProxyError::Timeout(_) => Code::ProxyTimeout,
        }
    }

    pub fn status(&self) -> Status {
        status(self.code(), &self.to_string())
    }
}

impl From<crate::remoting::RemotingError> for ProxyError {
    fn from(e: crate::remoting::RemotingError) -> Self {
        match e {
            crate::remoting::RemotingError::Timeout(..) => ProxyError::Timeout(e.to_string()),
            _ => ProxyError::Unavailable(e.to_string()),
        }
    }
}

pub fn status(code: Code, message: &str) -> Status {
    Status {
        code: code as i32,
        message: message.to_string(),
    }
}

pub fn ok() -> Status {
    status(Code::Ok, "OK")
}

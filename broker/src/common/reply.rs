//! Building responses: success, errors with a remark, unparsable headers, unsupported codes, and the
//! response code for each way a store can refuse a put.

use protocol::header::HeaderError;
use protocol::request_code as code;
use protocol::response_code as rc;
use protocol::RemotingCommand;
use storage::PutError;

/// A response with `code` and a remark.
pub fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

/// A SUCCESS response.
pub fn ok() -> RemotingCommand {
    RemotingCommand::response(rc::SUCCESS, None)
}

/// The answer to a header that does not parse (RocketMQ answers SYSTEM_ERROR with the reason).
pub fn header_error(e: &HeaderError) -> RemotingCommand {
    error(rc::SYSTEM_ERROR, format!("bad request header: {e}"))
}

/// The answer to a request code this broker does not serve.
pub fn unsupported(request_code: i32) -> RemotingCommand {
    let name = code::name(request_code).unwrap_or("unknown");
    error(
        rc::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {request_code} ({name}) not supported"),
    )
}

/// Maps a store's refusal to RocketMQ's response code.
pub fn put_error(e: &PutError) -> RemotingCommand {
    let code = match e {
        PutError::Busy { .. } => rc::SYSTEM_BUSY,
        PutError::FlushTimeout { .. } => rc::FLUSH_DISK_TIMEOUT,
        PutError::ReadOnly(_) => rc::SERVICE_NOT_AVAILABLE,
        PutError::MessageTooLarge { .. } | PutError::Illegal(_) => rc::MESSAGE_ILLEGAL,
        PutError::Io(_) => rc::SYSTEM_ERROR,
    };
    let remark = match e {
        PutError::Busy { .. } => {
            format!("[PC_SYNCHRONIZED]broker busy, start flow control for a while: {e}")
        }
        _ => e.to_string(),
    };
    error(code, remark)
}

/// Maps a failed put on a queue's owner (refused by its store, or the owner unreachable).
pub fn owner_put_error(e: &crate::shard::put::PutError) -> RemotingCommand {
    match e {
        crate::shard::put::PutError::Store(e) => put_error(e),
        crate::shard::put::PutError::Mesh(e) => error(rc::SYSTEM_ERROR, e.to_string()),
        crate::shard::put::PutError::NotMaster => error(
            rc::SERVICE_NOT_AVAILABLE,
            crate::shard::put::PutError::NotMaster.to_string(),
        ),
    }
}

//! Building responses: error answers with remarks and JSON bodies.

use protocol::{response_code, RemotingCommand};
use serde::Serialize;

/// A response with `code` and a remark.
pub fn error(request: &RemotingCommand, code: i32, remark: impl Into<String>) -> RemotingCommand {
    request.response_to(code, Some(remark.into()))
}

/// SYSTEM_ERROR for input we cannot read; logged so a broken client is visible.
pub fn bad_input(request: &RemotingCommand, what: impl std::fmt::Display) -> RemotingCommand {
    let remark = format!("bad request (code {}): {what}", request.code);
    tracing::warn!("{remark}");
    error(request, response_code::SYSTEM_ERROR, remark)
}

/// SUCCESS with no body.
pub fn success(request: &RemotingCommand) -> RemotingCommand {
    request.response_to(response_code::SUCCESS, None)
}

/// SUCCESS with `body` as JSON.
pub fn json(request: &RemotingCommand, body: &impl Serialize) -> RemotingCommand {
    success(request).with_body(protocol::body::to_json(body))
}

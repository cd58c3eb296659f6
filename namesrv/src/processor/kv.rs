//! KV config requests: no KV store is kept, so every lookup is QUERY_NOT_FOUND (what clients expect
//! from an empty Java name server, e.g. for ORDER_TOPIC_CONFIG).

use protocol::{response_code, RemotingCommand};

use crate::response;

/// GET_KV_CONFIG (101).
pub fn get(request: &RemotingCommand) -> RemotingCommand {
    let namespace = request.ext("namespace").unwrap_or("");
    let key = request.ext("key").unwrap_or("");
    response::error(
        request,
        response_code::QUERY_NOT_FOUND,
        format!("No config item, Namespace: {namespace} Key: {key}"),
    )
}

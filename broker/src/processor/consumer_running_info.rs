//! GET_CONSUMER_RUNNING_INFO (307, on the control shard; `mqadmin consumerStatus`,
//! `consumerProgress -s true`): the broker asks the named client of a consumer group, on the
//! connection its heartbeats came in on, for its running info and answers what the client answered
//! (as Apache's `callConsumer`), within 10 s.

use std::time::Duration;

use protocol::response_code as rc;
use protocol::{request_code, RemotingCommand};

use super::error;
use crate::shard::Shard;

/// How long the client has to answer (Apache's `Broker2Client.callClient`).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A required header field, trimmed; `Err` with the error response when it is missing or blank.
fn field<'a>(req: &'a RemotingCommand, name: &str) -> Result<&'a str, RemotingCommand> {
    match req.ext(name).map(str::trim) {
        Some(v) if !v.is_empty() => Ok(v),
        Some(_) => Err(error(
            rc::SYSTEM_ERROR,
            format!("bad request header: header field {name} is empty"),
        )),
        None => Err(error(
            rc::SYSTEM_ERROR,
            format!("bad request header: missing header field {name}"),
        )),
    }
}

pub async fn handle(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let (group, client_id) = match (field(req, "consumerGroup"), field(req, "clientId")) {
        (Ok(g), Ok(c)) => (g, c),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let conn = ctl
        .clients
        .borrow()
        .consumer_group(group)
        .and_then(|(_, members)| members.into_iter().find(|c| c.client_id == client_id))
        .map(|c| c.conn);
    let Some(conn) = conn else {
        return error(
            rc::SYSTEM_ERROR,
            format!("The Consumer <{group}> <{client_id}> not online"),
        );
    };
    let call = RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO)
        .with_ext_fields(req.ext_fields.clone())
        .with_body(req.body.clone());
    match shard
        .on(conn.shard)
        .call_client(conn.conn_id, call, CALL_TIMEOUT)
        .await
    {
        Ok(answer) => answer,
        Err(why) => error(
            rc::SYSTEM_ERROR,
            format!("invoke consumer <{group}> <{client_id}> Exception: {why}"),
        ),
    }
}

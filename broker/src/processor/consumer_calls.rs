//! Admin requests the broker answers by asking a consumer client (Apache's `callConsumer`), on the
//! control shard: the named client of the group is asked on the connection its heartbeats came in on,
//! within 10 s, and its answer is the response. GET_CONSUMER_RUNNING_INFO (307; `mqadmin
//! consumerStatus`, `consumerProgress -s true`) is passed on as it came; CONSUME_MESSAGE_DIRECTLY
//! (309; `mqadmin queryMsgById -g -d`) carries the stored message its offsetMsgId names and the name
//! of the shard-broker asked. INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223; `mqadmin getConsumerStatus`)
//! asks every client of the group (or the one named) for its queue offsets on a topic with
//! GET_CONSUMER_STATUS_FROM_CLIENT (221, 5 s each) and answers them by client id.

use std::time::Duration;

use protocol::body::GetConsumerStatusBody;
use protocol::message::msgid::parse_offset_msg_id;
use protocol::response_code as rc;
use protocol::{request_code, RemotingCommand};

use crate::common::reply::{error, ok};
use crate::shard::Shard;

/// How long the client has to answer (Apache's `Broker2Client.callClient`).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long each client has to tell its queue offsets (Apache's `getConsumeStatus`).
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Sends `call` to client `client_id` of `group` and answers its response.
async fn call_consumer(
    shard: &Shard,
    group: &str,
    client_id: &str,
    call: RemotingCommand,
) -> RemotingCommand {
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

/// GET_CONSUMER_RUNNING_INFO: the request's fields and body, passed on.
pub async fn running_info(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let (group, client_id) = match (field(req, "consumerGroup"), field(req, "clientId")) {
        (Ok(g), Ok(c)) => (g, c),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let call = RemotingCommand::request(request_code::GET_CONSUMER_RUNNING_INFO)
        .with_ext_fields(req.ext_fields.clone())
        .with_body(req.body.clone());
    call_consumer(shard, group, client_id, call).await
}

/// CONSUME_MESSAGE_DIRECTLY, for a request that reached shard-broker `receiver`: the stored record
/// `msgId` names is the body, `brokerName` the shard-broker's name.
pub async fn consume_directly(
    shard: &Shard,
    req: &RemotingCommand,
    receiver: usize,
) -> RemotingCommand {
    let (group, client_id, msg_id) = match (
        field(req, "consumerGroup"),
        field(req, "clientId"),
        field(req, "msgId"),
    ) {
        (Ok(g), Ok(c), Ok(m)) => (g, c, m),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
    };
    let Ok((_, offset)) = parse_offset_msg_id(msg_id) else {
        return error(rc::SYSTEM_ERROR, format!("bad msgId {msg_id}"));
    };
    let owner = usize::from(storage::shard_of(offset));
    if offset < 0 || owner >= shard.shards {
        return error(
            rc::SYSTEM_ERROR,
            format!("can not find message by the offset, {offset}"),
        );
    }
    let record = match shard.on(owner).read_record(offset).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("can not find message by the offset, {offset}"),
            )
        }
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("can not read message at offset {offset}: {e}"),
            )
        }
    };
    let mut fields = req.ext_fields.clone();
    fields.insert("brokerName", &shard.broker_name_of(receiver));
    let call = RemotingCommand::request(request_code::CONSUME_MESSAGE_DIRECTLY)
        .with_ext_fields(fields)
        .with_body(record);
    call_consumer(shard, group, client_id, call).await
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS: the queue offsets of `topic` each client of `group` (or the
/// client `clientAddr` names, a client id) holds; clients that fail to answer are left out.
pub async fn consumer_status(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let (group, topic) = match (field(req, "group"), field(req, "topic")) {
        (Ok(g), Ok(t)) => (g, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let only = req
        .ext("clientAddr")
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let members = ctl
        .clients
        .borrow()
        .consumer_group(group)
        .map(|(_, members)| members)
        .unwrap_or_default();
    if members.is_empty() {
        return error(
            rc::SYSTEM_ERROR,
            format!("No Any Consumer online in the consumer group: [{group}]"),
        );
    }
    let mut body = GetConsumerStatusBody::default();
    for client in members {
        if only.is_some_and(|id| id != client.client_id) {
            continue;
        }
        let call = RemotingCommand::request(request_code::GET_CONSUMER_STATUS_FROM_CLIENT)
            .with_ext("topic", topic)
            .with_ext("group", group);
        let answer = shard
            .on(client.conn.shard)
            .call_client(client.conn.conn_id, call, STATUS_TIMEOUT)
            .await;
        match answer {
            Ok(a) if a.code == rc::SUCCESS && !a.body.is_empty() => {
                match GetConsumerStatusBody::from_json(&a.body) {
                    Ok(status) => {
                        body.consumer_table
                            .insert(client.client_id, status.message_queue_table);
                    }
                    Err(e) => tracing::warn!(
                        "consumer status of {} in {group}: bad body: {e}",
                        client.client_id
                    ),
                }
            }
            Ok(_) => {}
            Err(why) => tracing::warn!("consumer status of {} in {group}: {why}", client.client_id),
        }
    }
    ok().with_body(body.to_json())
}

//! SEND_REPLY_MESSAGE (324, long header names) and SEND_REPLY_MESSAGE_V2 (325, short names): a
//! responder's reply to a request message (Java's `MessageUtil.createReplyMessage`, sent to
//! `<cluster>_REPLY_TOPIC`). As RocketMQ's `ReplyMessageProcessor`: the send checks of its
//! `msgCheck`, then the reply is pushed as PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the requester, the
//! producer client named by the `REPLY_TO_CLIENT` property, and the broker waits for the requester's
//! answer. The push decides the response: SUCCESS (msgId "0", queue offset 0) or SYSTEM_ERROR with
//! the reason. With `storeReplyMessageEnable` (default) the reply is also stored in its queue; the
//! stored msgId and offset then go in the answer, and a failed store changes nothing else.
//!
//! The requester's connection may be on any shard: the control shard's client registry names the
//! shard and connection, and the push runs there (`ShardRef::call_client`).

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use protocol::body::perm;
use protocol::header::{
    CommandHeader, ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader,
};
use protocol::message::record::MessageRecord;
use protocol::message::{msgid, properties};
use protocol::response_code as rc;
use protocol::{request_code, RemotingCommand};

use crate::common::reply::{error, header_error};
use crate::shard::put::SendStatus;
use crate::shard::Shard;
use crate::state::topics;

/// How long the broker waits for the requester's answer to a push (RocketMQ's `callClient`).
const PUSH_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn handle(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    born_host: SocketAddr,
) -> RemotingCommand {
    let header = match SendMessageRequestHeader::parse(req.code, &req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let write_queues = match check(shard, &header).await {
        Ok(queues) => queues,
        Err(response) => return response,
    };
    let queue_id = if header.queue_id < 0 {
        (shard.random() % u64::from(write_queues.max(1).unsigned_abs())) as i32
    } else {
        header.queue_id
    };
    let props = header.properties.clone().unwrap_or_default();
    let mut response = match push(shard, &header, &props, req, born_host).await {
        Ok(()) => {
            // "0": the reply was not stored (yet); a message id the client can decode.
            let answer = SendMessageResponseHeader {
                msg_id: "0".to_owned(),
                queue_id,
                queue_offset: 0,
                ..SendMessageResponseHeader::default()
            };
            RemotingCommand::response(rc::SUCCESS, None).with_ext_fields(answer.to_ext_fields())
        }
        Err(why) => error(rc::SYSTEM_ERROR, why),
    };
    response.set_ext(properties::MSG_REGION, "DefaultRegion");
    response.set_ext(
        properties::TRACE_SWITCH,
        if crate::config::live::trace_on(&shard.cfg) {
            "true"
        } else {
            "false"
        },
    );
    // A slave's store takes no writes; RocketMQ's would refuse the put, which changes no answer.
    if shard.cfg.store_reply_message_enable && shard.role() != crate::config::BrokerRole::Slave {
        let record = MessageRecord {
            topic: header.topic.clone(),
            queue_id,
            flag: header.flag,
            body: req.body.clone(),
            properties: props,
            born_timestamp: header.born_timestamp,
            born_host,
            store_host: shard.store_host,
            reconsume_times: header.reconsume_times.unwrap_or(0),
            ..MessageRecord::default()
        };
        store(shard, record, &mut response).await;
    }
    response
}

/// RocketMQ's `msgCheck` for replies; answers the topic's write queue count.
async fn check(
    shard: &Rc<Shard>,
    header: &SendMessageRequestHeader,
) -> Result<i32, RemotingCommand> {
    let order_topic = shard
        .topics
        .borrow()
        .get(&header.topic)
        .is_some_and(|tc| tc.order);
    if !perm::is_writeable(crate::config::live::broker_permission(&shard.cfg) as i32) && order_topic
    {
        return Err(error(
            rc::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                shard.cfg.broker_ip1
            ),
        ));
    }
    topics::validate_topic_name(&header.topic).map_err(|why| error(rc::SYSTEM_ERROR, why))?;
    if topics::is_not_allowed_send(&header.topic) {
        return Err(error(
            rc::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", header.topic),
        ));
    }
    let topic =
        crate::common::topic_create::find_or_create_for_send(shard, &header.as_view()).await?;
    let queues = topic.write_queue_nums.max(topic.read_queue_nums);
    if header.queue_id >= queues {
        return Err(error(
            rc::SYSTEM_ERROR,
            format!(
                "request queueId[{}] is illegal, topic {} has {} write and {} read queues",
                header.queue_id, header.topic, topic.write_queue_nums, topic.read_queue_nums
            ),
        ));
    }
    Ok(topic.write_queue_nums)
}

/// Pushes the reply to the requester and waits for its answer; `Err` says why it did not take it.
async fn push(
    shard: &Shard,
    header: &SendMessageRequestHeader,
    props: &str,
    req: &RemotingCommand,
    born_host: SocketAddr,
) -> Result<(), String> {
    let Some(client_id) = properties::get(props, properties::REPLY_TO_CLIENT) else {
        return Err(format!(
            "reply message properties[{}] is null",
            properties::REPLY_TO_CLIENT
        ));
    };
    let conn = shard
        .control_shard()
        .producer_conn(client_id.to_owned())
        .await
        .map_err(|e| format!("push reply message to {client_id} failed: {e}"))?;
    let Some(conn) = conn else {
        return Err(format!(
            "push reply message fail, channel of <{client_id}> not found."
        ));
    };
    let now = crate::state::topics::now_ms();
    let push_header = ReplyMessageRequestHeader {
        producer_group: header.producer_group.clone(),
        topic: header.topic.clone(),
        default_topic: header.default_topic.clone(),
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id: header.queue_id,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: Some(properties::with(
            props,
            properties::PUSH_REPLY_TIME,
            &now.to_string(),
        )),
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode.unwrap_or(false),
        born_host: host_port(born_host),
        store_host: host_port(shard.store_host),
        store_timestamp: now,
    };
    let cmd = RemotingCommand::request(request_code::PUSH_REPLY_MESSAGE_TO_CLIENT)
        .with_ext_fields(push_header.to_ext_fields())
        .with_body(req.body.clone());
    let answer = shard
        .on(conn.shard)
        .call_client(conn.conn_id, cmd, PUSH_REPLY_TIMEOUT)
        .await;
    match answer {
        Ok(answer) if answer.code == rc::SUCCESS => Ok(()),
        Ok(answer) => {
            tracing::warn!(
                "push reply message to <{client_id}> answered {}: {}",
                answer.code,
                answer.remark.as_deref().unwrap_or("")
            );
            Err(format!("push reply message to {client_id}fail."))
        }
        Err(why) => {
            tracing::warn!("push reply message to <{client_id}> failed: {why}");
            Err(format!("push reply message to {client_id}fail."))
        }
    }
}

/// `ip:port` as Java's `getHostAddress() + ":" + getPort()` writes it.
fn host_port(addr: SocketAddr) -> String {
    format!("{}:{}", addr.ip(), addr.port())
}

/// Stores the reply; a stored reply's msgId, queue and offset go in the answer.
async fn store(shard: &Shard, record: MessageRecord, response: &mut RemotingCommand) {
    let queue_id = record.queue_id;
    match shard.owner(&record.topic, queue_id).put(record).await {
        Ok(outcome) => {
            if outcome.status != SendStatus::SendOk {
                tracing::debug!("reply stored: {}", outcome.status.describe());
            }
            if let Some(stored) = outcome.stored.first() {
                response.set_ext(
                    "msgId",
                    &msgid::offset_msg_id(shard.store_host, stored.physical_offset),
                );
                response.set_ext("queueId", &queue_id.to_string());
                response.set_ext("queueOffset", &stored.queue_offset.to_string());
            }
        }
        Err(e) => tracing::warn!("reply message not stored: {e}"),
    }
}

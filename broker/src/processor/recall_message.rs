//! RECALL_MESSAGE (370, RocketMQ 5.3.2+): a producer cancels a timer message before it is due, by the
//! recall handle its send answer carried. Checks and answers as Apache's RecallMessageProcessor: off
//! unless `recallMessageEnable`; the handle must name this request's topic and this broker, and a due
//! time still ahead (a delivered message's handle is "timestamp invalid"). Accepted, a marker is
//! parked on the timer queue (of every shard of this broker in the single-identity mode, since the
//! handle does not name the queue) and the timer skips the message when it falls due. Like Apache's,
//! a well-formed handle of a message this broker never had is accepted and cancels nothing.

use std::net::SocketAddr;
use std::rc::Rc;

use protocol::body::perm;
use protocol::header::{CommandHeader, RecallHandle, RecallMessageRequestHeader};
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error};
use crate::feature::timer::{self, recall};
use crate::shard::Shard;
use crate::state::topics::now_ms;

const NOT_AVAILABLE: &str = "recall failed, broker service not available";

pub async fn handle(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    born_host: SocketAddr,
) -> RemotingCommand {
    let mut response = match recall(shard, req, born_host).await {
        Ok(msg_id) => {
            let mut r = RemotingCommand::response(rc::SUCCESS, None);
            r.set_ext("msgId", &msg_id);
            r
        }
        Err(r) => r,
    };
    response.set_ext(properties::MSG_REGION, "DefaultRegion");
    response
}

async fn recall(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    born_host: SocketAddr,
) -> Result<String, RemotingCommand> {
    let header = RecallMessageRequestHeader::from_ext_fields(&req.ext_fields)
        .map_err(|e| header_error(&e))?;
    let cfg = &shard.cfg;
    if !cfg.recall_message_enable {
        return Err(error(
            rc::NO_PERMISSION,
            "recall failed, operation is forbidden",
        ));
    }
    if shard.role() == crate::config::BrokerRole::Slave {
        return Err(error(rc::SLAVE_NOT_AVAILABLE, NOT_AVAILABLE));
    }
    if !perm::is_writeable(crate::config::live::broker_permission(cfg) as i32)
        && !cfg.allow_recall_when_broker_not_writeable
    {
        return Err(error(rc::SERVICE_NOT_AVAILABLE, NOT_AVAILABLE));
    }
    if shard.topics.borrow().get(&header.topic).is_none() {
        return Err(error(
            rc::TOPIC_NOT_EXIST,
            format!("recall failed, the topic[{}] not exist", header.topic),
        ));
    }
    let handle = RecallHandle::decode(&header.recall_handle)
        .map_err(|why| error(rc::ILLEGAL_OPERATION, why))?;
    if handle.topic != header.topic {
        return Err(error(
            rc::ILLEGAL_OPERATION,
            "recall failed, topic not match",
        ));
    }
    if handle.broker_name != shard.broker_name_of(shard.id) {
        return Err(error(rc::ILLEGAL_OPERATION, NOT_AVAILABLE));
    }
    let at = handle.timestamp_ms();
    let left = at.saturating_sub(now_ms());
    let max_ms = i64::try_from(cfg.timer_max_delay_sec)
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    if at < 0 || left <= 0 || left >= max_ms {
        return Err(error(
            rc::ILLEGAL_OPERATION,
            "recall failed, timestamp invalid",
        ));
    }
    // The handle's time is the due time + 1 ms.
    let due = at.saturating_sub(1);
    let template = MessageRecord {
        born_host,
        store_host: shard.store_host,
        ..MessageRecord::default()
    };
    let group = header.producer_group.as_deref().unwrap_or_default();
    let owners: Vec<usize> = shard.broker_shards(shard.id).map(|s| s.id()).collect();
    for owner in owners {
        let queue_id = timer::queue_of(shard, owner);
        let marker = recall::marker(&handle, due, group, queue_id, template.clone());
        match shard.on(owner).put(marker).await {
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(
                    "recall of {}: the marker was not stored: {e}",
                    handle.message_id
                );
                return Err(error(rc::SYSTEM_ERROR, "recall failed, execute error"));
            }
        }
    }
    Ok(handle.message_id)
}

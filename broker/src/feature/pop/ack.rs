//! ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151): a popped message is consumed. A normal ack
//! settles the message in its check point after the ack is in the revive log; an ordered ack
//! (`reviveQid` 999) commits the group's position past the acked prefix of the queue's batch and
//! opens the queue for the next batch. Acks of check points already revived or settled change nothing
//! (RocketMQ answers them SUCCESS too).

use std::rc::Rc;

use protocol::body::{BatchAck, BatchAckMessageRequestBody};
use protocol::header::extra_info::{ExtraInfo, RetryMark};
use protocol::header::{AckMessageRequestHeader, CommandHeader, POP_ORDER_REVIVE_QUEUE};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::feature::pop::checkpoint::CkKey;
use crate::feature::pop::order::OrderCommit;
use crate::feature::pop::{revive_log, QueueKey};
use crate::shard::Shard;

/// The queue's read queue count, or the refusal RocketMQ answers an ack for an unknown queue with.
pub fn check_queue(shard: &Shard, topic: &str, queue_id: i32) -> Result<(), RemotingCommand> {
    let topics = shard.topics.borrow();
    let Some(tc) = topics.get(topic) else {
        return Err(error(
            rc::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if queue_id < 0 || queue_id >= tc.read_queue_nums {
        return Err(error(
            rc::MESSAGE_ILLEGAL,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                tc.read_queue_nums
            ),
        ));
    }
    Ok(())
}

/// ACK_MESSAGE, on the queue's owner.
pub async fn ack(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match AckMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Some(refused) = super::pop_message::refuse_on_slave(shard) {
        return refused;
    }
    if let Err(response) = check_queue(shard, &h.topic, h.queue_id) {
        return response;
    }
    let (min, max) = (
        shard.store.min_offset(&h.topic, h.queue_id),
        shard.store.max_offset(&h.topic, h.queue_id),
    );
    if h.offset < min || h.offset > max {
        return error(
            rc::NO_MESSAGE,
            format!(
                "offset is illegal, key:{}@{}, commit:{}, store:{min}~{max}",
                h.topic, h.queue_id, h.offset
            ),
        );
    }
    let info = match ExtraInfo::parse(&h.extra_info) {
        Ok(i) => i,
        Err(e) => return error(rc::INVALID_PARAMETER, e.to_string()),
    };
    let result = if info.is_order() {
        let key = QueueKey::new(&h.consumer_group, &h.topic, h.queue_id);
        ack_ordered(shard, &key, h.offset, info.pop_time).await
    } else {
        let key = CkKey {
            group: h.consumer_group,
            topic: h.topic,
            queue_id: h.queue_id,
            start_offset: info.ck_queue_offset,
            pop_time: info.pop_time,
        };
        ack_offsets(shard, &key, &[h.offset]).await
    };
    result.unwrap_or_else(|r| r)
}

/// Settles offsets of a check point: the ack goes to the revive log first.
pub async fn ack_offsets(
    shard: &Shard,
    key: &CkKey,
    offsets: &[i64],
) -> Result<RemotingCommand, RemotingCommand> {
    let open: Vec<i64> = {
        let pop_state = crate::feature::pop::state(shard);
        let cks = pop_state.cks.borrow();
        let Some(ck) = cks.get(key) else {
            return Ok(ok());
        };
        offsets
            .iter()
            .copied()
            .filter(|o| ck.is_unacked(*o))
            .collect()
    };
    if open.is_empty() {
        return Ok(ok());
    }
    revive_log::append_ack(shard, key, &open)
        .await
        .map_err(|why| error(rc::SYSTEM_ERROR, why))?;
    let pop_state = crate::feature::pop::state(shard);
    let mut cks = pop_state.cks.borrow_mut();
    for o in open {
        cks.ack(key, o);
    }
    Ok(ok())
}

/// An ordered ack: commits the position past the batch's acked prefix (durably), and wakes pops
/// waiting for the queue to open.
pub async fn ack_ordered(
    shard: &Shard,
    key: &QueueKey,
    offset: i64,
    pop_time: i64,
) -> Result<RemotingCommand, RemotingCommand> {
    let position = shard
        .offsets
        .borrow()
        .query(&key.group, &key.topic, key.queue_id);
    if position.is_some_and(|p| offset < p) {
        return Ok(ok());
    }
    let commit = crate::feature::pop::state(shard)
        .orders
        .borrow_mut()
        .commit(key, offset, pop_time);
    match commit {
        OrderCommit::Next(next) => {
            revive_log::append_order_commit(shard, key, next)
                .await
                .map_err(|why| error(rc::SYSTEM_ERROR, why))?;
            let mut offsets = shard.offsets.borrow_mut();
            if offsets
                .query(&key.group, &key.topic, key.queue_id)
                .is_none_or(|p| p < next)
            {
                offsets.commit(&key.group, &key.topic, key.queue_id, next);
            }
            drop(offsets);
            if crate::feature::pop::state(shard)
                .orders
                .borrow()
                .unblocks_at(key)
                .is_none()
            {
                crate::feature::long_poll::waiters(shard).notify(&key.topic, key.queue_id);
            }
            Ok(ok())
        }
        OrderCommit::Stale => Ok(ok()),
        OrderCommit::Illegal => Err(error(
            rc::MESSAGE_ILLEGAL,
            format!(
                "offset is illegal, key:{}@{}@{}, commit:{offset}",
                key.topic, key.group, key.queue_id
            ),
        )),
    }
}

/// BATCH_ACK_MESSAGE: each check point's acks run on the owner of its queue.
pub async fn batch_ack(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let body: BatchAckMessageRequestBody = match serde_json::from_slice(&req.body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                rc::INVALID_PARAMETER,
                format!("batch ack body cannot be read: {e}"),
            )
        }
    };
    if let Some(refused) = super::pop_message::refuse_on_slave(shard) {
        return refused;
    }
    if body.acks.is_empty() {
        return error(rc::NO_MESSAGE, "no acks");
    }
    let mut response = ok();
    for ack in body.acks {
        let Some(mark) = RetryMark::parse(&ack.retry) else {
            return error(
                rc::INVALID_PARAMETER,
                format!("retry mark {:?} is not 0, 1 or 2", ack.retry),
            );
        };
        let topic = mark.real_topic(&ack.topic, &ack.consumer_group);
        let owner = shard.owner_of(&topic, ack.queue_id);
        let answer = shard.on(owner).batch_ack_entry(topic, ack).await;
        match answer {
            Ok(r) if r.code == rc::SUCCESS => {}
            Ok(r) => response = r,
            Err(e) => response = error(rc::SYSTEM_ERROR, e.to_string()),
        }
    }
    response
}

/// On the queue's owner: one entry of a BATCH_ACK_MESSAGE (`topic` is the real topic it names).
pub(crate) async fn ack_entry(shard: &Shard, topic: String, ack: BatchAck) -> RemotingCommand {
    let (min, max) = (
        shard.store.min_offset(&topic, ack.queue_id),
        shard.store.max_offset(&topic, ack.queue_id),
    );
    let offsets: Vec<i64> = ack
        .bit_set
        .iter()
        .filter_map(|i| ack.start_offset.checked_add(i64::from(*i)))
        .filter(|o| *o >= min && *o <= max)
        .collect();
    if ack.revive_queue_id == POP_ORDER_REVIVE_QUEUE {
        let key = QueueKey::new(&ack.consumer_group, &topic, ack.queue_id);
        let mut last = ok();
        for o in offsets {
            if let Err(e) = ack_ordered(shard, &key, o, ack.pop_time).await {
                last = e;
            }
        }
        last
    } else {
        let key = CkKey {
            group: ack.consumer_group,
            topic,
            queue_id: ack.queue_id,
            start_offset: ack.start_offset,
            pop_time: ack.pop_time,
        };
        ack_offsets(shard, &key, &offsets)
            .await
            .unwrap_or_else(|r| r)
    }
}

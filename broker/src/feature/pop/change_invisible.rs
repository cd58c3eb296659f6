//! CHANGE_MESSAGE_INVISIBLETIME (200053): a popped message stays invisible for a new time from now.
//! As RocketMQ does, a new one-message check point (start = the message's offset, pop time = now) is
//! written and the message is acked in its old one; the client builds the new receipt handle from the
//! answer. An ordered message's batch just keeps the queue blocked longer.

use std::rc::Rc;

use protocol::header::extra_info::ExtraInfo;
use protocol::header::{
    ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader, CommandHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::ack::{ack_offsets, check_queue};
use crate::common::reply::{error, header_error};
use crate::feature::pop::checkpoint::{Ck, CkKey};
use crate::feature::pop::{now_ms, revive_log, QueueKey};
use crate::shard::Shard;

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match ChangeInvisibleTimeRequestHeader::from_ext_fields(&req.ext_fields) {
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
    if h.offset < min || h.offset >= max {
        return error(
            rc::NO_MESSAGE,
            format!("offset {} is not in {min}~{max}", h.offset),
        );
    }
    if h.invisible_time < 0 {
        return error(rc::INVALID_PARAMETER, "invisibleTime must not be negative");
    }
    let info = match ExtraInfo::parse(&h.extra_info) {
        Ok(i) => i,
        Err(e) => return error(rc::INVALID_PARAMETER, e.to_string()),
    };
    // A new check point never shares the old one's key (start and pop time), even within a millisecond.
    let now = if info.ck_queue_offset == h.offset {
        now_ms().max(info.pop_time.saturating_add(1))
    } else {
        now_ms()
    };
    let answer = |pop_time: i64, invisible_time: i64| {
        let header = ChangeInvisibleTimeResponseHeader {
            pop_time,
            invisible_time,
            revive_qid: info.revive_qid,
        };
        RemotingCommand::response(rc::SUCCESS, None).with_ext_fields(header.to_ext_fields())
    };
    if info.is_order() {
        let key = QueueKey::new(&h.consumer_group, &h.topic, h.queue_id);
        let until = now.saturating_add(h.invisible_time);
        crate::feature::pop::state(shard)
            .orders
            .borrow_mut()
            .change_invisible(&key, h.offset, info.pop_time, until);
        return answer(info.pop_time, until.saturating_sub(info.pop_time));
    }
    let new_key = CkKey {
        group: h.consumer_group.clone(),
        topic: h.topic.clone(),
        queue_id: h.queue_id,
        start_offset: h.offset,
        pop_time: now,
    };
    let revive_offset =
        match revive_log::append_ck(shard, &new_key, &[h.offset], h.invisible_time).await {
            Ok(o) => o,
            Err(why) => return error(rc::SYSTEM_ERROR, why),
        };
    crate::feature::pop::state(shard)
        .cks
        .borrow_mut()
        .insert(Ck::new(
            new_key,
            vec![h.offset],
            h.invisible_time,
            revive_offset,
        ));
    let old_key = CkKey {
        group: h.consumer_group,
        topic: h.topic,
        queue_id: h.queue_id,
        start_offset: info.ck_queue_offset,
        pop_time: info.pop_time,
    };
    if let Err(response) = ack_offsets(shard, &old_key, &[h.offset]).await {
        return response;
    }
    answer(now, h.invisible_time)
}

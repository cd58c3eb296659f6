//! QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET, on the shard that owns the queue (offsets live
//! with their queue).

use protocol::header::{
    CommandHeader, QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::shard::Shard;

pub fn query(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let header = match QueryConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let stored =
        shard
            .offsets
            .borrow()
            .query(&header.consumer_group, &header.topic, header.queue_id);
    let offset = match stored {
        Some(o) if o >= 0 => Some(o),
        // As RocketMQ: a group without an offset starts at 0 while the queue still holds its first
        // message (nothing was deleted), unless the client says not to.
        _ if header.set_zero_if_not_found != Some(false)
            && shard.store.min_offset(&header.topic, header.queue_id) <= 0 =>
        {
            Some(0)
        }
        _ => None,
    };
    match offset {
        Some(offset) => RemotingCommand::response(rc::SUCCESS, None)
            .with_ext_fields(QueryConsumerOffsetResponseHeader { offset }.to_ext_fields()),
        None => error(
            rc::QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        ),
    }
}

pub fn update(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let header = match UpdateConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if header.commit_offset < 0 {
        return error(
            rc::SYSTEM_ERROR,
            format!("commitOffset {} is negative", header.commit_offset),
        );
    }
    shard.offsets.borrow_mut().commit(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.commit_offset,
    );
    ok()
}

//! GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME and SEARCH_OFFSET_BY_TIMESTAMP, on the
//! shard that owns the queue.

use protocol::header::{
    CommandHeader, GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, SearchOffsetRequestHeader, SearchOffsetResponseHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error};
use crate::shard::Shard;

fn success(fields: protocol::ExtFields) -> RemotingCommand {
    RemotingCommand::response(rc::SUCCESS, None).with_ext_fields(fields)
}

pub fn max_offset(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    match GetMaxOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => {
            // Controller mode: up to the confirm offset, as RocketMQ 5's ConsumeQueue (`confirm`).
            let offset = shard.store.readable_max_offset(&h.topic, h.queue_id);
            success(GetMaxOffsetResponseHeader { offset }.to_ext_fields())
        }
        Err(e) => header_error(&e),
    }
}

pub fn min_offset(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    match GetMinOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => {
            let offset = shard.store.min_offset(&h.topic, h.queue_id);
            success(GetMinOffsetResponseHeader { offset }.to_ext_fields())
        }
        Err(e) => header_error(&e),
    }
}

pub async fn earliest_store_time(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match GetEarliestMsgStoretimeRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    match shard.store.earliest_store_time(&h.topic, h.queue_id).await {
        // RocketMQ answers -1 for an empty queue.
        Ok(ts) => success(
            GetEarliestMsgStoretimeResponseHeader {
                timestamp: ts.unwrap_or(-1),
            }
            .to_ext_fields(),
        ),
        Err(e) => error(rc::SYSTEM_ERROR, format!("reading the queue failed: {e}")),
    }
}

pub async fn search_by_time(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match SearchOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    match shard
        .store
        .offset_by_time(&h.topic, h.queue_id, h.timestamp)
        .await
    {
        Ok(offset) => success(SearchOffsetResponseHeader { offset }.to_ext_fields()),
        Err(e) => error(rc::SYSTEM_ERROR, format!("searching the queue failed: {e}")),
    }
}

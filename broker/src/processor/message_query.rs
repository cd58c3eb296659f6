//! VIEW_MESSAGE_BY_ID (an offsetMsgId's physical offset names its shard) and QUERY_MESSAGE (by key,
//! asked of every shard's index and merged).

use std::rc::Rc;

use bytes::BytesMut;
use protocol::header::{
    CommandHeader, QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::{error, header_error, ok};
use crate::shard::mesh::{ShardAnswer, ShardCall};
use crate::shard::Shard;

/// Most messages one QUERY_MESSAGE returns (RocketMQ's defaultQueryMaxNum).
const QUERY_MAX_NUM: usize = 32;

pub async fn view_by_id(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match ViewMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let owner = usize::from(storage::shard_of(h.offset));
    if h.offset < 0 || owner >= shard.shards {
        return error(
            rc::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", h.offset),
        );
    }
    match shard
        .mesh
        .call(owner, ShardCall::ReadRecord(h.offset))
        .await
    {
        Ok(ShardAnswer::Record(Ok(Some(record)))) => ok().with_body(record),
        Ok(ShardAnswer::Record(Ok(None))) => error(
            rc::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", h.offset),
        ),
        Ok(ShardAnswer::Record(Err(e))) | Err(e) => error(
            rc::SYSTEM_ERROR,
            format!("can not read message at offset {}: {e}", h.offset),
        ),
        Ok(other) => error(rc::SYSTEM_ERROR, format!("unexpected answer {other:?}")),
    }
}

pub async fn query_by_key(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match QueryMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let max = usize::try_from(h.max_num)
        .unwrap_or(0)
        .clamp(1, QUERY_MAX_NUM);
    let answers = shard
        .mesh
        .call_all(|| ShardCall::QueryByKey {
            topic: h.topic.clone(),
            key: h.key.clone(),
            max,
            begin_ms: h.begin_timestamp,
            end_ms: h.end_timestamp,
        })
        .await;
    let mut records = Vec::new();
    for answer in answers {
        match answer {
            Ok(ShardAnswer::Records(Ok(found))) => records.extend(found),
            Ok(ShardAnswer::Records(Err(e))) | Err(e) => {
                tracing::warn!("query by key on a shard failed: {e}")
            }
            Ok(other) => tracing::warn!("unexpected answer {other:?}"),
        }
    }
    records.truncate(max);
    let header = QueryMessageResponseHeader {
        index_last_update_timestamp: crate::state::topics::now_ms(),
        index_last_update_phyoffset: shard.store.max_physical_offset(),
    };
    if records.is_empty() {
        return error(
            rc::QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
        )
        .with_ext_fields(header.to_ext_fields());
    }
    let mut body = BytesMut::with_capacity(records.iter().map(|r| r.len()).sum());
    for r in &records {
        body.extend_from_slice(r);
    }
    ok().with_ext_fields(header.to_ext_fields())
        .with_body(body.freeze())
}

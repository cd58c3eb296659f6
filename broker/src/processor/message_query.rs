//! VIEW_MESSAGE_BY_ID (an offsetMsgId's physical offset names its shard) and QUERY_MESSAGE (by key,
//! asked of every shard's index and merged; a query by unique key, `_UNIQUE_KEY_QUERY=true`, as Java's
//! `viewMessage(topic, msgId)` sends, returns up to the default maximum whatever `maxNum` it asks).

use std::rc::Rc;

use bytes::BytesMut;
use protocol::header::{
    CommandHeader, QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// Most messages one QUERY_MESSAGE returns (RocketMQ's defaultQueryMaxNum).
const QUERY_MAX_NUM: usize = 32;
/// The extField marking a query by unique key (RocketMQ's `MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

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
    match shard.on(owner).read_record(h.offset).await {
        Ok(Some(record)) => ok().with_body(record),
        Ok(None) => error(
            rc::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", h.offset),
        ),
        Err(e) => error(
            rc::SYSTEM_ERROR,
            format!("can not read message at offset {}: {e}", h.offset),
        ),
    }
}

pub async fn query_by_key(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match QueryMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let max = if req.ext(UNIQUE_MSG_QUERY_FLAG) == Some("true") {
        QUERY_MAX_NUM
    } else {
        usize::try_from(h.max_num)
            .unwrap_or(0)
            .clamp(1, QUERY_MAX_NUM)
    };
    let answers = join_all(shard.broker_shards(shard.id).map(|s| {
        s.query_by_key(
            h.topic.clone(),
            h.key.clone(),
            max,
            h.begin_timestamp,
            h.end_timestamp,
        )
    }))
    .await;
    let mut records = Vec::new();
    for answer in answers {
        match answer {
            Ok(found) => records.extend(found),
            Err(e) => tracing::warn!("query by key on a shard failed: {e}"),
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

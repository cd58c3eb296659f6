//! Request processors, one request-code family per file, and the routing between shards: sends go to
//! the queue owner's store, queue-addressed requests run on the queue's owner, control requests on
//! shard 0, lookups by offset on the shard the offset names.

// Early returns carry the error response itself; it is built once per request, so its size is moot.
#![allow(clippy::result_large_err)]

pub(crate) mod admin_stats;
pub(crate) mod broker_admin;
pub(crate) mod client_manage;
pub(crate) mod consumer_offset;
pub(crate) mod end_transaction;
pub(crate) mod message_query;
pub(crate) mod pull;
pub(crate) mod queue_offset;
pub(crate) mod rebalance_lock;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod subscription_group_admin;
pub(crate) mod topic_admin;

use std::net::SocketAddr;
use std::rc::Rc;

use protocol::header::HeaderError;
use protocol::request_code as code;
use protocol::response_code as rc;
use protocol::RemotingCommand;
use remoting::ConnectionContext;

use crate::shard::mesh::{ShardAnswer, ShardCall};
use crate::shard::Shard;
use crate::state::clients::ConnRef;

/// A response with `code` and a remark.
pub fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

/// A SUCCESS response.
pub fn ok() -> RemotingCommand {
    RemotingCommand::response(rc::SUCCESS, None)
}

/// The answer to a header that does not parse (RocketMQ answers SYSTEM_ERROR with the reason).
pub fn header_error(e: &HeaderError) -> RemotingCommand {
    error(rc::SYSTEM_ERROR, format!("bad request header: {e}"))
}

fn unsupported(request_code: i32) -> RemotingCommand {
    let name = code::name(request_code).unwrap_or("unknown");
    error(
        rc::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {request_code} ({name}) not supported"),
    )
}

/// Entry point for every request a connection of this shard receives.
pub async fn dispatch(
    shard: Rc<Shard>,
    req: RemotingCommand,
    ctx: ConnectionContext,
) -> Option<RemotingCommand> {
    if let Some(denied) = crate::feature::acl::check(&shard.cfg, &req, ctx.peer) {
        return Some(denied);
    }
    let conn = ConnRef {
        shard: shard.id,
        conn_id: ctx.id,
        peer: ctx.peer,
    };
    match req.code {
        code::SEND_MESSAGE | code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => {
            Some(send::handle(&shard, &req, ctx.peer).await)
        }
        code::PULL_MESSAGE
        | code::QUERY_CONSUMER_OFFSET
        | code::UPDATE_CONSUMER_OFFSET
        | code::GET_MAX_OFFSET
        | code::GET_MIN_OFFSET
        | code::GET_EARLIEST_MSG_STORETIME
        | code::SEARCH_OFFSET_BY_TIMESTAMP => to_owner(&shard, req, conn, ctx.local).await,
        code::HEART_BEAT => {
            // Remember the connection so shard 0 can reach its client (NOTIFY_CONSUMER_IDS_CHANGED).
            shard
                .connections
                .borrow_mut()
                .entry(ctx.id)
                .or_insert_with(|| ctx.sink.clone());
            to_control(&shard, req, conn, ctx.local).await
        }
        code::UNREGISTER_CLIENT
        | code::GET_CONSUMER_LIST_BY_GROUP
        | code::UPDATE_AND_CREATE_TOPIC
        | code::DELETE_TOPIC_IN_BROKER
        | code::GET_BROKER_RUNTIME_INFO
        | code::GET_ALL_CONSUMER_OFFSET
        | code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        | code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
        | code::LOCK_BATCH_MQ
        | code::UNLOCK_BATCH_MQ
        | code::INVOKE_BROKER_TO_RESET_OFFSET
        | code::GET_CONSUMER_CONNECTION_LIST => to_control(&shard, req, conn, ctx.local).await,
        code::GET_TOPIC_STATS_INFO => Some(admin_stats::topic_stats(&shard, &req).await),
        code::GET_CONSUME_STATS => Some(admin_stats::consume_stats(&shard, &req).await),
        code::GET_ALL_TOPIC_CONFIG => Some(topic_admin::all_topic_config(&shard)),
        code::GET_ALL_DELAY_OFFSET => Some(broker_admin::all_delay_offset(&shard).await),
        code::VIEW_MESSAGE_BY_ID => Some(message_query::view_by_id(&shard, &req).await),
        code::QUERY_MESSAGE => Some(message_query::query_by_key(&shard, &req).await),
        code::CONSUMER_SEND_MSG_BACK => Some(send_back::handle(&shard, &req).await),
        code::END_TRANSACTION => end_transaction::route(&shard, req, conn, ctx.local).await,
        other => {
            tracing::debug!("request code {other} not supported (from {})", ctx.peer);
            Some(unsupported(other))
        }
    }
}

/// Runs a queue-addressed request on the queue's owner.
async fn to_owner(
    shard: &Rc<Shard>,
    req: RemotingCommand,
    conn: ConnRef,
    local: SocketAddr,
) -> Option<RemotingCommand> {
    let owner = match (
        req.ext("topic"),
        req.ext("queueId")
            .and_then(|q| q.trim().parse::<i32>().ok()),
    ) {
        (Some(topic), Some(queue_id)) => shard.owner_of(topic, queue_id),
        // Let the local processor report what is missing.
        _ => shard.id,
    };
    on_shard(shard, owner, req, conn, local).await
}

/// Runs an owned request on shard `owner`: here, or there through the mesh (where `run_owned` takes it).
pub async fn on_shard(
    shard: &Rc<Shard>,
    owner: usize,
    req: RemotingCommand,
    conn: ConnRef,
    local: SocketAddr,
) -> Option<RemotingCommand> {
    if owner == shard.id {
        return run_owned(shard, req, conn, local).await;
    }
    answer_command(
        shard
            .mesh
            .call(
                owner,
                ShardCall::Owned {
                    cmd: req,
                    conn,
                    local,
                },
            )
            .await,
    )
}

/// Runs a control request on shard 0.
async fn to_control(
    shard: &Rc<Shard>,
    req: RemotingCommand,
    conn: ConnRef,
    local: SocketAddr,
) -> Option<RemotingCommand> {
    if shard.control.is_some() {
        return run_control(shard, req, conn, local).await;
    }
    answer_command(
        shard
            .mesh
            .call(
                0,
                ShardCall::Control {
                    cmd: req,
                    conn,
                    local,
                },
            )
            .await,
    )
}

fn answer_command(answer: Result<ShardAnswer, String>) -> Option<RemotingCommand> {
    match answer {
        Ok(ShardAnswer::Command(cmd)) => cmd,
        Ok(other) => Some(error(
            rc::SYSTEM_ERROR,
            format!("unexpected cross-shard answer {other:?}"),
        )),
        Err(e) => Some(error(rc::SYSTEM_ERROR, e)),
    }
}

/// Queue-addressed requests, on the shard that owns the queue.
pub async fn run_owned(
    shard: &Rc<Shard>,
    req: RemotingCommand,
    _conn: ConnRef,
    _local: SocketAddr,
) -> Option<RemotingCommand> {
    Some(match req.code {
        code::PULL_MESSAGE => pull::handle(shard, &req).await,
        code::QUERY_CONSUMER_OFFSET => consumer_offset::query(shard, &req),
        code::UPDATE_CONSUMER_OFFSET => consumer_offset::update(shard, &req),
        code::GET_MAX_OFFSET => queue_offset::max_offset(shard, &req),
        code::GET_MIN_OFFSET => queue_offset::min_offset(shard, &req),
        code::GET_EARLIEST_MSG_STORETIME => queue_offset::earliest_store_time(shard, &req).await,
        code::SEARCH_OFFSET_BY_TIMESTAMP => queue_offset::search_by_time(shard, &req).await,
        code::END_TRANSACTION => end_transaction::handle(shard, &req).await,
        other => unsupported(other),
    })
}

/// Control requests, on shard 0.
pub async fn run_control(
    shard: &Rc<Shard>,
    req: RemotingCommand,
    conn: ConnRef,
    _local: SocketAddr,
) -> Option<RemotingCommand> {
    Some(match req.code {
        code::HEART_BEAT => client_manage::heartbeat(shard, &req, conn).await,
        code::UNREGISTER_CLIENT => client_manage::unregister(shard, &req).await,
        code::GET_CONSUMER_LIST_BY_GROUP => client_manage::consumer_list(shard, &req),
        code::UPDATE_AND_CREATE_TOPIC => topic_admin::update_and_create(shard, &req).await,
        code::DELETE_TOPIC_IN_BROKER => topic_admin::delete(shard, &req).await,
        code::GET_BROKER_RUNTIME_INFO => broker_admin::runtime_info(shard).await,
        code::GET_ALL_CONSUMER_OFFSET => broker_admin::all_consumer_offset(shard).await,
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => broker_admin::all_subscription_groups(shard),
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            subscription_group_admin::update_and_create(shard, &req).await
        }
        code::LOCK_BATCH_MQ => rebalance_lock::lock(shard, &req),
        code::UNLOCK_BATCH_MQ => rebalance_lock::unlock(shard, &req),
        code::INVOKE_BROKER_TO_RESET_OFFSET => admin_stats::reset_offset(shard, &req).await,
        code::GET_CONSUMER_CONNECTION_LIST => admin_stats::consumer_connection_list(shard, &req),
        // Only from the transaction check service (clients' code 39 requests are not routed here).
        code::CHECK_TRANSACTION_STATE => {
            crate::feature::transaction::deliver_check(shard, req).await
        }
        other => unsupported(other),
    })
}

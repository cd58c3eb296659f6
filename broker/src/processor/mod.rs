//! Request processors, one request-code family per file. `dispatch` takes every request a connection
//! receives, checks ACL, and runs it where `routing` says (here, on the queue's owner, or on the
//! control shard); `process` is what runs there.

// Early returns carry the error response itself; it is built once per request, so its size is moot.
#![allow(clippy::result_large_err)]

pub(crate) mod ack;
pub(crate) mod admin_stats;
pub(crate) mod broker_admin;
pub(crate) mod broker_config;
pub(crate) mod broker_consume_stats;
pub(crate) mod broker_stats_data;
pub(crate) mod change_invisible;
pub(crate) mod check_client_config;
pub(crate) mod client_manage;
pub(crate) mod clone_group_offset;
pub(crate) mod consumer_calls;
pub(crate) mod consumer_offset;
pub(crate) mod controller_mode;
pub(crate) mod end_transaction;
pub(crate) mod group_settings;
pub(crate) mod message_query;
pub(crate) mod notification;
pub(crate) mod pop;
pub(crate) mod producer_connection;
pub(crate) mod pull;
pub(crate) mod queue_offset;
pub(crate) mod rebalance_lock;
pub(crate) mod reply;
pub(crate) mod routing;
pub(crate) mod runtime_fields;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod send_reply;
pub(crate) mod subscription_group_admin;
pub(crate) mod topic_admin;

use std::rc::Rc;

use protocol::request_code as code;
use protocol::response_code as rc;
use protocol::RemotingCommand;
use remoting::ConnectionContext;

pub use reply::{error, header_error, ok};

use crate::processor::reply::unsupported;
use crate::processor::routing::{runs_on, RunsOn};
use crate::shard::mesh::MeshError;
use crate::shard::Shard;
use crate::state::clients::ConnRef;

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
    if req.code == code::HEART_BEAT {
        // Remember the connection so the control shard can reach its client (NOTIFY_CONSUMER_IDS_CHANGED).
        shard
            .connections
            .borrow_mut()
            .entry(ctx.id)
            .or_insert_with(|| ctx.sink.clone());
    }
    let target = match runs_on(req.code) {
        RunsOn::Receiver => shard.id,
        RunsOn::QueueOwner => match (
            req.ext("topic"),
            req.ext("queueId")
                .and_then(|q| q.trim().parse::<i32>().ok()),
        ) {
            (Some(topic), Some(queue_id)) => shard.owner_of(topic, queue_id),
            // Let the processor here report what is missing.
            _ => shard.id,
        },
        // The half message's offset names its shard (a producer answers a check-back on whichever
        // shard-broker's connection asked, which need not be the half's).
        RunsOn::HalfQueueOwner => req
            .ext("commitLogOffset")
            .and_then(|o| o.trim().parse::<i64>().ok())
            .map(|o| usize::from(storage::shard_of(o)))
            .filter(|s| *s < shard.shards)
            .unwrap_or_else(|| crate::feature::transaction::half_shard(&shard)),
        RunsOn::Control => crate::shard::requests::CONTROL_SHARD,
    };
    if target == shard.id {
        return Some(process(&shard, req, conn).await);
    }
    Some(
        process_on(&shard, target, req, conn)
            .await
            .unwrap_or_else(|e| error(rc::SYSTEM_ERROR, e.to_string())),
    )
}

/// Runs a request on shard `target` (over the mesh unless it is this one).
pub async fn process_on(
    shard: &Shard,
    target: usize,
    req: RemotingCommand,
    conn: ConnRef,
) -> Result<RemotingCommand, MeshError> {
    shard
        .on(target)
        .run(move |s| async move { process(&s, req, conn).await })
        .await
}

/// Runs a request on the shard `routing` chose for it.
pub async fn process(shard: &Rc<Shard>, req: RemotingCommand, conn: ConnRef) -> RemotingCommand {
    match req.code {
        code::SEND_MESSAGE | code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => {
            send::handle(shard, &req, conn.peer).await
        }
        code::CONSUMER_SEND_MSG_BACK => send_back::handle(shard, &req).await,
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => pull::handle(shard, &req).await,
        code::SEND_REPLY_MESSAGE | code::SEND_REPLY_MESSAGE_V2 => {
            send_reply::handle(shard, &req, conn.peer).await
        }
        code::POP_MESSAGE => pop::handle(shard, &req).await,
        code::PEEK_MESSAGE => pop::peek(shard, &req).await,
        code::ACK_MESSAGE => ack::ack(shard, &req).await,
        code::BATCH_ACK_MESSAGE => ack::batch_ack(shard, &req).await,
        code::CHANGE_MESSAGE_INVISIBLETIME => change_invisible::handle(shard, &req).await,
        code::NOTIFICATION => notification::notification(shard, &req).await,
        code::POLLING_INFO => notification::polling_info(shard, &req).await,
        code::QUERY_CONSUMER_OFFSET => consumer_offset::query(shard, &req),
        code::UPDATE_CONSUMER_OFFSET => consumer_offset::update(shard, &req),
        code::GET_MAX_OFFSET => queue_offset::max_offset(shard, &req),
        code::GET_MIN_OFFSET => queue_offset::min_offset(shard, &req),
        code::GET_EARLIEST_MSG_STORETIME => queue_offset::earliest_store_time(shard, &req).await,
        code::SEARCH_OFFSET_BY_TIMESTAMP => queue_offset::search_by_time(shard, &req).await,
        code::END_TRANSACTION => end_transaction::handle(shard, &req).await,
        code::HEART_BEAT => client_manage::heartbeat(shard, &req, conn).await,
        code::UNREGISTER_CLIENT => client_manage::unregister(shard, &req).await,
        code::CHECK_CLIENT_CONFIG => check_client_config::handle(shard, &req),
        code::GET_CONSUMER_LIST_BY_GROUP => client_manage::consumer_list(shard, &req),
        code::UPDATE_AND_CREATE_TOPIC => topic_admin::update_and_create(shard, &req).await,
        code::DELETE_TOPIC_IN_BROKER => topic_admin::delete(shard, &req).await,
        code::GET_ALL_TOPIC_CONFIG => topic_admin::all_topic_config(shard),
        code::GET_BROKER_RUNTIME_INFO => broker_admin::runtime_info(shard, conn.shard).await,
        code::GET_ALL_CONSUMER_OFFSET => broker_admin::all_consumer_offset(shard, conn.shard).await,
        code::GET_ALL_DELAY_OFFSET => broker_admin::all_delay_offset(shard).await,
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => broker_admin::all_subscription_groups(shard),
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            subscription_group_admin::update_and_create(shard, &req).await
        }
        code::GET_SUBSCRIPTIONGROUP_CONFIG => subscription_group_admin::get(shard, &req),
        code::LOCK_BATCH_MQ => rebalance_lock::lock(shard, &req),
        code::UNLOCK_BATCH_MQ => rebalance_lock::unlock(shard, &req),
        code::GET_TOPIC_STATS_INFO => admin_stats::topic_stats(shard, &req).await,
        code::GET_CONSUME_STATS => admin_stats::consume_stats(shard, &req).await,
        code::INVOKE_BROKER_TO_RESET_OFFSET => {
            admin_stats::reset_offset(shard, &req, conn.shard).await
        }
        code::GET_CONSUMER_CONNECTION_LIST => admin_stats::consumer_connection_list(shard, &req),
        code::GET_CONSUMER_RUNNING_INFO => consumer_calls::running_info(shard, &req).await,
        code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS => {
            consumer_calls::consumer_status(shard, &req).await
        }
        code::CONSUME_MESSAGE_DIRECTLY => {
            consumer_calls::consume_directly(shard, &req, conn.shard).await
        }
        code::CLONE_GROUP_OFFSET => clone_group_offset::handle(shard, &req, conn.shard).await,
        code::GET_BROKER_CONFIG => broker_config::get(shard),
        code::NOTIFY_BROKER_ROLE_CHANGED => controller_mode::role_changed(shard, &req),
        code::EXCHANGE_BROKER_HA_INFO => controller_mode::exchange_ha_info(shard),
        code::UPDATE_BROKER_CONFIG => broker_config::update(shard, &req).await,
        code::DELETE_SUBSCRIPTIONGROUP => subscription_group_admin::delete(shard, &req).await,
        code::GET_PRODUCER_CONNECTION_LIST => producer_connection::handle(shard, &req),
        code::GET_BROKER_CONSUME_STATS => broker_consume_stats::handle(shard, &req).await,
        code::VIEW_BROKER_STATS_DATA => broker_stats_data::view(shard, &req).await,
        code::QUERY_TOPIC_CONSUME_BY_WHO => broker_stats_data::consume_by_who(shard, &req).await,
        code::VIEW_MESSAGE_BY_ID => message_query::view_by_id(shard, &req).await,
        code::QUERY_MESSAGE => message_query::query_by_key(shard, &req).await,
        other => {
            tracing::debug!("request code {other} not supported (from {})", conn.peer);
            unsupported(other)
        }
    }
}

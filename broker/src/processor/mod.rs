//! Request processors, one request-code family per file (POP's are in `feature::pop`). `dispatch`
//! takes every request a connection receives, finds its row in the request table (`commands`), checks
//! plain ACL and ACL 2.0, and runs its handler where the row says (here, on the queue's owner, or on the control shard).

// Early returns carry the error response itself; it is built once per request, so its size is moot.
#![allow(clippy::result_large_err)]

pub(crate) mod admin_stats;
pub(crate) mod auth_admin;
pub(crate) mod broker_admin;
pub(crate) mod broker_config;
pub(crate) mod broker_consume_stats;
pub(crate) mod broker_stats_data;
pub(crate) mod check_client_config;
pub(crate) mod client_manage;
pub(crate) mod clone_group_offset;
pub(crate) mod commands;
pub(crate) mod consume_queue_query;
pub(crate) mod consumer_calls;
pub(crate) mod consumer_offset;
pub(crate) mod controller_mode;
pub(crate) mod end_transaction;
pub(crate) mod group_list_admin;
pub(crate) mod ha_status;
pub(crate) mod message_query;
pub(crate) mod pop_admin;
pub(crate) mod producer_connection;
pub(crate) mod pull;
pub(crate) mod queue_offset;
pub(crate) mod recall_message;
pub(crate) mod rebalance_lock;
pub(crate) mod runtime_fields;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod send_reply;
pub(crate) mod store_maintenance;
pub(crate) mod subscription_group_admin;
pub(crate) mod topic_admin;

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;
use remoting::ConnectionContext;

use crate::common::reply::{error, unsupported};
use crate::feature::acl::AclRule;
use crate::processor::commands::{route, RunsOn};
use crate::shard::target::CONTROL_SHARD;
use crate::shard::Shard;
use crate::state::clients::ConnRef;

/// Entry point for every request a connection of this shard receives.
pub async fn dispatch(
    shard: Rc<Shard>,
    req: RemotingCommand,
    ctx: ConnectionContext,
) -> Option<RemotingCommand> {
    let route = route(req.code);
    // Codes this broker does not serve are still checked (for a valid signature) before the answer.
    let rule = route.map_or(AclRule::Free, |r| r.acl);
    if let Some(denied) = crate::feature::acl::check(&shard.cfg, &req, ctx.peer, rule) {
        return Some(denied);
    }
    if let Some(denied) = crate::feature::acl2::check(&shard, &req, ctx.peer) {
        return Some(denied);
    }
    let Some(route) = route else {
        tracing::debug!(
            "request code {} not supported (from {})",
            req.code,
            ctx.peer
        );
        return Some(unsupported(req.code));
    };
    let conn = ConnRef {
        shard: shard.id,
        conn_id: ctx.id,
        peer: ctx.peer,
    };
    let target = match route.runs_on {
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
        RunsOn::Control => CONTROL_SHARD,
    };
    if target == shard.id {
        return Some(route.command.execute(&shard, req, conn).await);
    }
    Some(
        shard
            .on(target)
            .process(route.command, req, conn)
            .await
            .unwrap_or_else(|e| error(rc::SYSTEM_ERROR, e.to_string())),
    )
}

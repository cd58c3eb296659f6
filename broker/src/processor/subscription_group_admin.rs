//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, on shard 0): creates or replaces a consumer group's
//! settings (`mqadmin updateSubGroup`) from a `SubscriptionGroupConfig` JSON body, persists them and
//! tells every shard (pulls and send-backs read them there). DELETE_SUBSCRIPTIONGROUP (207,
//! `mqadmin deleteSubGroup`) removes them, and with `removeOffset` the group's consumer offsets.
//! GET_SUBSCRIPTIONGROUP_CONFIG (352, RocketMQ 5, on any shard: each holds a copy) answers one group's
//! settings; the gRPC proxy reads `consumeMessageOrderly` and `retryMaxTimes` from it.

use std::rc::Rc;

use protocol::header::{CommandHeader, DeleteSubscriptionGroupRequestHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::subscription_groups::SubscriptionGroupConfig;

pub async fn update_and_create(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    if shard.control.is_none() {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    }
    let config: SubscriptionGroupConfig = match protocol::body::from_json(&req.body) {
        Ok(c) => c,
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("bad SubscriptionGroupConfig body: {e}"),
            )
        }
    };
    if config.group_name.trim().is_empty() {
        return error(rc::SYSTEM_ERROR, "groupName is empty");
    }
    tracing::info!(
        "update subscription group {}: {config:?}",
        config.group_name
    );
    crate::role::control::change_groups(shard, vec![config], Vec::new()).await;
    ok()
}

pub fn get(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let group = req.ext("group").unwrap_or_default().trim();
    if group.is_empty() {
        return error(rc::SYSTEM_ERROR, "group is empty");
    }
    match shard.groups.borrow().get(group) {
        Some(config) => ok().with_body(protocol::body::to_json(config)),
        // Apache's remark.
        None => error(rc::SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker"),
    }
}

pub async fn delete(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match DeleteSubscriptionGroupRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if shard.control.is_none() {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    }
    let group = header.group_name.trim().to_owned();
    if group.is_empty() {
        return error(rc::SYSTEM_ERROR, "groupName is empty");
    }
    let existed = shard.groups.borrow().get(&group).is_some();
    tracing::info!(
        "delete subscription group {group} (existed: {existed}, removeOffset: {:?})",
        header.remove_offset
    );
    crate::role::control::change_groups(shard, Vec::new(), vec![group.clone()]).await;
    if header.remove_offset.unwrap_or(false) {
        join_all(
            shard
                .every_shard()
                .map(|s| s.remove_group_offsets(group.clone())),
        )
        .await;
    }
    ok()
}

//! HEART_BEAT, UNREGISTER_CLIENT and GET_CONSUMER_LIST_BY_GROUP, on shard 0 (the client registry).
//! A heartbeat registers producer and consumer groups, creates missing subscription groups (when the
//! broker may) and the `%RETRY%group` topic, and tells the group's clients when membership or
//! subscriptions change. Consumers of a group that does not exist and may not be created are not
//! registered, as in RocketMQ 5.

use std::rc::Rc;
use std::time::Instant;

use protocol::body::{perm, GetConsumerListByGroupResponseBody, HeartbeatData, TopicConfig};
use protocol::header::{
    CommandHeader, GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::role::control;
use crate::shard::Shard;
use crate::state::clients::ConnRef;
use crate::state::topics::retry_topic;

pub async fn heartbeat(shard: &Rc<Shard>, req: &RemotingCommand, conn: ConnRef) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "heartbeat reached a shard without the control role",
        );
    };
    let data: HeartbeatData = match protocol::body::from_json::<HeartbeatData>(&req.body) {
        Ok(d) => d,
        Err(e) => {
            let shown: String = String::from_utf8_lossy(&req.body)
                .chars()
                .take(1024)
                .collect();
            tracing::warn!("bad heartbeat body from {}: {e}: {shown}", conn.peer);
            return error(rc::SYSTEM_ERROR, format!("bad heartbeat body: {e}"));
        }
    };
    let now = Instant::now();
    for consumer in &data.consumer_data_set {
        let group = &consumer.group_name;
        if group.is_empty() {
            continue;
        }
        // As RocketMQ 5: a consumer of a group the broker neither knows nor may create is not
        // registered (the heartbeat still succeeds); its pulls answer SUBSCRIPTION_GROUP_NOT_EXIST.
        let Some(settings) = control::ensure_group(shard, group).await else {
            tracing::debug!(
                "heartbeat of {}: subscription group {group} does not exist; consumer not registered",
                data.client_id
            );
            continue;
        };
        let retry_queues = settings.retry_queue_nums.max(1);
        let retry = retry_topic(group);
        if crate::state::topics::validate_topic_name(&retry).is_ok()
            && shard.topics.borrow().get(&retry).is_none()
        {
            let tc = TopicConfig {
                perm: perm::READ | perm::WRITE,
                ..TopicConfig::new(retry, retry_queues)
            };
            control::create_topic(shard, tc).await;
        }
        let change = ctl.clients.borrow_mut().register_consumer(
            consumer,
            &data.client_id,
            conn,
            now,
            data.without_sub,
        );
        ctl.clients.borrow_mut().set_consumer_client_info(
            group,
            &data.client_id,
            req.language.name(),
            req.version,
        );
        if change.subscriptions || change.model {
            control::broadcast_subscriptions(shard, group).await;
        }
        if change.members || change.subscriptions {
            tracing::info!(
                "consumer {} joined or updated group {group}",
                data.client_id
            );
            control::notify_group(shard, group).await;
        }
    }
    for producer in &data.producer_data_set {
        ctl.clients.borrow_mut().register_producer(
            &producer.group_name,
            &data.client_id,
            conn,
            now,
        );
        ctl.clients.borrow_mut().set_producer_client_info(
            &producer.group_name,
            &data.client_id,
            req.language.name(),
            req.version,
        );
    }
    ok()
}

pub async fn unregister(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "unregistration reached a shard without the control role",
        );
    };
    let header = match UnregisterClientRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Some(group) = header.producer_group.as_deref().filter(|g| !g.is_empty()) {
        ctl.clients
            .borrow_mut()
            .unregister_producer(group, &header.client_id);
    }
    if let Some(group) = header.consumer_group.as_deref().filter(|g| !g.is_empty()) {
        let removed = ctl
            .clients
            .borrow_mut()
            .unregister_consumer(group, &header.client_id);
        if removed {
            control::groups_changed(shard, vec![group.to_owned()]).await;
        }
    }
    ok()
}

pub fn consumer_list(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let header = match GetConsumerListByGroupRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    match ctl.clients.borrow().consumer_ids(&header.consumer_group) {
        Some(ids) if !ids.is_empty() => {
            let body = GetConsumerListByGroupResponseBody {
                consumer_id_list: ids,
            };
            ok().with_body(protocol::body::to_json(&body))
        }
        _ => error(
            rc::SYSTEM_ERROR,
            format!("no consumer for this group, {}", header.consumer_group),
        ),
    }
}

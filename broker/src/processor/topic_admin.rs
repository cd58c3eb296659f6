//! Topics: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER (shard 0) and GET_ALL_TOPIC_CONFIG (any
//! shard's copy). Creation on first use is in `common::topic_create`.

use std::rc::Rc;

use protocol::body::TopicConfig;
use protocol::header::{CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::role::control;
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::topics::validate_topic_name;

pub fn all_topic_config(shard: &Shard) -> RemotingCommand {
    let body = shard.topics.borrow().to_json();
    ok().with_body(body)
}

pub async fn update_and_create(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match CreateTopicRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Err(why) = validate_topic_name(&h.topic) {
        return error(rc::SYSTEM_ERROR, why);
    }
    if h.topic == shard.cfg.broker_cluster_name {
        return error(
            rc::SYSTEM_ERROR,
            format!(
                "the topic[{}] is conflict with system reserved words",
                h.topic
            ),
        );
    }
    if h.read_queue_nums < 0
        || h.write_queue_nums < 0
        || h.read_queue_nums.max(h.write_queue_nums) > 1024
    {
        return error(
            rc::SYSTEM_ERROR,
            format!(
                "queue counts {}/{} must be within 0..=1024",
                h.read_queue_nums, h.write_queue_nums
            ),
        );
    }
    let tc = TopicConfig {
        topic_name: h.topic.clone(),
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: h.topic_filter_type.clone(),
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order.unwrap_or(false),
        ..TopicConfig::default()
    };
    tracing::info!(
        "topic {} created/updated: {} read / {} write queues, perm {}",
        h.topic,
        h.read_queue_nums,
        h.write_queue_nums,
        h.perm
    );
    control::change_topic(shard, Some(tc), None).await;
    ok()
}

pub async fn delete(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match DeleteTopicRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Err(why) = validate_topic_name(&h.topic) {
        return error(rc::SYSTEM_ERROR, why);
    }
    tracing::info!("deleting topic {}", h.topic);
    control::change_topic(shard, None, Some(h.topic.clone())).await;
    let dropped = join_all(shard.every_shard().map(|s| s.delete_topic(h.topic.clone()))).await;
    for e in dropped.into_iter().filter_map(Result::err) {
        tracing::warn!("topic {} not dropped on every shard: {e}", h.topic);
    }
    ok()
}

//! Topics: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER (shard 0), GET_ALL_TOPIC_CONFIG (any
//! shard's copy), and auto-creation of a topic by its first send (from the default topic TBW102).

use std::rc::Rc;

use protocol::body::{perm, TopicConfig};
use protocol::header::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader, SendMessageRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::{error, header_error, ok};
use crate::role::control;
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::topics::{self, validate_topic_name};

/// What a send needs to know of its topic.
#[derive(Debug, Clone, Copy)]
pub struct SendTopic {
    pub perm: i32,
    pub write_queue_nums: i32,
    pub read_queue_nums: i32,
}

impl From<&TopicConfig> for SendTopic {
    fn from(tc: &TopicConfig) -> Self {
        SendTopic {
            perm: tc.perm,
            write_queue_nums: tc.write_queue_nums,
            read_queue_nums: tc.read_queue_nums,
        }
    }
}

/// The send's topic, created first when it is missing and may be auto-created (as RocketMQ's
/// `createTopicInSendMessageMethod`: from a default topic with the inherit bit, with the smaller of
/// the client's and the default topic's queue count).
pub async fn find_or_create_for_send(
    shard: &Rc<Shard>,
    header: &SendMessageRequestHeader,
) -> Result<SendTopic, RemotingCommand> {
    let template = {
        let table = shard.topics.borrow();
        if let Some(tc) = table.get(&header.topic) {
            return Ok(SendTopic::from(tc));
        }
        table.get(&header.default_topic).map(SendTopic::from)
    };
    let new_config = if header.topic.starts_with(topics::RETRY_GROUP_TOPIC_PREFIX) {
        Some(TopicConfig {
            perm: perm::READ | perm::WRITE,
            ..TopicConfig::new(header.topic.clone(), 1)
        })
    } else {
        match template {
            Some(t) if shard.cfg.auto_create_topic_enable && t.perm & perm::INHERIT != 0 => {
                let mut queues = t.write_queue_nums;
                if header.default_topic_queue_nums > 0 {
                    queues = queues.min(header.default_topic_queue_nums);
                }
                Some(TopicConfig {
                    perm: t.perm & !perm::INHERIT,
                    ..TopicConfig::new(header.topic.clone(), queues.max(1))
                })
            }
            _ => None,
        }
    };
    let Some(new_config) = new_config else {
        return Err(error(
            rc::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", header.topic),
        ));
    };
    let created = create_through_control(shard, new_config).await?;
    Ok(SendTopic::from(&created))
}

/// Creates `tc` on shard 0 (which persists it and broadcasts it) and keeps the created config in this
/// shard's copy at once, so the caller does not wait for the broadcast.
pub async fn create_through_control(
    shard: &Rc<Shard>,
    tc: TopicConfig,
) -> Result<TopicConfig, RemotingCommand> {
    let topic = tc.topic_name.clone();
    let created = match shard.control_shard().create_topic(tc).await {
        Ok(created) => created,
        Err(e) => {
            return Err(error(
                rc::SYSTEM_ERROR,
                format!("cannot create topic {topic}: {e}"),
            ))
        }
    };
    shard
        .topics
        .borrow_mut()
        .topics
        .entry(created.topic_name.clone())
        .or_insert_with(|| created.clone());
    Ok(created)
}

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

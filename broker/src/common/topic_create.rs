//! Creating a topic on its first use: by a send (auto-creation from the default topic TBW102, as
//! RocketMQ's `createTopicInSendMessageMethod`), and the retry and dead-letter topics of a group. The
//! control shard creates it; the caller's shard keeps it at once.

use std::rc::Rc;

use protocol::body::{perm, TopicConfig};
use protocol::header::SendHeader;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::error;
use crate::shard::Shard;
use crate::state::topics;

/// What a send needs to know of its topic.
#[derive(Debug, Clone, Copy)]
pub struct SendTopic {
    pub perm: i32,
    pub write_queue_nums: i32,
    pub read_queue_nums: i32,
    /// `cleanup.policy=COMPACTION`: every message needs a key.
    pub compacted: bool,
}

impl From<&TopicConfig> for SendTopic {
    fn from(tc: &TopicConfig) -> Self {
        SendTopic {
            perm: tc.perm,
            write_queue_nums: tc.write_queue_nums,
            read_queue_nums: tc.read_queue_nums,
            compacted: tc.is_compacted(),
        }
    }
}

/// The send's topic, created first when it is missing and may be auto-created (as RocketMQ's
/// `createTopicInSendMessageMethod`: from a default topic with the inherit bit, with the smaller of
/// the client's and the default topic's queue count).
pub async fn find_or_create_for_send(
    shard: &Rc<Shard>,
    header: &SendHeader<'_>,
) -> Result<SendTopic, RemotingCommand> {
    let template = {
        let table = shard.topics.borrow();
        if let Some(tc) = table.get(header.topic) {
            return Ok(SendTopic::from(tc));
        }
        table.get(header.default_topic).map(SendTopic::from)
    };
    let new_config = if header.topic.starts_with(topics::RETRY_GROUP_TOPIC_PREFIX) {
        Some(TopicConfig {
            perm: perm::READ | perm::WRITE,
            ..TopicConfig::new(header.topic.to_owned(), 1)
        })
    } else {
        match template {
            Some(t)
                if crate::config::live::auto_create_topic_enable(&shard.cfg)
                    && t.perm & perm::INHERIT != 0 =>
            {
                let mut queues = t.write_queue_nums;
                if header.default_topic_queue_nums > 0 {
                    queues = queues.min(header.default_topic_queue_nums);
                }
                Some(TopicConfig {
                    perm: t.perm & !perm::INHERIT,
                    ..TopicConfig::new(header.topic.to_owned(), queues.max(1))
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

/// Creates a retry topic (one queue, read/write) or dead-letter topic (one queue, write only) if it is
/// missing.
pub async fn ensure_retry_topic(
    shard: &Rc<Shard>,
    topic: &str,
    dlq: bool,
) -> Result<(), RemotingCommand> {
    if shard.topics.borrow().get(topic).is_some() {
        return Ok(());
    }
    let tc = TopicConfig {
        perm: if dlq {
            perm::WRITE
        } else {
            perm::READ | perm::WRITE
        },
        ..TopicConfig::new(topic, 1)
    };
    create_through_control(shard, tc).await.map(|_| ())
}

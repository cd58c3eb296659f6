//! Topics: UPDATE_AND_CREATE_TOPIC, UPDATE_AND_CREATE_TOPIC_LIST and DELETE_TOPIC_IN_BROKER (shard 0),
//! GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG and GET_SYSTEM_TOPIC_LIST_FROM_BROKER (any shard's copy). Attributes follow RocketMQ 5.x's rules
//! (`protocol::topic_attributes`). Creation on first use is in `common::topic_create`.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use protocol::body::{CreateTopicListRequestBody, TopicConfig, TopicList};
use protocol::system_topics::{is_system_topic, SYSTEM_TOPICS};
use protocol::header::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader, GetTopicConfigRequestHeader,
};
use protocol::response_code as rc;
use protocol::topic_attributes::{self, TopicMessageType};
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::role::control;
use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::topics::{reply_topic, validate_topic_name};

pub fn all_topic_config(shard: &Shard) -> RemotingCommand {
    let body = shard.topics.borrow().to_json();
    ok().with_body(body)
}

/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER: Apache's system topics, with the ones Apache's broker adds at
/// start (its cluster's and broker's names, one per shard-broker here, and the reply topic) and every
/// system topic this broker holds. Apache's `exportMetadata` leaves these out.
pub fn system_topic_list(shard: &Shard) -> RemotingCommand {
    let cfg = &shard.cfg;
    let mut list: BTreeSet<String> = SYSTEM_TOPICS.iter().map(|t| (*t).to_owned()).collect();
    list.insert(cfg.broker_cluster_name.clone());
    list.insert(cfg.broker_name.clone());
    list.insert(reply_topic(&cfg.broker_cluster_name));
    if cfg.shards_are_brokers(shard.shards) {
        list.extend(
            (0..shard.shards)
                .filter_map(|i| cfg.shard_broker(i, shard.shards))
                .map(|b| b.broker_name),
        );
    }
    list.extend(
        shard
            .topics
            .borrow()
            .names()
            .filter(|t| is_system_topic(t))
            .map(str::to_owned),
    );
    let body = TopicList {
        topic_list: list,
        broker_addr: None,
    };
    ok().with_body(protocol::body::to_json(&body))
}

/// GET_TOPIC_CONFIG: the topic's config as Apache writes it (its proxy and dashboard read the
/// attributes from here). No static-topic mapping exists here, so `lo` adds nothing.
pub fn topic_config(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match GetTopicConfigRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    match shard.topics.borrow().get(&h.topic) {
        Some(tc) => ok().with_body(protocol::body::to_json(tc)),
        None => error(
            rc::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", h.topic),
        ),
    }
}

/// A topic asked for, before its attributes are applied: `signed` holds `+key=value` / `-key`.
struct TopicChange {
    config: TopicConfig,
    signed: BTreeMap<String, String>,
}

pub async fn update_and_create(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match CreateTopicRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let signed = match topic_attributes::parse_modification(h.attributes.as_deref().unwrap_or("")) {
        Ok(m) => m,
        Err(why) => return error(rc::SYSTEM_ERROR, why),
    };
    let change = TopicChange {
        config: TopicConfig {
            topic_name: h.topic.clone(),
            read_queue_nums: h.read_queue_nums,
            write_queue_nums: h.write_queue_nums,
            perm: h.perm,
            topic_filter_type: h.topic_filter_type.clone(),
            topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
            order: h.order.unwrap_or(false),
            ..TopicConfig::default()
        },
        signed,
    };
    apply(shard, vec![change]).await
}

/// UPDATE_AND_CREATE_TOPIC_LIST: several topics in one request (Apache's `updateTopicList`); all are
/// checked before any is applied.
pub async fn update_and_create_list(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let body: CreateTopicListRequestBody = match protocol::body::from_json(&req.body) {
        Ok(b) => b,
        Err(e) => return error(rc::SYSTEM_ERROR, format!("bad topic list body: {e}")),
    };
    let changes = body
        .topic_config_list
        .into_iter()
        .map(|mut config| TopicChange {
            signed: std::mem::take(&mut config.attributes),
            config,
        })
        .collect();
    apply(shard, changes).await
}

/// Checks every change, works out each topic's attributes from the ones it has, then stores them.
async fn apply(shard: &Rc<Shard>, changes: Vec<TopicChange>) -> RemotingCommand {
    let mut ready = Vec::with_capacity(changes.len());
    for change in changes {
        match checked(shard, change) {
            Ok(Some(tc)) => ready.push(tc),
            Ok(None) => {}
            Err(reply) => return reply,
        }
    }
    for tc in ready {
        tracing::info!(
            "topic {} created/updated: {} read / {} write queues, perm {}, attributes {:?}",
            tc.topic_name,
            tc.read_queue_nums,
            tc.write_queue_nums,
            tc.perm,
            tc.attributes
        );
        control::change_topic(shard, Some(tc), None).await;
    }
    ok()
}

/// The config to store for one change, `None` when it changes nothing, or the error answer.
fn checked(shard: &Shard, change: TopicChange) -> Result<Option<TopicConfig>, RemotingCommand> {
    let TopicChange {
        mut config,
        mut signed,
    } = change;
    let topic = config.topic_name.clone();
    validate_topic_name(&topic).map_err(|why| error(rc::SYSTEM_ERROR, why))?;
    if topic == shard.cfg.broker_cluster_name {
        return Err(error(
            rc::SYSTEM_ERROR,
            format!("the topic[{topic}] is conflict with system reserved words"),
        ));
    }
    let (r, w) = (config.read_queue_nums, config.write_queue_nums);
    if r < 0 || w < 0 || r.max(w) > 1024 {
        return Err(error(
            rc::SYSTEM_ERROR,
            format!("queue counts {r}/{w} must be within 0..=1024"),
        ));
    }
    let wanted_type = signed
        .get(&format!("+{}", topic_attributes::MESSAGE_TYPE))
        .map(String::as_str);
    if !shard.cfg.enable_mixed_message_type && wanted_type == Some(TopicMessageType::Mixed.as_str())
    {
        return Err(error(
            rc::INVALID_PARAMETER,
            "MIXED message type is not supported.",
        ));
    }
    let current = shard.topics.borrow().get(&topic).cloned();
    if shard.cfg.shards_are_brokers(shard.shards) {
        // Every shard-broker of this process reaches the one topic table, and `updateTopic -c` sends
        // the same change to each: a deletion a sibling already applied is no error here.
        let absent = |k: &String| {
            k.strip_prefix('-').is_some_and(|real| {
                current
                    .as_ref()
                    .is_some_and(|c| !c.attributes.contains_key(real))
            })
        };
        signed.retain(|k, _| !absent(k));
    }
    let attributes = topic_attributes::alter(
        current.is_none(),
        current.as_ref().map_or(&BTreeMap::new(), |c| &c.attributes),
        &signed,
    )
    .map_err(|why| error(rc::SYSTEM_ERROR, why))?;
    // Every consume queue here is a simple one: refused rather than stored and not honoured.
    if attributes
        .get(topic_attributes::QUEUE_TYPE)
        .map(String::as_str)
        == Some("BatchCQ")
    {
        return Err(error(
            rc::INVALID_PARAMETER,
            format!(
                "queue.type=BatchCQ is not supported by this broker (topic {topic}): create the \
                 topic without it (SimpleCQ): batches are still accepted, each message stored and \
                 indexed on its own"
            ),
        ));
    }
    config.attributes = attributes;
    if current.as_ref() == Some(&config) {
        return Ok(None);
    }
    Ok(Some(config))
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

//! Admin statistics Java's mqadmin asks for: GET_TOPIC_STATS_INFO (topicStatus), GET_CONSUME_STATS
//! and GET_CONSUMER_CONNECTION_LIST (consumerProgress) and INVOKE_BROKER_TO_RESET_OFFSET
//! (resetOffsetByTime). A topic's queues live on several shards, so each request asks every owning
//! shard for its queues' figures (`on_owners`).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::rc::Rc;

use protocol::body::{
    offset_table_key, split_offset_table_key, ConsumeStats, ConsumerConnection, MessageQueue,
    OffsetWrapper, ResetOffsetBody, ResetOffsetBodyForC, TopicConfig, TopicOffset, TopicStatsTable,
};
use protocol::header::{
    CommandHeader, GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader, ResetOffsetRequestHeader,
};
use protocol::language::LanguageCode;
use protocol::response_code as rc;
use protocol::{request_code, RemotingCommand};

use crate::common::reply::{error, header_error, ok};
use crate::config::BrokerRole;
use crate::feature::broker_stats;
use crate::shard::mesh::{join_all, MeshError};
use crate::shard::target::ShardRef;
use crate::shard::Shard;
use crate::state::clients::ConsumerClient;

/// Where a reset moves one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTarget {
    /// This exact offset (must lie within the queue).
    Offset(i64),
    /// The first message stored at or after this time; a negative time means the queue's end.
    Time(i64),
}

/// On a shard: the topics it holds committed offsets of `group` for.
pub(crate) fn group_topics(shard: &Shard, group: &str) -> Vec<String> {
    shard
        .offsets
        .borrow()
        .entries()
        .into_iter()
        .filter_map(|(key, _, _)| match split_offset_table_key(&key) {
            Some((topic, g)) if g == group => Some(topic.to_owned()),
            _ => None,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `group_topics` of every shard of the broker a client reached through shard `receiver`, in shard
/// order.
pub(crate) async fn group_topics_everywhere(
    shard: &Shard,
    receiver: usize,
    group: &str,
) -> Vec<Result<Vec<String>, MeshError>> {
    join_all(
        shard
            .broker_shards(receiver)
            .map(|s| s.group_topics(group.to_owned())),
    )
    .await
}

pub(crate) async fn topic_offsets(
    shard: &Shard,
    topic: &str,
    queues: &[i32],
) -> Result<Vec<(i32, TopicOffset)>, String> {
    let mut out = Vec::with_capacity(queues.len());
    for &q in queues {
        let min = shard.store.min_offset(topic, q).max(0);
        let max = shard.store.readable_max_offset(topic, q).max(0);
        let last = if max > 0 {
            store_time(shard, topic, q, max - 1).await?
        } else {
            0
        };
        out.push((
            q,
            TopicOffset {
                last_update_timestamp: last,
                max_offset: max,
                min_offset: min,
            },
        ));
    }
    Ok(out)
}

pub(crate) async fn group_offsets(
    shard: &Shard,
    group: &str,
    topic: &str,
    queues: &[i32],
) -> Result<Vec<(i32, OffsetWrapper)>, String> {
    let mut out = Vec::with_capacity(queues.len());
    for &q in queues {
        let broker_offset = shard.store.readable_max_offset(topic, q).max(0);
        // As Java: a queue without a committed offset counts from 0.
        let consumer_offset = shard
            .offsets
            .borrow()
            .query(group, topic, q)
            .unwrap_or(0)
            .max(0);
        let last_timestamp = if consumer_offset > 0 {
            store_time(shard, topic, q, consumer_offset - 1).await?
        } else {
            0
        };
        out.push((
            q,
            OffsetWrapper {
                broker_offset,
                consumer_offset,
                last_timestamp,
                // Pull positions are not tracked: Java reports max(consumer, pull) = consumer then.
                pull_offset: consumer_offset,
            },
        ));
    }
    Ok(out)
}

/// Store time of the message at a queue offset; 0 when it is gone or past the end.
async fn store_time(shard: &Shard, topic: &str, queue: i32, offset: i64) -> Result<i64, String> {
    if offset < shard.store.min_offset(topic, queue) {
        return Ok(0);
    }
    shard
        .store
        .store_time_at(topic, queue, offset)
        .await
        .map(|t| t.unwrap_or(0).max(0))
        .map_err(|e| format!("reading {topic}/{queue} failed: {e}"))
}

pub(crate) async fn reset_queues(
    shard: &Shard,
    group: &str,
    topic: &str,
    targets: &[(i32, ResetTarget)],
    force: bool,
) -> Result<Vec<(i32, i64)>, String> {
    // Work out every target first, so a bad one changes nothing.
    let mut planned = Vec::with_capacity(targets.len());
    for &(q, target) in targets {
        let (min, max) = (
            shard.store.min_offset(topic, q),
            shard.store.max_offset(topic, q),
        );
        let offset = match target {
            ResetTarget::Offset(o) if o < min || o > max => {
                return Err(format!(
                    "Target offset {o} not in consume queue range [{min}-{max}]"
                ))
            }
            ResetTarget::Offset(o) => o,
            ResetTarget::Time(ts) if ts < 0 => max,
            ResetTarget::Time(ts) => shard
                .store
                .offset_by_time(topic, q, ts)
                .await
                .map_err(|e| format!("searching {topic}/{q} by time failed: {e}"))?,
        }
        .max(0);
        planned.push((q, offset));
    }
    let mut offsets = shard.offsets.borrow_mut();
    let mut out = Vec::with_capacity(planned.len());
    for (q, target) in planned {
        // Without force a reset only moves a group back (RocketMQ's Broker2Client.resetOffset).
        let new = match offsets.query(group, topic, q) {
            Some(current) if !force && target >= current => current,
            _ => target,
        };
        offsets.commit(group, topic, q, new);
        out.push((q, new));
    }
    Ok(out)
}

/// Sends `request(owner, queues)` to every shard owning some of `queues` of `topic`, with the queues
/// it owns; answers in owner order.
async fn on_owners<'a, T, Fut>(
    shard: &'a Shard,
    receiver: usize,
    topic: &str,
    queues: impl IntoIterator<Item = i32>,
    request: impl Fn(ShardRef<'a>, Vec<i32>) -> Fut,
) -> Result<Vec<T>, String>
where
    Fut: Future<Output = Result<T, MeshError>> + 'a,
{
    let mut by_owner: BTreeMap<usize, Vec<i32>> = BTreeMap::new();
    for q in queues {
        by_owner
            .entry(shard.queue_owner(receiver, topic, q))
            .or_default()
            .push(q);
    }
    let calls = by_owner
        .into_iter()
        .map(|(owner, qs)| request(shard.on(owner), qs));
    join_all(calls)
        .await
        .into_iter()
        .map(|answer| answer.map_err(|e| e.to_string()))
        .collect()
}

fn topic_config(shard: &Shard, topic: &str) -> Option<TopicConfig> {
    shard.topics.borrow().get(topic).cloned()
}

fn queue(shard: &Shard, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        topic: topic.to_owned(),
        broker_name: shard.broker.broker_name.clone(),
        queue_id,
    }
}

/// A required header field that is present but blank.
fn blank(field: &str) -> RemotingCommand {
    error(
        rc::SYSTEM_ERROR,
        format!("bad request header: header field {field} is empty"),
    )
}

/// GET_TOPIC_STATS_INFO: min/max offset and last store time of every queue of a topic, and its put
/// rate over the last minute.
pub async fn topic_stats(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match GetTopicStatsInfoRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let topic = header.topic.trim();
    if topic.is_empty() {
        return blank("topic");
    }
    let Some(tc) = topic_config(shard, topic) else {
        return error(rc::TOPIC_NOT_EXIST, format!("topic[{topic}] not exist"));
    };
    let queues = 0..tc.read_queue_nums.max(tc.write_queue_nums).max(0);
    let answers = match on_owners(shard, shard.id, topic, queues, |owner, qs| {
        owner.topic_offsets(topic.to_owned(), qs)
    })
    .await
    {
        Ok(a) => a,
        Err(e) => return error(rc::SYSTEM_ERROR, e),
    };
    let mut table = TopicStatsTable::default();
    for answer in answers {
        match answer {
            Ok(rows) => {
                for (q, offsets) in rows {
                    table.offset_table.insert(queue(shard, topic, q), offsets);
                }
            }
            Err(e) => return error(rc::SYSTEM_ERROR, e),
        }
    }
    table.topic_put_tps = broker_stats::topic_put_tps(shard, topic).await;
    ok().with_body(table.to_json())
}

/// The topics GET_CONSUME_STATS reports: the list, the topic, or every topic the group has offsets
/// for; without a list, topics the group's online clients do not subscribe to are left out (Java).
async fn consume_stats_topics(
    shard: &Rc<Shard>,
    group: &str,
    header: &GetConsumeStatsRequestHeader,
) -> Result<BTreeSet<String>, String> {
    let list: BTreeSet<String> = header
        .topic_list
        .as_deref()
        .unwrap_or("")
        .split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    if !list.is_empty() {
        return Ok(list);
    }
    let mut topics = BTreeSet::new();
    match header
        .topic
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        Some(t) => {
            topics.insert(t.to_owned());
        }
        None => {
            for answer in group_topics_everywhere(shard, shard.id, group).await {
                topics.extend(answer.map_err(|e| e.to_string())?);
            }
        }
    }
    if let Some(subscribed) =
        crate::feature::pull_filter::subscriptions(shard).subscribed_topics(group)
    {
        if !subscribed.is_empty() {
            topics.retain(|t| subscribed.contains(t));
        }
    }
    Ok(topics)
}

/// GET_CONSUME_STATS: per queue the broker's max offset and the group's committed offset, and the
/// group's pull rate over the last minute.
pub async fn consume_stats(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match GetConsumeStatsRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let group = header.consumer_group.trim();
    if group.is_empty() {
        return blank("consumerGroup");
    }
    let topics = match consume_stats_topics(shard, group, &header).await {
        Ok(t) => t,
        Err(e) => return error(rc::SYSTEM_ERROR, e),
    };
    let mut stats = ConsumeStats {
        consume_tps: broker_stats::group_consume_tps(shard, group, &topics).await,
        ..ConsumeStats::default()
    };
    for topic in &topics {
        let Some(tc) = topic_config(shard, topic) else {
            continue;
        };
        let answers = match on_owners(
            shard,
            shard.id,
            topic,
            0..tc.read_queue_nums.max(0),
            |owner, qs| owner.group_offsets(group.to_owned(), topic.clone(), qs),
        )
        .await
        {
            Ok(a) => a,
            Err(e) => return error(rc::SYSTEM_ERROR, e),
        };
        for answer in answers {
            match answer {
                Ok(rows) => {
                    for (q, w) in rows {
                        stats.offset_table.insert(queue(shard, topic, q), w);
                    }
                }
                Err(e) => return error(rc::SYSTEM_ERROR, e),
            }
        }
    }
    ok().with_body(stats.to_json())
}

/// Whether the broker knows `group`: a subscription group, online consumers, or committed offsets
/// on `topic`.
async fn group_known(shard: &Rc<Shard>, receiver: usize, group: &str, topic: &str) -> bool {
    if let Some(ctl) = &shard.control {
        if shard.groups.borrow().get(group).is_some()
            || ctl.clients.borrow().consumer_ids(group).is_some()
        {
            return true;
        }
    }
    let key = offset_table_key(topic, group);
    group_topics_everywhere(shard, receiver, group)
        .await
        .into_iter()
        .flatten()
        .any(|topics| topics.iter().any(|t| offset_table_key(t, group) == key))
}

/// INVOKE_BROKER_TO_RESET_OFFSET (on shard 0): moves the group's committed offsets on the broker
/// (as Java 5's server-side reset, so offline groups are reset too), tells the group's online
/// clients with RESET_CONSUMER_CLIENT_OFFSET (as Java's Broker2Client, so running consumers jump
/// instead of committing their old positions back), and answers the new offsets.
/// Runs on the control shard for a client that reached the broker through shard `receiver`.
pub async fn reset_offset(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    receiver: usize,
) -> RemotingCommand {
    let header = match ResetOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let (group, topic) = (header.group.trim(), header.topic.trim());
    if group.is_empty() {
        return blank("group");
    }
    if topic.is_empty() {
        return blank("topic");
    }
    if shard.role() == BrokerRole::Slave {
        return error(rc::SYSTEM_ERROR, "Can not reset offset in slave broker");
    }
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let Some(tc) = topic_config(shard, topic) else {
        return error(rc::TOPIC_NOT_EXIST, format!("Topic {topic} does not exist"));
    };
    if !group_known(shard, receiver, group, topic).await {
        return error(
            rc::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("Group {group} does not exist"),
        );
    }
    let force = header.is_force.unwrap_or(true);
    let targets: BTreeMap<i32, ResetTarget> = match header.queue_id {
        Some(q) if q >= 0 => {
            let target = match header.offset {
                Some(o) if o != -1 => ResetTarget::Offset(o),
                _ => ResetTarget::Time(header.timestamp),
            };
            BTreeMap::from([(q, target)])
        }
        _ => (0..tc.read_queue_nums.max(0))
            .map(|q| (q, ResetTarget::Time(header.timestamp)))
            .collect(),
    };
    if targets.is_empty() {
        return error(rc::SYSTEM_ERROR, "No queues to reset.");
    }
    let answers = match on_owners(
        shard,
        receiver,
        topic,
        targets.keys().copied(),
        |owner, qs| {
            let owned: Vec<(i32, ResetTarget)> = qs
                .iter()
                .filter_map(|q| targets.get(q).map(|t| (*q, *t)))
                .collect();
            owner.reset_queues(group.to_owned(), topic.to_owned(), owned, force)
        },
    )
    .await
    {
        Ok(a) => a,
        Err(e) => return error(rc::SYSTEM_ERROR, e),
    };
    let mut body = ResetOffsetBody::default();
    let mut failures = Vec::new();
    for answer in answers {
        match answer {
            Ok(rows) => {
                for (q, offset) in rows {
                    let mq = MessageQueue {
                        topic: topic.to_owned(),
                        broker_name: shard.broker_name_of(receiver),
                        queue_id: q,
                    };
                    body.offset_table.insert(mq, offset);
                }
            }
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        // Shards that succeeded keep their reset; say which queues moved.
        return error(
            rc::SYSTEM_ERROR,
            format!(
                "{}; queues reset: {:?}",
                failures.join("; "),
                body.offset_table
                    .iter()
                    .map(|(mq, o)| (mq.queue_id, *o))
                    .collect::<Vec<_>>()
            ),
        );
    }
    tracing::info!(
        "reset offsets of group {group} on topic {topic} (timestamp {}, force {force}): {:?}",
        header.timestamp,
        body.offset_table
            .iter()
            .map(|(mq, o)| (mq.queue_id, *o))
            .collect::<Vec<_>>()
    );
    let clients = ctl
        .clients
        .borrow()
        .consumer_group(group)
        .map(|(_, c)| c)
        .unwrap_or_default();
    if !clients.is_empty() {
        // C++ clients read a list instead of the object-keyed map. Java picks the form by the admin
        // request's language (mqadmin resetOffsetByTime -c); the language each client's heartbeat
        // carried picks it too, so a mixed group is served.
        let java_body = body.to_json();
        let c_body = protocol::body::to_json(&ResetOffsetBodyForC::from_body(&body));
        let push_header = ResetOffsetRequestHeader {
            group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id: Some(-1),
            offset: None,
            timestamp: header.timestamp,
            is_force: Some(force),
        };
        for client in clients {
            let for_c =
                req.language == LanguageCode::Cpp || client.language == LanguageCode::Cpp.name();
            let mut cmd = RemotingCommand::request(request_code::RESET_CONSUMER_CLIENT_OFFSET)
                .with_ext_fields(push_header.to_ext_fields())
                .with_body(if for_c {
                    c_body.clone()
                } else {
                    java_body.clone()
                });
            cmd.mark_oneway();
            shard
                .on(client.conn.shard)
                .notify(client.conn.conn_id, cmd)
                .await;
        }
    }
    ok().with_body(body.to_json())
}

/// GET_CONSUMER_CONNECTION_LIST (on shard 0): the online clients of a group, with the group's
/// consume type, message model, where it starts and its subscriptions.
pub fn consumer_connection_list(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let header = match GetConsumerConnectionListRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let group = header.consumer_group.trim();
    if group.is_empty() {
        return blank("consumerGroup");
    }
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let clients = ctl.clients.borrow();
    let Some((info, members)) = clients.consumer_group(group).filter(|(_, m)| !m.is_empty()) else {
        return error(
            rc::CONSUMER_NOT_ONLINE,
            format!("the consumer group[{group}] not online"),
        );
    };
    let body = ConsumerConnection {
        connection_set: members
            .into_iter()
            .map(ConsumerClient::into_connection)
            .collect(),
        consume_from_where: info.consume_from_where.name().to_owned(),
        consume_type: info.consume_type.name().to_owned(),
        message_model: info.message_model.name().to_owned(),
        subscription_table: info.subscriptions.clone(),
    };
    ok().with_body(protocol::body::to_json(&body))
}

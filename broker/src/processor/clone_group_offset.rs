//! CLONE_GROUP_OFFSET (314), as `mqadmin cloneGroupOffset` sends it: copies one consumer group's
//! committed offsets on a topic (or on every topic it has offsets of) to another group, on every
//! shard of the broker the request reached. As Apache, a topic the source group's online consumers
//! do not subscribe is skipped unless `offline` is set.

use std::collections::BTreeSet;
use std::rc::Rc;

use protocol::body::split_offset_table_key;
use protocol::header::{CloneGroupOffsetRequestHeader, CommandHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::admin_stats::group_topics_everywhere;
use crate::common::reply::{error, header_error, ok};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// On one shard: copies `src`'s offsets of `topics` to `dest`; answers how many queues it copied.
pub(crate) fn clone_on_shard(
    shard: &Shard,
    src: &str,
    dest: &str,
    topics: &BTreeSet<String>,
) -> usize {
    let mut offsets = shard.offsets.borrow_mut();
    let copies: Vec<(String, i32, i64)> = offsets
        .entries()
        .into_iter()
        .filter_map(|(key, q, o)| match split_offset_table_key(&key) {
            Some((t, g)) if g == src && topics.contains(t) => Some((t.to_owned(), q, o)),
            _ => None,
        })
        .collect();
    for (topic, q, o) in &copies {
        offsets.commit(dest, topic, *q, *o);
    }
    copies.len()
}

/// Runs on the control shard (it knows the online consumers) for a client that reached the broker
/// through shard `receiver`.
pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand, receiver: usize) -> RemotingCommand {
    let h = match CloneGroupOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let (src, dest) = (h.src_group.trim(), h.dest_group.trim());
    if src.is_empty() || dest.is_empty() {
        return error(rc::SYSTEM_ERROR, "srcGroup and destGroup must not be blank");
    }
    let mut topics = BTreeSet::new();
    match h.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            topics.insert(t.to_owned());
        }
        None => {
            for answer in group_topics_everywhere(shard, receiver, src).await {
                match answer {
                    Ok(list) => topics.extend(list),
                    Err(e) => return error(rc::SYSTEM_ERROR, e.to_string()),
                }
            }
        }
    }
    topics.retain(|t| {
        let known = shard.topics.borrow().get(t).is_some();
        if !known {
            tracing::warn!("cloneGroupOffset {src} -> {dest}: topic {t} does not exist");
        }
        known
    });
    if !h.offline.unwrap_or(false) {
        if let Some(ctl) = &shard.control {
            let subscribed = ctl.clients.borrow().subscriptions(src);
            if !subscribed.is_empty() {
                topics.retain(|t| subscribed.iter().any(|s| &s.topic == t));
            }
        }
    }
    let answers = join_all(
        shard
            .broker_shards(receiver)
            .map(|s| s.clone_group_offsets(src.to_owned(), dest.to_owned(), topics.clone())),
    )
    .await;
    let mut queues = 0;
    for answer in answers {
        match answer {
            Ok(n) => queues += n,
            Err(e) => return error(rc::SYSTEM_ERROR, e.to_string()),
        }
    }
    tracing::info!("cloneGroupOffset {src} -> {dest} on {topics:?}: {queues} queues");
    ok()
}

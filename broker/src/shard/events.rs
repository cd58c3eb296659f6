//! Events the control shard broadcasts to every other shard: changes of the topic table and of a
//! consumer group's subscriptions. Each shard keeps a read-only copy of both, applied here.

use protocol::body::{DataVersion, SubscriptionData, TopicConfig};

use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// A change every shard's copy must follow.
#[derive(Debug, Clone)]
pub enum ShardEvent {
    /// The topic table changed (one topic created, updated or removed).
    TopicChanged {
        upsert: Option<TopicConfig>,
        remove: Option<String>,
        version: DataVersion,
    },
    /// A consumer group's subscriptions changed (empty: the group is gone).
    GroupSubscriptions {
        group: String,
        subscriptions: Vec<SubscriptionData>,
    },
}

/// Sends `event` to every other shard and waits until each applied it.
pub async fn broadcast(shard: &Shard, event: ShardEvent) {
    let others: Vec<usize> = (0..shard.shards).filter(|s| *s != shard.id).collect();
    let sent = others.iter().map(|to| {
        let event = event.clone();
        shard.on(*to).run(move |s| async move { apply(&s, event) })
    });
    for (result, to) in join_all(sent).await.into_iter().zip(&others) {
        if let Err(e) = result {
            tracing::warn!("shard {}: event not applied by shard {to}: {e}", shard.id);
        }
    }
}

/// Applies a broadcast to this shard's copies.
pub fn apply(shard: &Shard, event: ShardEvent) {
    match event {
        ShardEvent::TopicChanged {
            upsert,
            remove,
            version,
        } => {
            let mut table = shard.topics.borrow_mut();
            if let Some(tc) = upsert {
                table.topics.insert(tc.topic_name.clone(), tc);
            }
            if let Some(name) = remove {
                table.topics.remove(&name);
            }
            table.data_version = version;
        }
        ShardEvent::GroupSubscriptions {
            group,
            subscriptions,
        } => shard.set_group_subscriptions(group, subscriptions),
    }
}

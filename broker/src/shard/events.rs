//! Events the control shard broadcasts to every other shard: changes of the topic table, of the
//! subscription groups' settings, of ACL 2.0 users and ACLs and of a consumer group's subscriptions.
//! Each shard keeps a read-only copy of all four, applied here. Group settings travel as events, like
//! topics, because they are read on every pull (on the queue's owner) and change rarely: a copy per
//! shard costs one broadcast per change instead of a hop to the control shard per pull. Users and
//! ACLs likewise: every request of an ACL 2.0 broker is checked on the shard that received it.

use protocol::body::{DataVersion, SubscriptionData, TopicConfig};

use crate::shard::mesh::join_all;
use crate::shard::Shard;
use crate::state::auth_metadata::AuthMetadata;
use crate::state::subscription_groups::SubscriptionGroupConfig;

/// A change every shard's copy must follow.
#[derive(Debug, Clone)]
pub enum ShardEvent {
    /// The topic table changed (one topic created, updated or removed).
    TopicChanged {
        upsert: Option<TopicConfig>,
        remove: Option<String>,
        version: DataVersion,
    },
    /// Subscription groups were created, updated or removed (`updateSubGroup`, auto-creation, a
    /// slave copying its master's).
    GroupsChanged {
        upsert: Vec<SubscriptionGroupConfig>,
        remove: Vec<String>,
        version: DataVersion,
    },
    /// ACL 2.0 users or ACLs changed (all of them: they are few, and change rarely).
    AuthChanged(AuthMetadata),
    /// A consumer group's subscriptions or message model changed (empty: the group is gone).
    GroupSubscriptions {
        group: String,
        subscriptions: Vec<SubscriptionData>,
        /// Its consumers consume by broadcast.
        broadcasting: bool,
    },
}

/// Sends `event` to every other shard and waits until each applied it.
pub async fn broadcast(shard: &Shard, event: ShardEvent) {
    let others: Vec<usize> = (0..shard.shards).filter(|s| *s != shard.id).collect();
    let sent = others.iter().map(|to| {
        let event = event.clone();
        shard.on(*to).apply_event(event)
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
            drop(table);
            crate::feature::topic_policy::push(shard);
        }
        ShardEvent::GroupsChanged {
            upsert,
            remove,
            version,
        } => {
            let mut table = shard.groups.borrow_mut();
            for config in upsert {
                table
                    .subscription_group_table
                    .insert(config.group_name.clone(), config);
            }
            for name in remove {
                table.subscription_group_table.remove(&name);
            }
            table.data_version = version;
        }
        ShardEvent::AuthChanged(auth) => *shard.auth.borrow_mut() = auth,
        ShardEvent::GroupSubscriptions {
            group,
            subscriptions,
            broadcasting,
        } => {
            crate::feature::pull_filter::subscriptions(shard)
                .set_group_broadcasting(&group, broadcasting);
            crate::feature::pull_filter::subscriptions(shard)
                .set_group_subscriptions(group, subscriptions);
        }
    }
}

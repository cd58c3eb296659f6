//! A consumer group's subscription-group settings as the requests of its consumers meet them, in
//! RocketMQ's order and with its answers: a group the broker neither knows nor may create answers
//! SUBSCRIPTION_GROUP_NOT_EXIST; `consumeEnable = false` and broadcasting without
//! `consumeBroadcastEnable` refuse pulls with NO_PERMISSION; `brokerId` and
//! `whichBrokerWhenConsumeSlowly` are the broker id a pull answer suggests. Settings are read from
//! the shard's copy of the groups; a missing group is created through the control shard.

use protocol::header::{forbidden_type, PullMessageRequestHeader};
use protocol::request_code as code;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::error;
use crate::shard::Shard;
use crate::state::subscription_groups::{may_auto_create, SubscriptionGroupConfig};

/// RocketMQ's `MixAll.MASTER_ID`.
const MASTER_ID: i64 = 0;

/// A group's settings, created with defaults on first use when the broker may (RocketMQ's
/// `findSubscriptionGroupConfig`); `None` when the group does not exist.
pub async fn find(shard: &Shard, group: &str) -> Option<SubscriptionGroupConfig> {
    let known = shard.groups.borrow().get(group).cloned();
    if known.is_some() {
        return known;
    }
    create(shard, group).await
}

/// Creates a missing group through the control shard, which broadcasts it before answering.
async fn create(shard: &Shard, group: &str) -> Option<SubscriptionGroupConfig> {
    if !may_auto_create(
        crate::config::live::auto_create_subscription_group(&shard.cfg),
        group,
    ) {
        return None;
    }
    match shard.control_shard().ensure_group(group.to_owned()).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!("cannot create subscription group {group}: {e}");
            None
        }
    }
}

/// The answer to a request naming a group that does not exist.
pub fn not_exist(group: &str) -> RemotingCommand {
    error(
        rc::SUBSCRIPTION_GROUP_NOT_EXIST,
        format!("subscription group [{group}] does not exist"),
    )
}

/// A NO_PERMISSION answer to a pull, with RocketMQ 5's `forbiddenType`.
/// A NO_PERMISSION answer with RocketMQ's `forbiddenType`.
pub fn forbidden(forbidden: i32, remark: String) -> RemotingCommand {
    let mut response = error(rc::NO_PERMISSION, remark);
    response.set_ext("forbiddenType", &forbidden.to_string());
    response
}

/// What a pull keeps of its group's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullGroup {
    consume_broadcast_enable: bool,
    broker_id: i64,
    which_broker_when_consume_slowly: i64,
}

impl PullGroup {
    /// Whether the group may be consumed by broadcast (`consumeBroadcastEnable`).
    pub fn consume_broadcast_enable(&self) -> bool {
        self.consume_broadcast_enable
    }
}

impl From<&SubscriptionGroupConfig> for PullGroup {
    fn from(g: &SubscriptionGroupConfig) -> Self {
        PullGroup {
            consume_broadcast_enable: g.consume_broadcast_enable,
            broker_id: g.broker_id,
            which_broker_when_consume_slowly: g.which_broker_when_consume_slowly,
        }
    }
}

/// The checks of a PULL_MESSAGE / LITE_PULL_MESSAGE before its topic's: lite pulls allowed, the
/// group exists (or is created), its consumption enabled.
pub async fn admit_pull(
    shard: &Shard,
    request_code: i32,
    header: &PullMessageRequestHeader,
) -> Result<PullGroup, RemotingCommand> {
    if request_code == code::LITE_PULL_MESSAGE && !shard.cfg.lite_pull_message_enable {
        return Err(forbidden(
            forbidden_type::BROKER_FORBIDDEN,
            format!(
                "the broker[{}] for lite pull consumer is forbidden",
                shard.cfg.broker_ip1
            ),
        ));
    }
    let group = &header.consumer_group;
    // Copy what a pull needs without cloning the whole config on every pull.
    let known = shard
        .groups
        .borrow()
        .get(group)
        .map(|g| (g.consume_enable, PullGroup::from(g)));
    let (consume_enable, settings) = match known {
        Some(found) => found,
        None => match create(shard, group).await {
            Some(g) => (g.consume_enable, PullGroup::from(&g)),
            None => return Err(not_exist(group)),
        },
    };
    if !consume_enable {
        return Err(forbidden(
            forbidden_type::GROUP_FORBIDDEN,
            format!("subscription group no permission, {group}"),
        ));
    }
    Ok(settings)
}

/// The broker id a pull answer suggests (RocketMQ's `composeResponseHeader`): with slave reads on, the
/// group's `whichBrokerWhenConsumeSlowly` when the consumer lags (its data is no longer in memory),
/// else the group's `brokerId`; the master otherwise.
pub fn suggested_broker(lagging: Option<bool>, group: &PullGroup) -> i64 {
    match lagging {
        None => MASTER_ID,
        Some(true) => group.which_broker_when_consume_slowly,
        Some(false) => group.broker_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suggested_broker_follows_the_group() {
        let group = PullGroup {
            consume_broadcast_enable: true,
            broker_id: 3,
            which_broker_when_consume_slowly: 2,
        };
        assert_eq!(suggested_broker(None, &group), 0);
        assert_eq!(suggested_broker(Some(false), &group), 3);
        assert_eq!(suggested_broker(Some(true), &group), 2);
    }
}

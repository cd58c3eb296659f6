//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, on shard 0): creates or replaces a consumer group's
//! settings (`mqadmin updateSubGroup`) from a `SubscriptionGroupConfig` JSON body, persists them and
//! tells every shard (pulls and send-backs read them there).

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::{error, ok};
use crate::shard::Shard;
use crate::state::subscription_groups::SubscriptionGroupConfig;

pub async fn update_and_create(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    if shard.control.is_none() {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    }
    let config: SubscriptionGroupConfig = match protocol::body::from_json(&req.body) {
        Ok(c) => c,
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("bad SubscriptionGroupConfig body: {e}"),
            )
        }
    };
    if config.group_name.trim().is_empty() {
        return error(rc::SYSTEM_ERROR, "groupName is empty");
    }
    tracing::info!(
        "update subscription group {}: {config:?}",
        config.group_name
    );
    crate::role::control::change_groups(shard, vec![config], Vec::new()).await;
    ok()
}

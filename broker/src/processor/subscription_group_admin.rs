//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, on shard 0): creates or replaces a consumer group's
//! settings (`mqadmin updateSubGroup`) from a `SubscriptionGroupConfig` JSON body, then persists them.

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use super::{error, ok};
use crate::shard::Shard;
use crate::state::subscription_groups::SubscriptionGroupConfig;

pub async fn update_and_create(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
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
    {
        let mut groups = ctl.groups.borrow_mut();
        groups
            .subscription_group_table
            .insert(config.group_name.clone(), config);
        groups.data_version.next(crate::state::topics::now_ms());
    }
    crate::role::control::persist_groups(shard).await;
    ok()
}

//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225, on shard 0, `mqadmin updateSubGroupList`): creates
//! or replaces many consumer groups at once from a `SubscriptionGroupList` body. Every name is
//! checked first as Apache's `TopicValidator.validateGroup` checks it (INVALID_PARAMETER and its
//! remark on the first bad one, nothing changed); then all are stored in one change, persisted and
//! told to every shard, as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP does for one.

use std::rc::Rc;

use protocol::body::SubscriptionGroupList;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::shard::Shard;
use crate::state::subscription_groups::SubscriptionGroupConfig;

/// Apache's `TopicValidator.GROUP_MAX_LENGTH`.
const GROUP_MAX_LENGTH: usize = 120;

/// Apache's `TopicValidator.validateGroup`: its remarks, in its order.
pub fn validate_group(group: &str) -> Result<(), String> {
    if group.trim().is_empty() {
        return Err("The specified group is blank.".into());
    }
    let legal = group
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-'));
    if !legal {
        return Err(format!(
            "The specified group: {group}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if group.chars().count() > GROUP_MAX_LENGTH {
        return Err(format!(
            "The specified group: {group}, is longer than group max length: {GROUP_MAX_LENGTH}"
        ));
    }
    Ok(())
}

pub async fn update_and_create_list(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    if shard.control.is_none() {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    }
    let list: SubscriptionGroupList<SubscriptionGroupConfig> =
        match protocol::body::from_json(&req.body) {
            Ok(l) => l,
            Err(e) => {
                return error(
                    rc::SYSTEM_ERROR,
                    format!("bad SubscriptionGroupList body: {e}"),
                )
            }
        };
    for config in &list.group_config_list {
        if let Err(remark) = validate_group(&config.group_name) {
            return error(rc::INVALID_PARAMETER, remark);
        }
    }
    let names: Vec<&str> = list
        .group_config_list
        .iter()
        .map(|c| c.group_name.as_str())
        .collect();
    tracing::info!("update subscription groups {}", names.join(";"));
    crate::role::control::change_groups(shard, list.group_config_list, Vec::new()).await;
    ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_are_checked_as_apache_checks_them() {
        assert!(validate_group("CID_orders-1%x|y").is_ok());
        assert_eq!(
            validate_group(" ").unwrap_err(),
            "The specified group is blank."
        );
        assert!(validate_group("a b")
            .unwrap_err()
            .contains("illegal characters"));
        assert!(validate_group(&"g".repeat(121))
            .unwrap_err()
            .ends_with("is longer than group max length: 120"));
        assert!(validate_group(&"g".repeat(120)).is_ok());
    }
}

//! What a put's SEND_OK waits for, decided once its records are stored: nobody (ASYNC_MASTER, or
//! controller mode without allAckInSyncStateSet), any one slave (classic SYNC_MASTER), every other
//! member of the SyncStateSet (controller mode with allAckInSyncStateSet), or no answer can confirm
//! it because this broker's role changed while the records were being stored (stepped down to slave,
//! perhaps elected master again since).

use std::collections::BTreeSet;

use crate::config::BrokerRole;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckRule {
    /// The local store's answer is the answer.
    Nobody,
    /// Classic SYNC_MASTER: one slave's ack.
    AnySlave,
    /// allAckInSyncStateSet: these brokerIds (the SyncStateSet less this broker) must all ack.
    AllOf(Vec<i64>),
    /// Controller mode with allAckInSyncStateSet: the controllers made this broker a slave between
    /// the put's role check and now. Its SyncStateSet is gone and its replicas follow another master
    /// that may not hold these records (the returning old master cuts them), so they are not
    /// acknowledged (FLUSH_SLAVE_TIMEOUT, as Apache's wait for the slaves ends). Also when it is
    /// master again by now: the records were stored in the old term, which the replicas may have
    /// cut, and the new SyncStateSet's acks say nothing about them.
    SteppedDown,
}

/// The rule for a put stored on a shard whose role is now `role`; `role_changed`: the shard changed
/// role (controller mode: became slave or master) since the put's role check.
pub fn ack_rule(
    role: BrokerRole,
    controller_enabled: bool,
    all_ack_in_sync_state_set: bool,
    me: Option<u64>,
    sync_state_set: &BTreeSet<u64>,
    role_changed: bool,
) -> AckRule {
    if controller_enabled {
        if !all_ack_in_sync_state_set {
            // Apache's default in controller mode: the master alone acknowledges (inSyncReplicas 1).
            return AckRule::Nobody;
        }
        if role == BrokerRole::Slave || role_changed {
            return AckRule::SteppedDown;
        }
        if role != BrokerRole::SyncMaster {
            return AckRule::Nobody;
        }
        return AckRule::AllOf(
            sync_state_set
                .iter()
                .filter(|id| Some(**id) != me)
                .filter_map(|id| i64::try_from(*id).ok())
                .collect(),
        );
    }
    if role == BrokerRole::SyncMaster {
        AckRule::AnySlave
    } else {
        AckRule::Nobody
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u64]) -> BTreeSet<u64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn master_waits_for_every_other_member_of_the_sync_state_set() {
        assert_eq!(
            ack_rule(BrokerRole::SyncMaster, true, true, Some(1), &set(&[1, 2, 3]), false),
            AckRule::AllOf(vec![2, 3])
        );
    }

    /// Chaos seed 2022551485 (2026-12-07): broker 1, master with SyncStateSet {1, 2, 3}, stored three
    /// records while the controllers elected broker 3; the notice made it a slave (role Slave, set
    /// cleared) before the records' answers, which then said SEND_OK with no replica's ack. Broker 3
    /// took over without them and broker 1 cut them on rejoining: acknowledged writes lost.
    #[test]
    fn a_master_that_stepped_down_during_the_put_does_not_acknowledge() {
        assert_eq!(
            ack_rule(BrokerRole::Slave, true, true, Some(1), &set(&[]), false),
            AckRule::SteppedDown
        );
    }

    /// Deposed and elected again during one put: the role is SyncMaster again and the new
    /// SyncStateSet's acks would release the put, but its records were stored in the old term,
    /// which the other replicas may have cut when they followed the interim master.
    #[test]
    fn a_master_deposed_and_re_elected_during_the_put_does_not_acknowledge() {
        assert_eq!(
            ack_rule(BrokerRole::SyncMaster, true, true, Some(1), &set(&[1, 2, 3]), true),
            AckRule::SteppedDown
        );
        assert_eq!(
            ack_rule(BrokerRole::SyncMaster, true, true, Some(1), &set(&[1]), true),
            AckRule::SteppedDown
        );
    }

    #[test]
    fn without_all_ack_or_outside_controller_mode_the_rules_are_unchanged() {
        assert_eq!(
            ack_rule(BrokerRole::Slave, true, false, Some(1), &set(&[]), false),
            AckRule::Nobody
        );
        assert_eq!(
            ack_rule(BrokerRole::SyncMaster, false, false, None, &set(&[]), false),
            AckRule::AnySlave
        );
        assert_eq!(
            ack_rule(BrokerRole::AsyncMaster, false, false, None, &set(&[]), false),
            AckRule::Nobody
        );
        assert_eq!(
            ack_rule(BrokerRole::Slave, false, false, None, &set(&[]), false),
            AckRule::Nobody
        );
    }
}

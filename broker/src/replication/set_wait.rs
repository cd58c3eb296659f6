//! Controller mode with allAckInSyncStateSet: a put's wait for the acks of the SyncStateSet's other
//! members and of the replicas joining it (`HaShard::joining`). A joiner is waited for only while it
//! is still joining and connected: a join that fails (the replica did not reach the log end in time,
//! or left) must not hold the puts stored meanwhile until their timeout, as the set's own members
//! would.

use std::time::{Duration, Instant};

use ha::WaitError;

use crate::replication::ha_state::HaShard;

/// How often a wait that includes joiners looks again at who is still joining.
const JOIN_SLICE: Duration = Duration::from_millis(100);

/// Waits until every replica of `others` (brokerIds, the master excluded) still waited for has
/// acknowledged everything below `end`, for at most `timeout`.
pub async fn wait_for_set(
    state: &HaShard,
    end: i64,
    mut others: Vec<i64>,
    timeout: Duration,
) -> Result<(), WaitError> {
    let is_member = |id: i64| {
        u64::try_from(id).is_ok_and(|id| state.sync_state_set.borrow().contains(&id))
    };
    if others.iter().all(|id| is_member(*id)) {
        return state.watermark.wait_all(end, &others, timeout).await;
    }
    let deadline = Instant::now() + timeout;
    loop {
        others.retain(|id| {
            is_member(*id)
                || (u64::try_from(*id).is_ok_and(|id| state.joining.borrow().contains(&id))
                    && state.watermark.is_connected(*id))
        });
        // A member that left fails the put at once (as `wait_all`); a joiner that left was dropped.
        if others.iter().any(|id| !state.watermark.is_connected(*id)) {
            return Err(WaitError::SlaveNotAvailable);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(WaitError::Timeout);
        }
        if let Ok(()) = state
            .watermark
            .wait_all(end, &others, left.min(JOIN_SLICE))
            .await
        {
            return Ok(());
        }
    }
}

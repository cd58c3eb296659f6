//! Controller mode with allAckInSyncStateSet: a put's wait for the acks of the SyncStateSet's other
//! members and of the replicas joining it (`HaShard::joining`). The set is read again while the put
//! waits, as Apache's GroupTransferService does on every pass: a member that leaves the set (a
//! replica cut off or paused, dropped after `haMaxTimeSlaveNotCatchup`) is no longer waited for, so
//! the puts already waiting are acknowledged once the controllers accept the smaller set instead of
//! each waiting out its timeout. A joiner is waited for only while it is still joining and
//! connected: a join that fails (the replica did not reach the log end in time, or left) must not
//! hold the puts stored meanwhile until their timeout either.

use std::time::{Duration, Instant};

use ha::WaitError;

use crate::replication::ha_state::HaShard;

/// How often a waiting put looks again at the SyncStateSet and at who is still joining: after a
/// replica leaves the set, the puts waiting for it finish within this.
const SLICE: Duration = Duration::from_millis(50);

/// Waits until every replica of `others` (brokerIds, the master excluded) still waited for has
/// acknowledged everything below `end`, for at most `timeout`. A replica is still waited for while
/// it is a member of the SyncStateSet, or joining it and connected.
pub async fn wait_for_set(
    state: &HaShard,
    end: i64,
    mut others: Vec<i64>,
    timeout: Duration,
) -> Result<(), WaitError> {
    let is_member =
        |id: i64| u64::try_from(id).is_ok_and(|id| state.sync_state_set.borrow().contains(&id));
    let deadline = Instant::now() + timeout;
    loop {
        others.retain(|id| {
            is_member(*id)
                || (u64::try_from(*id).is_ok_and(|id| state.joining.borrow().contains(&id))
                    && state.watermark.is_connected(*id))
        });
        // A member that is not connected fails the put at once (as `wait_all`); a joiner that
        // left was dropped above.
        if others.iter().any(|id| !state.watermark.is_connected(*id)) {
            return Err(WaitError::SlaveNotAvailable);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(WaitError::Timeout);
        }
        // A timeout of the slice, or a replica that left while waiting: the next pass decides.
        if let Ok(()) = state
            .watermark
            .wait_all(end, &others, left.min(SLICE))
            .await
        {
            return Ok(());
        }
    }
}

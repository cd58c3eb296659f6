//! Resolving one transaction: a commit stores the real message on its queue's owner, then (commit or
//! rollback) an op message records the resolution; a transaction resolves at most once.

use std::rc::Rc;

use crate::shard::put::SendStatus;
use crate::shard::Shard;
use crate::state::topics::now_ms;

use super::records::{op_record, HalfMessage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Commit,
    Rollback,
}

/// What a resolution did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// Resolved now.
    Now,
    /// It was resolved before (a repeated END_TRANSACTION or a late check answer): nothing changed.
    Already,
}

/// Resolves `half` (must run on the half queue's shard).
pub async fn resolve(
    shard: &Rc<Shard>,
    half: &HalfMessage,
    outcome: Outcome,
) -> Result<Resolved, String> {
    let state =
        super::state::state().ok_or("this shard does not own the transaction half queue")?;
    if !state.ops.borrow_mut().begin(half.origin) {
        return Ok(Resolved::Already);
    }
    if outcome == Outcome::Commit {
        let real = match half.committed() {
            Ok(r) => r,
            Err(e) => {
                state.ops.borrow_mut().abort(half.origin);
                return Err(e);
            }
        };
        let owner = shard.owner(&real.topic, real.queue_id);
        let stored = match owner.put(vec![real]).await {
            Ok(outcome) if outcome.status == SendStatus::SendOk => Ok(()),
            Ok(outcome) => Err(format!(
                "cannot store the committed message: {}",
                outcome.status.describe()
            )),
            Err(e) => Err(format!("cannot store the committed message: {e}")),
        };
        if let Err(e) = stored {
            state.ops.borrow_mut().abort(half.origin);
            return Err(e);
        }
    }
    // The op message makes the resolution survive a restart. Should it fail, the resolution still holds
    // while the broker runs; after a restart the producer would be checked again.
    let op = op_record(half.origin, shard.store_host, now_ms());
    if shard.role() == crate::config::BrokerRole::Slave {
        tracing::warn!(
            "transaction at half offset {} resolved ({outcome:?}), but the broker is a slave now: \
             its op message is left to the new master's check-back",
            half.origin
        );
    } else if let Err(e) = shard.store.put(op).await {
        tracing::error!(
            "transaction at half offset {} resolved ({outcome:?}) but its op message was not stored: {e}",
            half.origin
        );
    }
    state.ops.borrow_mut().finish(half.origin);
    Ok(Resolved::Now)
}

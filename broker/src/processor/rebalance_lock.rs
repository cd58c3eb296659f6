//! LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (orderly consumers lock their queues), on shard 0.

use std::time::Instant;

use protocol::body::{LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::shard::Shard;

pub fn lock(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let body: LockBatchRequestBody = match protocol::body::from_json(&req.body) {
        Ok(b) => b,
        Err(e) => return error(rc::SYSTEM_ERROR, format!("bad lock request body: {e}")),
    };
    let held = ctl.locks.borrow_mut().try_lock_batch(
        &body.consumer_group,
        &body.mq_set,
        &body.client_id,
        Instant::now(),
    );
    ok().with_body(protocol::body::to_json(&LockBatchResponseBody {
        lock_ok_mq_set: held,
    }))
}

pub fn unlock(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let body: UnlockBatchRequestBody = match protocol::body::from_json(&req.body) {
        Ok(b) => b,
        Err(e) => return error(rc::SYSTEM_ERROR, format!("bad unlock request body: {e}")),
    };
    ctl.locks
        .borrow_mut()
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    ok()
}

//! END_TRANSACTION (37): a producer commits or rolls back a half message (after its local transaction
//! or in answer to CHECK_TRANSACTION_STATE). Runs on the shard that owns the half queue.

use std::rc::Rc;

use protocol::header::{CommandHeader, EndTransactionRequestHeader};
use protocol::message::properties;
use protocol::message::record::{decode_view, sys_flag};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::feature::transaction::records::HalfMessage;
use crate::feature::transaction::resolve::{resolve, Outcome, Resolved};
use crate::shard::Shard;

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match EndTransactionRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if shard.role() == crate::config::BrokerRole::Slave {
        return error(
            rc::SLAVE_NOT_AVAILABLE,
            "the broker is a slave: END_TRANSACTION is forbidden",
        );
    }
    let outcome = match sys_flag::transaction_type(h.commit_or_rollback) {
        sys_flag::TRANSACTION_COMMIT => Outcome::Commit,
        sys_flag::TRANSACTION_ROLLBACK => Outcome::Rollback,
        // "Unknown": the producer does not know yet; the check service asks again later.
        _ => {
            tracing::debug!(
                "END_TRANSACTION unknown for {} (from check: {:?})",
                h.msg_id,
                h.from_transaction_check
            );
            return ok();
        }
    };
    let record = match shard.store.read_record(h.commit_log_offset).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found(h.commit_log_offset),
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!(
                    "cannot read the half message at {}: {e}",
                    h.commit_log_offset
                ),
            )
        }
    };
    let half = match decode_view(&record, false)
        .ok()
        .and_then(|v| HalfMessage::from_view(&v))
    {
        Some(half) => half,
        None => return not_found(h.commit_log_offset),
    };
    let group = properties::get(&half.record.properties, properties::PRODUCER_GROUP);
    if group.is_some_and(|g| g != h.producer_group) {
        return error(
            rc::SYSTEM_ERROR,
            format!(
                "The producer group wrong: {} is not the half message's group",
                h.producer_group
            ),
        );
    }
    match resolve(shard, &half, outcome).await {
        Ok(Resolved::Now) => {
            tracing::debug!("transaction {} resolved: {outcome:?}", h.msg_id);
            ok()
        }
        Ok(Resolved::Already) => ok().with_remark("the transaction was resolved already"),
        Err(e) => error(rc::SYSTEM_ERROR, e),
    }
}

fn not_found(offset: i64) -> RemotingCommand {
    error(
        rc::SYSTEM_ERROR,
        format!("Find prepared transaction message failed: no half message at offset {offset}"),
    )
}

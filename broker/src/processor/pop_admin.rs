//! POP admin codes Apache's mqadmin sends that this broker answers for what they mean here:
//! - SET_MESSAGE_REQUEST_MODE (401, `setConsumeMode`) and GET_ALL_MESSAGE_REQUEST_MODE (402): a
//!   per topic/group PULL or POP mode takes effect through QUERY_ASSIGNMENT (400), by which Apache's
//!   clients learn whether to pull or pop; this broker does not serve QUERY_ASSIGNMENT (clients
//!   rebalance and choose PULL or POP themselves), so a mode could be stored but never honoured: both
//!   are refused with REQUEST_CODE_NOT_SUPPORTED and that reason.
//! - POP_ROLLBACK (200056, `exportPopRecord`): Apache moves POP records from its RocksDB store
//!   (`popConsumerKVServiceEnable`) back to the revive topic. This broker keeps POP records in one
//!   store only, so there is nothing to move: SUCCESS, saying so in the remark.

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::error;

/// SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE.
pub fn message_request_mode() -> RemotingCommand {
    error(
        rc::REQUEST_CODE_NOT_SUPPORTED,
        "message request modes (setConsumeMode) are not supported: this broker does not serve \
         QUERY_ASSIGNMENT (400), through which clients would apply a PULL/POP mode; clients choose \
         PULL or POP themselves",
    )
}

/// POP_ROLLBACK.
pub fn export_pop_record() -> RemotingCommand {
    RemotingCommand::response(
        rc::SUCCESS,
        Some(
            "nothing to export: POP records are kept in the revive log only (no RocksDB POP store)"
                .into(),
        ),
    )
}

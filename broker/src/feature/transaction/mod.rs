//! Transactional messages: half messages wait in RMQ_SYS_TRANS_HALF_TOPIC queue 0; END_TRANSACTION or
//! the check-back service resolves them, recording each resolution as an op message in
//! RMQ_SYS_TRANS_OP_HALF_TOPIC (so it survives restarts). All of it runs on the shard that owns the
//! half queue; the op queue is kept in that shard's store beside it.

pub mod check_service;
pub mod load;
pub mod op_set;
pub mod records;
pub mod resolve;
pub mod state;

use load::{load_ops, saved_progress};
use state::TxState;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::error::BrokerError;
use crate::shard::Shard;
use crate::state::topics::TRANS_HALF_TOPIC;
use op_set::CheckPolicy;

/// The shard that owns the half queue (and so every transaction).
pub fn half_shard(shard: &Shard) -> usize {
    shard.owner_of(TRANS_HALF_TOPIC, 0)
}

/// On the half queue's shard: loads the op queue into the op set, restores the check progress and starts
/// the check service. Other shards, and slaves, do nothing.
pub async fn start(shard: &Rc<Shard>) -> Result<(), BrokerError> {
    if half_shard(shard) != shard.id {
        return Ok(());
    }
    // A slave's CommitLog is a copy of its master's: it must not append copies or ask producers.
    if shard.role() == crate::config::BrokerRole::Slave {
        tracing::info!(
            "shard {}: slave: transaction check-backs are left to the master",
            shard.id
        );
        return Ok(());
    }
    // At start; the check service reads the policy in force each round (`CheckPolicy::in_force`).
    let policy = CheckPolicy::in_force(&shard.cfg);
    let ops = load_ops(shard).await.map_err(|reason| BrokerError::Store {
        shard: shard.id,
        reason: format!("cannot read the transaction op queue: {reason}"),
    })?;
    let half_offset = saved_progress(shard);
    tracing::info!(
        "shard {}: transactions: {} resolved, checking half messages from offset {half_offset} \
         (timeout {} ms, interval {} ms, at most {} checks)",
        shard.id,
        ops.len(),
        policy.timeout_ms,
        policy.interval_ms,
        policy.max_checks
    );
    let state = Rc::new(TxState {
        ops: RefCell::new(ops),
        half_offset: Cell::new(half_offset),
    });
    state::install(state.clone());
    check_service::spawn(shard.clone(), state);
    Ok(())
}

/// On shard 0: sends a CHECK_TRANSACTION_STATE request to one live producer of the half message's group.
pub async fn deliver_check(shard: &Rc<Shard>, cmd: RemotingCommand) -> RemotingCommand {
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "check request reached a shard without the control role",
        );
    };
    let Some(group) = cmd.ext(records::CHECK_GROUP_FIELD).map(str::to_owned) else {
        return error(rc::SYSTEM_ERROR, "the half message names no producer group");
    };
    let conns = ctl.clients.borrow().producer_conns(&group);
    if conns.is_empty() {
        return error(
            rc::SYSTEM_ERROR,
            format!("no live producer of group {group} to check a transaction with"),
        );
    }
    let pick = (shard.random() % conns.len() as u64) as usize;
    let Some(conn) = conns.get(pick).or(conns.first()).copied() else {
        return error(rc::SYSTEM_ERROR, "no producer connection");
    };
    shard.on(conn.shard).notify(conn.conn_id, cmd).await;
    ok()
}

//! The check-back service: each round (its period and policy read from the config in force,
//! `CheckPolicy::in_force`) scans the half queue from its saved progress, skips resolved transactions,
//! and for unresolved ones old enough appends a renewed copy (counting the checks) and sends
//! CHECK_TRANSACTION_STATE to a live producer of the group; after the maximum number of checks it rolls
//! the transaction back.

use protocol::message::record::decode_view;
use std::rc::Rc;

use crate::config::BrokerRole;
use crate::shard::Shard;
use crate::state::topics::{now_ms, TRANS_HALF_TOPIC};

use super::op_set::{CheckPolicy, Verdict};
use super::records::HalfMessage;
use super::resolve::{resolve, Outcome};
use super::state::{save_progress, TxState, SCAN_BATCH, SCAN_BYTES};

pub fn spawn(shard: Rc<Shard>, state: Rc<TxState>) {
    glommio::spawn_local(async move {
        // Controller mode turns a master into a slave and back while this service runs (the master
        // services start once): it follows the role itself.
        let mut was_slave = false;
        loop {
            // Read each round: UPDATE_BROKER_CONFIG may change the transaction keys at run time.
            let period = CheckPolicy::in_force(&shard.cfg).round_period();
            glommio::timer::sleep(period).await;
            if shard.shutting_down.get() {
                return;
            }
            if shard.role() == BrokerRole::Slave {
                was_slave = true;
                continue;
            }
            if was_slave {
                if let Err(e) = super::load::reload(&shard, &state).await {
                    tracing::warn!("transaction state not read again: {e}");
                    continue;
                }
                was_slave = false;
            }
            if let Err(e) = scan(&shard, &state).await {
                tracing::warn!("transaction check scan stopped: {e}");
            }
        }
    })
    .detach();
}

/// One pass over the half queue, up to the first half message not yet due.
async fn scan(shard: &Rc<Shard>, state: &TxState) -> Result<(), String> {
    let store = &shard.store;
    let policy = CheckPolicy::in_force(&shard.cfg);
    let mut offset = state
        .half_offset
        .get()
        .max(store.min_offset(TRANS_HALF_TOPIC, 0));
    while offset < store.max_offset(TRANS_HALF_TOPIC, 0) {
        let got = store
            .get_messages(TRANS_HALF_TOPIC, 0, offset, SCAN_BATCH, SCAN_BYTES, None)
            .await
            .map_err(|e| e.to_string())?;
        if got.records.is_empty() {
            if got.next_begin_offset > offset {
                offset = got.next_begin_offset;
                save_progress(shard, state, offset);
                continue;
            }
            return Ok(());
        }
        for raw in &got.records {
            let view = match decode_view(raw, false) {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!("undecodable half message near offset {offset}: {e}");
                    offset = offset.saturating_add(1);
                    save_progress(shard, state, offset);
                    continue;
                }
            };
            let next = view.queue_offset.saturating_add(1).max(offset);
            let Some(half) = HalfMessage::from_view(&view) else {
                offset = next;
                save_progress(shard, state, offset);
                continue;
            };
            if state.ops.borrow().is_resolving(half.origin) {
                // An END_TRANSACTION is storing it now; look again once it is done (or failed).
                return Ok(());
            }
            let resolved = state.ops.borrow().is_resolved(half.origin);
            let verdict = policy.verdict(
                resolved,
                half.check_times,
                view.store_timestamp,
                half.immunity_s,
                now_ms(),
            );
            match verdict {
                Verdict::Resolved => {}
                Verdict::NotDue => return Ok(()),
                Verdict::GiveUp => {
                    tracing::info!(
                        "transaction {} (half offset {}) unresolved after {} checks: rolled back",
                        uniq(&half),
                        half.origin,
                        half.check_times
                    );
                    if let Err(e) = resolve(shard, &half, Outcome::Rollback).await {
                        tracing::warn!("cannot roll back the transaction at {}: {e}", half.origin);
                    }
                }
                Verdict::Check { times } => check(shard, &half, times).await?,
            }
            offset = next;
            save_progress(shard, state, offset);
        }
    }
    Ok(())
}

/// Appends the renewed copy, then asks a producer about it (so its answer names the copy).
async fn check(shard: &Rc<Shard>, half: &HalfMessage, times: u32) -> Result<(), String> {
    // A slave's CommitLog is its master's copy: a copy appended here would not line up with the
    // master's next records, and replication would cut it again and again. (Checked right before
    // the append: the store appends before its first await.)
    if shard.role() == BrokerRole::Slave {
        return Err("the broker became a slave: checks are the master's".to_owned());
    }
    let copy = half.renewed(times);
    let stored = shard
        .store
        .put(copy.clone())
        .await
        .map_err(|e| format!("cannot renew the half message at {}: {e}", half.origin))?;
    let mut renewed = half.clone();
    renewed.record = copy;
    renewed.record.physical_offset = stored.physical_offset;
    renewed.record.queue_offset = stored.queue_offset;
    renewed.record.store_timestamp = stored.store_timestamp;
    renewed.check_times = times;
    let cmd = renewed.check_request(shard.store_host)?;
    // The control shard knows the producers' connections.
    let answer = shard.control_shard().check_transaction(cmd).await;
    match answer {
        Ok(r) if r.code == protocol::response_code::SUCCESS => {
            tracing::debug!("transaction {} checked (check {times})", uniq(half));
        }
        Ok(r) => tracing::warn!(
            "transaction {} not checked (check {times} counted): {}",
            uniq(half),
            r.remark.unwrap_or_default()
        ),
        Err(e) => tracing::warn!("transaction {} not checked: {e}", uniq(half)),
    }
    Ok(())
}

fn uniq(half: &HalfMessage) -> &str {
    protocol::message::properties::get(
        &half.record.properties,
        protocol::message::properties::UNIQ_KEY,
    )
    .unwrap_or("?")
}

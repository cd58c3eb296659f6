//! Reading the transaction state back from the store: the op queue into an op set, and where the
//! check service starts (at start, and when a broker that was a slave is master again).

use protocol::message::record::decode_view;

use super::op_set::{self, OpSet};
use super::state::{TxState, OLD_PROGRESS_GROUP, PROGRESS_GROUP, SCAN_BATCH, SCAN_BYTES};
use crate::shard::Shard;
use crate::state::topics::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};

/// Where the check service starts: the saved progress, within the half queue.
pub(super) fn saved_progress(shard: &Shard) -> i64 {
    let min = shard.store.min_offset(TRANS_HALF_TOPIC, 0);
    let saved = {
        let offsets = shard.offsets.borrow();
        offsets
            .query(PROGRESS_GROUP, TRANS_HALF_TOPIC, 0)
            .or_else(|| offsets.query(OLD_PROGRESS_GROUP, TRANS_HALF_TOPIC, 0))
    };
    // Saved progress past the queue's end (its unflushed tail lost in a crash) would skip the half
    // messages stored from now on: start at the end then.
    let max = shard.store.max_offset(TRANS_HALF_TOPIC, 0);
    saved.unwrap_or(min).min(max).max(min)
}

/// A master again after being a slave (controller mode): while a slave, its log was cut back to
/// what the other master had and filled with that master's records, so the op set and progress
/// are read again, as at start.
pub(crate) async fn reload(shard: &Shard, state: &TxState) -> Result<(), String> {
    let ops = load_ops(shard).await?;
    let half_offset = saved_progress(shard);
    tracing::info!(
        "shard {}: master again: transactions: {} resolved, checking half messages from offset {half_offset}",
        shard.id,
        ops.len()
    );
    *state.ops.borrow_mut() = ops;
    state.half_offset.set(half_offset);
    Ok(())
}

/// Reads every op message of this shard's op queue.
pub(super) async fn load_ops(shard: &Shard) -> Result<OpSet, String> {
    let mut ops = OpSet::default();
    let store = &shard.store;
    let mut offset = store.min_offset(TRANS_OP_HALF_TOPIC, 0);
    while offset < store.max_offset(TRANS_OP_HALF_TOPIC, 0) {
        let got = store
            .get_messages(TRANS_OP_HALF_TOPIC, 0, offset, SCAN_BATCH, SCAN_BYTES, None)
            .await
            .map_err(|e| e.to_string())?;
        if got.records.is_empty() {
            if got.next_begin_offset > offset {
                offset = got.next_begin_offset;
                continue;
            }
            break;
        }
        for raw in &got.records {
            match decode_view(raw, false) {
                Ok(view) => {
                    match op_set::parse_op_body(view.body) {
                        Some(origin) => ops.mark(origin),
                        None => {
                            tracing::warn!("op message at {} has a bad body", view.queue_offset)
                        }
                    }
                    offset = offset.max(view.queue_offset.saturating_add(1));
                }
                Err(e) => {
                    tracing::warn!("undecodable op message near offset {offset}: {e}");
                    offset = offset.saturating_add(1);
                }
            }
        }
    }
    Ok(ops)
}

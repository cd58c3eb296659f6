//! The revive log: POP state changes as records of the revive topic `rmq_sys_REVIVE_LOG_<cluster>`
//! in this shard's own CommitLog, so they are durable exactly as messages are (group commit, the
//! broker's flushDiskType, replication to slaves). Bodies are JSON with RocketMQ's short names: a
//! check point (tag `ck`, `PopCheckPoint`), an ack (`ack`, `AckMsg`), a batch ack (`bAck`,
//! `BatchAckMsg`), and this broker's own ordered commit (`oc`: group, topic, queue, committed offset).
//! At start the log is replayed from the revive group's offset, which only moves past records whose
//! effects are all settled.

use std::rc::Rc;

use bytes::Bytes;
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use serde::{Deserialize, Serialize};

use super::checkpoint::{Ck, CkKey};
use super::{now_ms, revive_topic, QueueKey, REVIVE_GROUP, REVIVE_QUEUE};
use crate::shard::Shard;

const CK_TAG: &str = "ck";
const ACK_TAG: &str = "ack";
const BATCH_ACK_TAG: &str = "bAck";
const ORDER_COMMIT_TAG: &str = "oc";
/// Most messages a replayed check point may name.
const MAX_CK_MESSAGES: i32 = 1024;

/// A check point (`PopCheckPoint`): `so` start offset, `d` offsets as differences from it.
#[derive(Debug, Serialize, Deserialize)]
struct CkBody {
    so: i64,
    pt: i64,
    it: i64,
    #[serde(default)]
    bm: i64,
    n: i32,
    q: i32,
    t: String,
    c: String,
    #[serde(default)]
    ro: i64,
    #[serde(default)]
    d: Vec<i64>,
    #[serde(default)]
    bn: String,
}

/// An ack (`AckMsg`, `BatchAckMsg` with `aol`).
#[derive(Debug, Serialize, Deserialize)]
struct AckBody {
    #[serde(default)]
    ao: i64,
    so: i64,
    c: String,
    t: String,
    q: i32,
    pt: i64,
    #[serde(default)]
    bn: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aol: Vec<i64>,
}

/// An ordered commit: the group's consumer offset on the queue is now `o`.
#[derive(Debug, Serialize, Deserialize)]
struct OrderCommitBody {
    c: String,
    t: String,
    q: i32,
    o: i64,
}

/// Appends one record to this shard's revive queue; answers its offset there once stored (and
/// flushed, under SYNC_FLUSH).
async fn append(shard: &Shard, tag: &str, body: Vec<u8>) -> Result<i64, String> {
    let topic = revive_topic(&shard.cfg.broker_cluster_name);
    // The record lands at or after the queue's end now; replay must not start past it until the
    // caller has applied its effect (right after this returns, without an await in between).
    let pop_state = crate::feature::pop::state(shard);
    let _pending = pop_state.pending_append(shard.store.max_offset(&topic, REVIVE_QUEUE));
    let now = now_ms();
    let record = MessageRecord {
        topic,
        queue_id: REVIVE_QUEUE,
        body: Bytes::from(body),
        properties: properties::encode([(properties::TAGS, tag)]),
        born_timestamp: now,
        born_host: shard.store_host,
        store_host: shard.store_host,
        ..MessageRecord::default()
    };
    // Through the put request on this shard, so a SYNC_MASTER waits for its slave as for any put.
    let outcome = shard
        .on(shard.id)
        .put(vec![record])
        .await
        .map_err(|e| format!("writing the revive log failed: {e}"))?;
    outcome
        .stored
        .first()
        .map(|ok| ok.queue_offset)
        .ok_or_else(|| "writing the revive log stored nothing".to_owned())
}

/// Writes a check point for messages just popped; answers its revive-queue offset.
pub async fn append_ck(
    shard: &Shard,
    key: &CkKey,
    offsets: &[i64],
    invisible_time: i64,
) -> Result<i64, String> {
    let body = CkBody {
        so: key.start_offset,
        pt: key.pop_time,
        it: invisible_time,
        bm: 0,
        n: offsets.len() as i32,
        q: key.queue_id,
        t: key.topic.clone(),
        c: key.group.clone(),
        ro: 0,
        d: offsets.iter().map(|o| o - key.start_offset).collect(),
        bn: shard.broker.broker_name.clone(),
    };
    let json = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    append(shard, CK_TAG, json).await
}

/// Writes an ack of `offsets` of a check point.
pub async fn append_ack(shard: &Shard, key: &CkKey, offsets: &[i64]) -> Result<(), String> {
    let (tag, ao, aol) = match offsets {
        [one] => (ACK_TAG, *one, Vec::new()),
        many => (BATCH_ACK_TAG, -1, many.to_vec()),
    };
    let body = AckBody {
        ao,
        so: key.start_offset,
        c: key.group.clone(),
        t: key.topic.clone(),
        q: key.queue_id,
        pt: key.pop_time,
        bn: shard.broker.broker_name.clone(),
        aol,
    };
    let json = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    append(shard, tag, json).await.map(|_| ())
}

/// Writes an ordered commit of the group's consumer offset on a queue.
pub async fn append_order_commit(shard: &Shard, key: &QueueKey, offset: i64) -> Result<(), String> {
    let body = OrderCommitBody {
        c: key.group.clone(),
        t: key.topic.clone(),
        q: key.queue_id,
        o: offset,
    };
    let json = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    append(shard, ORDER_COMMIT_TAG, json).await.map(|_| ())
}

/// Replays the revive queue from the persisted start: open check points come back (with acks
/// applied), and pop positions move past everything popped or committed there.
pub async fn replay(shard: &Rc<Shard>) -> Result<(), String> {
    let topic = revive_topic(&shard.cfg.broker_cluster_name);
    let start = shard
        .offsets
        .borrow()
        .query(REVIVE_GROUP, &topic, REVIVE_QUEUE)
        .unwrap_or(0)
        .max(shard.store.min_offset(&topic, REVIVE_QUEUE));
    let end = shard.store.max_offset(&topic, REVIVE_QUEUE);
    let mut offset = start;
    let mut applied = 0usize;
    while offset < end {
        let result = shard
            .store
            .get_messages(&topic, REVIVE_QUEUE, offset, 256, 4 << 20, None)
            .await
            .map_err(|e| format!("reading the revive log failed: {e}"))?;
        if result.records.is_empty() {
            if result.next_begin_offset <= offset {
                break;
            }
            offset = result.next_begin_offset;
            continue;
        }
        for bytes in &result.records {
            match MessageRecord::decode(bytes, false) {
                Ok((record, _)) => {
                    apply(shard, &record);
                    applied += 1;
                }
                Err(e) => tracing::warn!("shard {}: revive log record unreadable: {e}", shard.id),
            }
        }
        offset = result.next_begin_offset.max(offset + 1);
    }
    let (cks, unacked) = {
        let pop_state = crate::feature::pop::state(shard);
        let cks = pop_state.cks.borrow();
        (cks.len(), cks.unacked_messages())
    };
    if applied > 0 {
        tracing::info!(
            "shard {}: revive log replayed from {start} to {end} ({applied} records): {cks} check points with {unacked} unacked messages",
            shard.id
        );
    }
    Ok(())
}

/// Applies one revive-log record to the in-memory state.
fn apply(shard: &Shard, record: &MessageRecord) {
    let tag = properties::get(&record.properties, properties::TAGS).unwrap_or("");
    match tag {
        CK_TAG => {
            let Ok(ck) = serde_json::from_slice::<CkBody>(&record.body) else {
                return;
            };
            // A check point holds one pop (at most 32 messages); anything larger is not ours.
            if ck.n < 0 || ck.n > MAX_CK_MESSAGES || ck.d.len() > MAX_CK_MESSAGES as usize {
                return;
            }
            let offsets: Vec<i64> = if ck.d.is_empty() {
                (0..i64::from(ck.n))
                    .map(|i| ck.so.saturating_add(i))
                    .collect()
            } else {
                ck.d.iter().map(|d| ck.so.saturating_add(*d)).collect()
            };
            let Some(last) = offsets.last().copied() else {
                return;
            };
            advance_position(shard, &ck.c, &ck.t, ck.q, last.saturating_add(1));
            let key = CkKey {
                group: ck.c,
                topic: ck.t,
                queue_id: ck.q,
                start_offset: ck.so,
                pop_time: ck.pt,
            };
            crate::feature::pop::state(shard)
                .cks
                .borrow_mut()
                .insert(Ck::new(key, offsets, ck.it, record.queue_offset));
        }
        ACK_TAG | BATCH_ACK_TAG => {
            let Ok(ack) = serde_json::from_slice::<AckBody>(&record.body) else {
                return;
            };
            let key = CkKey {
                group: ack.c,
                topic: ack.t,
                queue_id: ack.q,
                start_offset: ack.so,
                pop_time: ack.pt,
            };
            let pop_state = crate::feature::pop::state(shard);
            let mut cks = pop_state.cks.borrow_mut();
            if tag == ACK_TAG {
                cks.ack(&key, ack.ao);
            } else {
                for o in ack.aol {
                    cks.ack(&key, o);
                }
            }
        }
        ORDER_COMMIT_TAG => {
            if let Ok(oc) = serde_json::from_slice::<OrderCommitBody>(&record.body) {
                advance_position(shard, &oc.c, &oc.t, oc.q, oc.o);
            }
        }
        _ => {}
    }
}

/// Moves a group's pop position forward (never back).
fn advance_position(shard: &Shard, group: &str, topic: &str, queue_id: i32, offset: i64) {
    let mut offsets = shard.offsets.borrow_mut();
    if offsets
        .query(group, topic, queue_id)
        .is_none_or(|o| o < offset)
    {
        offsets.commit(group, topic, queue_id, offset);
    }
}

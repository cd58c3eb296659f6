//! Reviving (RocketMQ's `PopReviveService`): a check point whose invisible time passed with messages
//! unacked puts each of them, reconsumeTimes + 1, into the pop retry topic `%RETRY%group_topic` (or
//! back into the retry topic it came from), where the next pops find it; one that was already
//! consumed `retryMaxTimes` times (the group's, 16 by default) goes to `%DLQ%group` instead.

use std::rc::Rc;
use std::time::Duration;

use protocol::header::extra_info::{pop_retry_topic, RETRY_GROUP_TOPIC_PREFIX};
use protocol::message::properties;
use protocol::message::record::MessageRecord;

use super::checkpoint::Ck;
use super::now_ms;
use crate::common::group_settings;
use crate::shard::put::SendStatus;
use crate::shard::Shard;
use crate::state::topics::DLQ_GROUP_TOPIC_PREFIX;

/// How often due check points are looked for.
const TICK: Duration = Duration::from_millis(100);
/// Check points revived per tick at most (the rest wait for the next tick).
const BATCH: usize = 256;
/// A revive that failed (store full, topic creation refused) is tried again this much later.
const RETRY_LATER_MS: i64 = 5_000;

/// At start, before the shard serves: rebuilds check points, ordered commits and pop positions from
/// the revive log, then starts reviving.
pub async fn start(shard: &Rc<Shard>) -> Result<(), String> {
    if shard.role() == crate::config::BrokerRole::Slave {
        // A slave's store is the master's copy: only the master pops and revives (as in Apache).
        return Ok(());
    }
    super::revive_log::replay(shard).await?;
    let shard = shard.clone();
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(TICK).await;
            if shard.shutting_down.get() {
                return;
            }
            // Controller mode makes a master a slave and back while this task runs (it starts
            // once): a slave's puts are refused, and its master revives.
            if shard.role() == crate::config::BrokerRole::Slave {
                continue;
            }
            revive_due(&shard).await;
        }
    })
    .detach();
    Ok(())
}

/// Master again (controller mode): the check points, acks and pop positions in memory are those of
/// this shard's earlier term, while the log it replicated as a slave holds the other master's. The
/// state is rebuilt from the revive log as at start: the check points the other master left open
/// come back, its acks and revives apply, pop positions move past what it popped.
pub async fn reload(shard: &Rc<Shard>) {
    {
        let pop_state = crate::feature::pop::state(shard);
        *pop_state.cks.borrow_mut() = Default::default();
        // Ordered pops' batches are not in the log (a restart forgets them too); the other master's
        // ordered commits are, as pop positions.
        *pop_state.orders.borrow_mut() = Default::default();
    }
    match super::revive_log::replay(shard).await {
        Ok(()) => tracing::info!(
            "shard {}: master again: POP state read again from the revive log",
            shard.id
        ),
        Err(e) => tracing::error!(
            "shard {}: master again: POP state not read again: {e}",
            shard.id
        ),
    }
}

async fn revive_due(shard: &Rc<Shard>) {
    let now = now_ms();
    let due = crate::feature::pop::state(shard)
        .cks
        .borrow()
        .due(now, BATCH);
    for key in due {
        let Some(ck) = crate::feature::pop::state(shard)
            .cks
            .borrow()
            .get(&key)
            .cloned()
        else {
            continue;
        };
        match revive(shard, &ck).await {
            Ok(()) => {
                crate::feature::pop::state(shard)
                    .cks
                    .borrow_mut()
                    .remove(&key);
            }
            Err(why) => {
                tracing::warn!(
                    "shard {}: reviving {}@{} queue {} from {} failed, retrying later: {why}",
                    shard.id,
                    key.topic,
                    key.group,
                    key.queue_id,
                    key.start_offset
                );
                crate::feature::pop::state(shard)
                    .cks
                    .borrow_mut()
                    .postpone(&key, now + RETRY_LATER_MS);
            }
        }
        if shard.shutting_down.get() {
            return;
        }
    }
}

/// Puts every still-unacked message of `ck` into its retry (or dead-letter) topic.
async fn revive(shard: &Rc<Shard>, ck: &Ck) -> Result<(), String> {
    let group = &ck.key.group;
    let max_times = group_settings::find(shard, group)
        .await
        .map_or(16, |g| g.retry_max_times);
    let mut revived = Vec::new();
    for offset in ck.unacked().collect::<Vec<_>>() {
        // Acked while an earlier message of the check point was being revived.
        let still_open = crate::feature::pop::state(shard)
            .cks
            .borrow()
            .get(&ck.key)
            .is_some_and(|c| c.is_unacked(offset));
        if !still_open {
            continue;
        }
        let Some(original) = read(shard, &ck.key.topic, ck.key.queue_id, offset).await? else {
            // Gone (retention removed it): nothing left to deliver.
            continue;
        };
        let to_dlq = original.reconsume_times >= max_times;
        let topic = if to_dlq {
            format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
        } else if ck.key.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            ck.key.topic.clone()
        } else {
            pop_retry_topic(&ck.key.topic, group)
        };
        crate::state::topics::validate_topic_name(&topic)?;
        crate::common::topic_create::ensure_retry_topic(shard, &topic, to_dlq)
            .await
            .map_err(|r| r.remark.unwrap_or_else(|| format!("cannot create {topic}")))?;
        let record = retry_record(shard, ck, original, topic, to_dlq);
        let owner = shard.owner(&record.topic, record.queue_id);
        match owner.put(vec![record]).await {
            Ok(outcome) if outcome.status == SendStatus::SendOk => {}
            // Stored; only the flush or the slave was late: a second copy would be a duplicate.
            Ok(outcome) if !outcome.stored.is_empty() => {}
            Ok(outcome) => return Err(outcome.status.describe().to_owned()),
            Err(e) => return Err(e.to_string()),
        }
        // Settled in memory now, so a failure later in this check point does not revive it twice.
        crate::feature::pop::state(shard)
            .cks
            .borrow_mut()
            .ack(&ck.key, offset);
        revived.push(offset);
    }
    if !revived.is_empty() {
        // Settled in the log too: a replay (after a crash) does not revive them again, however far
        // back an older open check point keeps the replay start.
        if let Err(why) = super::revive_log::append_ack(shard, &ck.key, &revived).await {
            tracing::warn!(
                "shard {}: revived messages not marked in the revive log: {why}",
                shard.id
            );
        }
    }
    Ok(())
}

async fn read(
    shard: &Shard,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Result<Option<MessageRecord>, String> {
    let result = shard
        .store
        .get_messages(topic, queue_id, offset, 1, 64 << 20, None)
        .await
        .map_err(|e| format!("reading {topic}:{queue_id}@{offset} failed: {e}"))?;
    match result.records.first() {
        Some(bytes) => MessageRecord::decode(bytes, false)
            .map(|(r, _)| Some(r))
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// The copy of a message that goes back for another try (or to the dead-letter topic).
fn retry_record(
    shard: &Shard,
    ck: &Ck,
    original: MessageRecord,
    topic: String,
    to_dlq: bool,
) -> MessageRecord {
    let mut props = properties::without(&original.properties, properties::POP_CK);
    props = properties::without(&props, properties::DELAY);
    if original.reconsume_times == 0
        || properties::get(&props, properties::FIRST_POP_TIME).is_none()
    {
        props = properties::with(
            &props,
            properties::FIRST_POP_TIME,
            &ck.key.pop_time.to_string(),
        );
    }
    if to_dlq && properties::get(&props, properties::RETRY_TOPIC).is_none() {
        let origin = ck
            .key
            .topic
            .strip_prefix(&format!("{RETRY_GROUP_TOPIC_PREFIX}{}_", ck.key.group))
            .unwrap_or(&ck.key.topic)
            .to_owned();
        props = properties::with(&props, properties::RETRY_TOPIC, &origin);
    }
    MessageRecord {
        topic,
        queue_id: 0,
        properties: props,
        reconsume_times: original.reconsume_times.saturating_add(1),
        born_host: shard.store_host,
        store_host: shard.store_host,
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp: 0,
        prepared_transaction_offset: 0,
        ..original
    }
}

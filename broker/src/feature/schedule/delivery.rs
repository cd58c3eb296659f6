//! The delivery task of one delay level: reads the level's schedule queue from its delivery offset,
//! puts every due record to its real topic and queue (through the owner's store, like a send), then
//! advances the offset. Between rounds it sleeps until the head unit is due, or, when the level is
//! empty, until a unit arrives. A unit due later than now + the level's delay (stored while the wall
//! clock ran ahead, or the clock stepped back since) is due at once, as in RocketMQ, so it cannot hold
//! back the units behind it for as long as the clock was off.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use protocol::message::record::MessageRecord;
use storage::{GetMessageStatus, PutError};

use crate::shard::mesh::join_all;
use crate::shard::put::{PutError as OwnerPutError, SendStatus};
use crate::shard::Shard;
use crate::state::topics::{now_ms, SCHEDULE_TOPIC};

/// Units read per round.
const BATCH: i32 = 512;
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// After a failed put (busy store, unreachable shard): try the same units again after this.
const RETRY_AFTER: Duration = Duration::from_millis(200);
/// An idle level re-reads its queue at least this often (arrivals wake it earlier).
const IDLE_RECHECK: Duration = Duration::from_secs(30);
/// Longest sleep before a due time is compared with the wall clock again: due times are wall-clock
/// times, and a sleep is monotonic, so a step of the wall clock is followed within this.
pub const WALL_CLOCK_RECHECK: Duration = Duration::from_secs(1);

/// What a round found.
enum Step {
    /// Delivered or skipped something: read again at once.
    More,
    /// The next unit is due at this time (ms).
    DueAt(i64),
    /// Nothing to read.
    Idle,
    /// A put failed: retry the same units later.
    Retry,
}

/// The time a unit is due (ms): its stored due time (tagsCode), or `now` when that lies more than the
/// level's delay ahead, which no unit stored on a steady clock can (RocketMQ's
/// `correctDeliverTimestamp`). A level's queue is delivered in order, so without this one unit stored
/// while the clock was ahead would hold back every later unit of its level.
pub(crate) fn effective_due(now: i64, stored_due: i64, level_delay_ms: i64) -> i64 {
    if stored_due > now.saturating_add(level_delay_ms) {
        now
    } else {
        stored_due
    }
}

/// A level's delay in ms from `messageDelayLevel` (i64::MAX, no correction, if it cannot be read).
fn level_delay_ms(shard: &Shard, level: i32) -> i64 {
    let delays = shard.cfg.delay_levels_ms().unwrap_or_default();
    usize::try_from(level - 1)
        .ok()
        .and_then(|i| delays.get(i).copied())
        .and_then(|ms| i64::try_from(ms).ok())
        .unwrap_or(i64::MAX)
}

pub async fn run_level(shard: Rc<Shard>, level: i32) {
    let queue_id = level - 1;
    let delay_ms = level_delay_ms(&shard, level);
    tracing::debug!("shard {}: delivering delay level {level}", shard.id);
    loop {
        if crate::feature::schedule::state::schedule(&shard).stopping() || shard.shutting_down.get()
        {
            return;
        }
        // Registered before the read, so an arrival during the read is not missed.
        let arrival = crate::feature::long_poll::waiters(&shard).register(SCHEDULE_TOPIC, queue_id);
        crate::feature::schedule::state::schedule(&shard).enter();
        let step = round(&shard, level, delay_ms).await;
        crate::feature::schedule::state::schedule(&shard).leave();
        match step {
            Step::More => {}
            Step::DueAt(due) => {
                let wait =
                    Duration::from_millis(u64::try_from(due.saturating_sub(now_ms())).unwrap_or(0))
                        .min(WALL_CLOCK_RECHECK);
                // New units of a level fall due after the head (same delay, later store time), so
                // arrivals cannot change when to look next: only the timer matters.
                drop(arrival);
                if !wait.is_zero() {
                    glommio::timer::sleep(wait).await;
                }
            }
            Step::Idle => {
                futures_lite::future::or(arrival, glommio::timer::sleep(IDLE_RECHECK)).await
            }
            Step::Retry => glommio::timer::sleep(RETRY_AFTER).await,
        }
    }
}

/// One read-and-deliver round of a level.
async fn round(shard: &Rc<Shard>, level: i32, delay_ms: i64) -> Step {
    let queue_id = level - 1;
    let Some(offset) = crate::feature::schedule::state::schedule(shard).next_offset(level) else {
        return Step::Idle;
    };
    let now = now_ms();
    let stop = Cell::new(false);
    let first_not_due = Cell::new(None);
    // tagsCode of a schedule unit is its due time; take the due prefix only.
    let due = |tags_code: i64| {
        if stop.get() {
            return false;
        }
        let due_at = effective_due(now, tags_code, delay_ms);
        if due_at <= now {
            return true;
        }
        stop.set(true);
        first_not_due.set(Some(due_at));
        false
    };
    let got = match shard
        .store
        .get_messages(
            SCHEDULE_TOPIC,
            queue_id,
            offset,
            BATCH,
            BATCH_BYTES,
            Some(&due),
        )
        .await
    {
        Ok(got) => got,
        Err(e) => {
            tracing::warn!("delay level {level}: cannot read offset {offset}: {e}");
            return Step::Retry;
        }
    };
    if !got.records.is_empty() {
        return deliver(shard, level, offset, got.records).await;
    }
    if let Some(due_at) = first_not_due.get() {
        return Step::DueAt(due_at);
    }
    match got.status {
        GetMessageStatus::OffsetTooSmall
        | GetMessageStatus::OffsetFoundNull
        | GetMessageStatus::MessageWasRemoving
        | GetMessageStatus::NoMatchedMessage
            if got.next_begin_offset > offset =>
        {
            // Units gone (retention) or unreadable: nothing left to deliver there.
            crate::feature::schedule::state::schedule(shard).advance(
                level,
                got.next_begin_offset,
                Vec::new(),
            );
            Step::More
        }
        GetMessageStatus::OffsetOverflowBadly => {
            tracing::warn!(
                "delay level {level}: offset {offset} is past the queue's end {}; correcting",
                got.max_offset
            );
            crate::feature::schedule::state::schedule(shard).reset_next(level, got.max_offset);
            Step::More
        }
        _ => Step::Idle,
    }
}

/// How one record's delivery ended.
#[derive(Clone, Copy)]
pub(crate) enum Outcome {
    /// Stored: the target shard and the physical end it must flush.
    Stored(Option<(usize, i64)>),
    /// Can never be delivered (no destination, refused by the store): skipped.
    Skipped,
    /// Try again later.
    Failed,
}

async fn deliver(shard: &Rc<Shard>, level: i32, offset: i64, records: Vec<bytes::Bytes>) -> Step {
    // (queue offset of the parked unit, rebuilt record or why not)
    let mut items: Vec<(i64, Result<MessageRecord, String>)> = Vec::with_capacity(records.len());
    let mut last = offset.saturating_sub(1);
    for bytes in &records {
        let item = match MessageRecord::decode(bytes, false) {
            Ok((parked, _)) => {
                let at = parked.queue_offset.max(last.saturating_add(1));
                (
                    at,
                    super::park::unpark(
                        parked,
                        shard.store_host,
                        &[protocol::message::properties::DELAY],
                    ),
                )
            }
            Err(e) => (
                last.saturating_add(1),
                Err(format!("undecodable record: {e}")),
            ),
        };
        last = item.0;
        items.push(item);
    }
    let offsets_of: Vec<i64> = items.iter().map(|(at, _)| *at).collect();
    let label = format!("delay level {level}");
    let outcomes = put_restored(shard, &label, items).await;
    // Advance over the delivered prefix; stop at the first failure (later successes repeat: allowed).
    let mut next = offset;
    let mut marks: Vec<(usize, i64)> = Vec::new();
    let mut failed = false;
    for (outcome, at) in outcomes.iter().zip(offsets_of.iter()) {
        match outcome {
            Outcome::Failed => {
                failed = true;
                break;
            }
            Outcome::Stored(mark) => {
                if let Some((s, end)) = mark {
                    match marks.iter_mut().find(|(t, _)| t == s) {
                        Some((_, e)) => *e = (*e).max(*end),
                        None => marks.push((*s, *end)),
                    }
                }
                next = at.saturating_add(1);
            }
            Outcome::Skipped => next = at.saturating_add(1),
        }
    }
    crate::feature::schedule::state::schedule(shard).advance(level, next, marks);
    if failed {
        Step::Retry
    } else {
        Step::More
    }
}

/// Puts restored records (each with the queue offset of its parked unit, or why it cannot be
/// delivered) to their real queues' owners: records for the same queue in one put, in order; different
/// queues concurrently. Shared by the delay levels and the timer; `label` names the caller in logs.
pub(crate) async fn put_restored(
    shard: &Rc<Shard>,
    label: &str,
    items: Vec<(i64, Result<MessageRecord, String>)>,
) -> Vec<Outcome> {
    let mut groups: Vec<((String, i32), Vec<usize>)> = Vec::new();
    for (i, (_, rec)) in items.iter().enumerate() {
        if let Ok(rec) = rec {
            let key = (rec.topic.clone(), rec.queue_id);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(i),
                None => groups.push((key, vec![i])),
            }
        }
    }
    let mut outcomes: Vec<Outcome> = items
        .iter()
        .map(|(at, rec)| match rec {
            Ok(_) => Outcome::Failed,
            Err(why) => {
                tracing::error!("{label}: unit {at} cannot be delivered: {why}; skipped");
                Outcome::Skipped
            }
        })
        .collect();
    let mut records_by_index: Vec<Option<MessageRecord>> =
        items.into_iter().map(|(_, r)| r.ok()).collect();
    let puts = groups.iter().map(|((topic, queue_id), members)| {
        let owner = shard.owner(topic, *queue_id);
        let batch: Vec<MessageRecord> = members
            .iter()
            .filter_map(|i| records_by_index.get_mut(*i).and_then(Option::take))
            .collect();
        async move { (owner.id(), owner.put(batch).await) }
    });
    let results = join_all(puts.collect::<Vec<_>>()).await;
    for ((_, members), (owner, result)) in groups.iter().zip(results) {
        let outcome = match result {
            Ok(put) if put.status == SendStatus::SendOk => {
                for (i, ok) in members.iter().zip(put.stored.iter()) {
                    if let Some(o) = outcomes.get_mut(*i) {
                        *o = Outcome::Stored(Some((
                            owner,
                            ok.physical_offset.saturating_add(i64::from(ok.size)),
                        )));
                    }
                }
                continue;
            }
            // Written, only its sync is late: it is in the log.
            Ok(put) if put.status == SendStatus::FlushDiskTimeout => Outcome::Stored(None),
            // SYNC_MASTER without a slave's ack: delivered again later, as RocketMQ does.
            Ok(put) => {
                let why = put.status.describe();
                tracing::warn!("{label}: delivery not confirmed ({why}); retrying");
                Outcome::Failed
            }
            Err(OwnerPutError::Store(
                e @ (PutError::MessageTooLarge { .. } | PutError::Illegal(_)),
            )) => {
                tracing::error!("{label}: the store refused a due message ({e}); skipped");
                Outcome::Skipped
            }
            Err(e) => {
                tracing::warn!("{label}: delivery failed ({e}); retrying");
                Outcome::Failed
            }
        };
        for i in members {
            if let Some(o) = outcomes.get_mut(*i) {
                *o = outcome;
            }
        }
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::effective_due;

    const NOW: i64 = 1_000_000_000;

    #[test]
    fn a_due_time_within_the_level_delay_is_kept() {
        assert_eq!(effective_due(NOW, NOW - 5, 1000), NOW - 5);
        assert_eq!(effective_due(NOW, NOW + 400, 1000), NOW + 400);
        assert_eq!(effective_due(NOW, NOW + 1000, 1000), NOW + 1000);
    }

    #[test]
    fn a_due_time_beyond_now_plus_the_level_delay_is_due_now() {
        // Stored with the clock 60 s ahead, level 1 s: due now, not in 61 s.
        assert_eq!(effective_due(NOW, NOW + 61_000, 1000), NOW);
        assert_eq!(effective_due(NOW, NOW + 1001, 1000), NOW);
        assert_eq!(effective_due(NOW, i64::MAX, 1000), NOW);
    }

    #[test]
    fn an_unknown_level_delay_corrects_nothing() {
        assert_eq!(effective_due(NOW, NOW + 61_000, i64::MAX), NOW + 61_000);
    }
}

//! Timer messages (RocketMQ 5's TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS): such a message
//! is parked in `rmq_sys_wheel_timer` with its real topic and queue and its due time (`TIMER_OUT_MS`)
//! in properties, on the timer queue owned by the shard that owns its real queue. Each shard runs one
//! task over its timer queue: it reads arrivals into an in-memory index ordered by due time (`index`),
//! sleeps until the earliest is due, and puts due messages to their real queues (the delay levels' put
//! code). Progress is a low watermark per timer queue, persisted once the delivered copies are flushed.
//! A slave copies its master's watermarks (`checkpoint`) so that, promoted, it does not deliver again
//! what the master delivered.

pub mod checkpoint;
pub mod index;
pub mod recall;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::message::edited_properties::EditedProperties;
use protocol::message::properties;
use protocol::message::record::{sys_flag, MessageRecord};
use storage::GetMessageStatus;

use crate::feature::schedule::delivery::{put_restored, Outcome, WALL_CLOCK_RECHECK};
use crate::shard::Shard;
use crate::state::topics::now_ms;
use index::TimerIndex;

pub use crate::state::topics::TIMER_TOPIC;
pub use protocol::message::properties::{
    TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS, TIMER_OUT_MS,
};

/// Units read, or timers delivered, per round.
const BATCH: i32 = 512;
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// After a failed read or put: try again after this.
const RETRY_AFTER_MS: i64 = 200;
/// How often the watermark is written when it moved (also the repeat window after a crash).
const PERSIST_INTERVAL: Duration = Duration::from_millis(500);
/// An idle timer queue is re-read at least this often (arrivals wake it earlier).
const IDLE_RECHECK: Duration = Duration::from_secs(30);
/// How often a master turned slave looks whether it is master again.
const SLAVE_RECHECK: Duration = Duration::from_millis(200);

/// The timer queue owned by shard `shard` (the first queue id that maps to it).
pub fn queue_of(shard: &Shard, owner: usize) -> i32 {
    let n = i32::try_from(shard.shards).unwrap_or(i32::MAX).max(1);
    (0..n)
        .find(|q| shard.owner_of(TIMER_TOPIC, *q) == owner)
        .unwrap_or(0)
}

/// Parks a timer message (RocketMQ 5's `HookUtils.handleScheduleMessage` rules): TIMER_DELAY_SEC wins
/// over TIMER_DELAY_MS over TIMER_DELIVER_MS; a DELAY level wins over all three (they are removed);
/// a time not after `now` is stored at once; one more than `max_delay_sec` ahead is refused (Err, the
/// remark for MESSAGE_ILLEGAL). `timer_queue` maps the real queue's owner to its timer queue. The
/// record's properties are `props`, encoded once by the caller after every feature has edited them.
pub fn park_timed<'a>(
    record: &mut MessageRecord,
    props: &mut EditedProperties<'a>,
    enabled: bool,
    max_delay_sec: u64,
    now: i64,
    timer_queue: impl Fn(&str, i32) -> i32,
) -> Result<(), String> {
    let kind = sys_flag::transaction_type(record.sys_flag);
    let asked = [TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS]
        .iter()
        .any(|k| props.get(k).is_some());
    if !asked
        || (kind != sys_flag::TRANSACTION_NOT_TYPE && kind != sys_flag::TRANSACTION_COMMIT)
        || record.topic == TIMER_TOPIC
        || props.get(TIMER_OUT_MS).is_some()
    {
        return Ok(());
    }
    if crate::feature::schedule::park::delay_level_in(props) > 0 {
        for k in [TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS] {
            props.remove(k);
        }
        return Ok(());
    }
    if !enabled {
        return Ok(());
    }
    let num = |k: &str| -> Option<Result<i64, String>> {
        props.get(k).map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| format!("timer message illegal: {k} {v:?} is not a number"))
        })
    };
    let deliver_ms = if let Some(sec) = num(TIMER_DELAY_SEC) {
        now.saturating_add(sec?.saturating_mul(1000))
    } else if let Some(ms) = num(TIMER_DELAY_MS) {
        now.saturating_add(ms?)
    } else if let Some(at) = num(TIMER_DELIVER_MS) {
        at?
    } else {
        return Ok(());
    };
    if deliver_ms <= now {
        return Ok(());
    }
    let max_ms = i64::try_from(max_delay_sec)
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    if deliver_ms - now > max_ms {
        return Err(format!(
            "timer message illegal, the delay time should not be bigger than the max delay {max_ms}ms"
        ));
    }
    let queue_id = timer_queue(&record.topic, record.queue_id);
    props.set_number(TIMER_OUT_MS, deliver_ms);
    // The real topic moves into the property (no copy); the record takes the timer topic.
    let real_topic = std::mem::replace(&mut record.topic, TIMER_TOPIC.to_owned());
    props.set(properties::REAL_TOPIC, real_topic);
    props.set_number(properties::REAL_QUEUE_ID, i64::from(record.queue_id));
    record.queue_id = queue_id;
    Ok(())
}

/// `config/timerWatermark.<queue>`; when every shard is a broker with timer queues of its own (each
/// uses queue 0), `config/timerWatermark-<shard>.<queue>`, so shards never share a file.
fn watermark_path(root: &Path, shard: Option<usize>, queue_id: i32) -> PathBuf {
    let name = match shard {
        Some(id) => format!("timerWatermark-{id}.{queue_id}"),
        None => format!("timerWatermark.{queue_id}"),
    };
    root.join("config").join(name)
}

/// The persisted watermark of a timer queue (0 when none: everything is delivered again).
fn load_watermark(path: &Path) -> i64 {
    match crate::state::persist::read_optional(path) {
        Ok(None) => 0,
        Ok(Some(bytes)) => match std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            Some(w) => w,
            None => {
                tracing::error!(
                    "{} is unreadable; delivering its timer queue from the start",
                    path.display()
                );
                0
            }
        },
        Err(e) => {
            tracing::error!(
                "cannot read {} ({e}); delivering its timer queue from the start",
                path.display()
            );
            0
        }
    }
}

/// A slave: takes the watermark of its timer queue copied from the master (whose log it has
/// replicated past every delivered copy below it), so that, promoted, it starts there. Its own timer
/// task, if it has one from its days as master, reads the file again when master again. Not when
/// the shard changed role or master since the copy (`term`): its log may be another master's now.
pub async fn install_watermark(shard: &Shard, queue_id: i32, watermark: i64, term: u64) {
    if shard.role() != crate::config::BrokerRole::Slave
        || crate::replication::ha::term(shard) != term
    {
        return;
    }
    let mine = queue_of(shard, shard.id);
    if queue_id != mine {
        tracing::warn!(
            "shard {}: the master's timer queue {queue_id} is not this shard's ({mine}); ignored",
            shard.id
        );
        return;
    }
    let progress = checkpoint::progress(shard);
    if progress.installed.get() == Some(watermark) {
        return;
    }
    let path = watermark_path(
        &shard.cfg.store_path_root_dir,
        shard.is_broker.then_some(shard.id),
        queue_id,
    );
    match crate::state::persist::write_atomic_off_thread(
        path.clone(),
        watermark.to_string().into_bytes(),
    )
    .await
    {
        Ok(()) => {
            progress.installed.set(Some(watermark));
            tracing::debug!(
                "shard {}: timer queue {queue_id} watermark {watermark} copied from the master",
                shard.id
            );
        }
        Err(e) => tracing::warn!("cannot write {}: {e}", path.display()),
    }
}

/// Starts this shard's timer task (a master only; parked messages of a disabled timer are still
/// delivered). Call once per shard after it is serving.
pub fn start(shard: &Rc<Shard>) {
    if shard.role() == crate::config::BrokerRole::Slave {
        return;
    }
    let queue_id = queue_of(shard, shard.id);
    // Same scheduling as the delay levels: a due timer is not stuck behind request tasks.
    let tq = glommio::executor().create_task_queue(
        glommio::Shares::Static(4000),
        glommio::Latency::Matters(Duration::from_millis(5)),
        "timer-delivery",
    );
    let task = run(shard.clone(), queue_id);
    match glommio::spawn_local_into(task, tq) {
        Ok(t) => t.detach(),
        Err(e) => {
            tracing::warn!("timer: no delivery task queue ({e}); using the default");
            glommio::spawn_local(run(shard.clone(), queue_id)).detach()
        }
    };
}

async fn run(shard: Rc<Shard>, queue_id: i32) {
    let path = watermark_path(
        &shard.cfg.store_path_root_dir,
        shard.is_broker.then_some(shard.id),
        queue_id,
    );
    let mut written = load_watermark(&path);
    let mut index = TimerIndex::new(written);
    let progress = checkpoint::progress(&shard);
    progress.persisted.set(Some((queue_id, written)));
    progress.installed.set(None);
    let mut last_persist = Instant::now();
    tracing::info!(
        "shard {}: timer queue {queue_id} from offset {written}",
        shard.id
    );
    let mut was_slave = false;
    loop {
        if crate::feature::schedule::state::schedule(&shard).stopping() || shard.shutting_down.get()
        {
            return;
        }
        // Controller mode turns a master into a slave and back while this task runs (the master
        // services start once). A slave's puts are refused: wait for the role rather than retry
        // every due timer. Master again, its log was cut back to the other master's and refilled
        // from it, so units may sit at offsets this index holds for others (whose due times they
        // would be delivered at) or below its scan position: read the queue again from the
        // watermark, as at start (what the other master delivered since is delivered again).
        if shard.role() == crate::config::BrokerRole::Slave {
            was_slave = true;
            progress.persisted.set(None);
            progress.next_due.set(None);
            glommio::timer::sleep(SLAVE_RECHECK).await;
            continue;
        }
        if was_slave {
            was_slave = false;
            written = load_watermark(&path);
            index = TimerIndex::new(written);
            progress.persisted.set(Some((queue_id, written)));
            last_persist = Instant::now();
            tracing::info!(
                "shard {}: master again: timer queue {queue_id} read again from offset {written}",
                shard.id
            );
        }
        // Registered before the read, so an arrival during the read is not missed.
        let arrival = crate::feature::long_poll::waiters(&shard).register(TIMER_TOPIC, queue_id);
        crate::feature::schedule::state::schedule(&shard).enter();
        let more = scan(&shard, queue_id, &mut index).await;
        // Nothing is delivered before the scan has caught up: a recall marker is always read before
        // the message it cancels falls due (after a restart the queue is read again from the
        // watermark, and markers sit above their messages).
        let delivered = if more || crate::feature::schedule::state::schedule(&shard).stopping() {
            false
        } else {
            deliver_due(&shard, queue_id, &mut index).await
        };
        if last_persist.elapsed() >= PERSIST_INTERVAL {
            last_persist = Instant::now();
            settle(&shard, &mut index).await;
            let w = index.watermark();
            if w != written {
                match crate::state::persist::write_atomic_off_thread(
                    path.clone(),
                    w.to_string().into_bytes(),
                )
                .await
                {
                    Ok(()) => {
                        tracing::trace!(
                            "timer queue {queue_id}: {} pending, watermark {w}",
                            index.pending()
                        );
                        written = w;
                        progress.persisted.set(Some((queue_id, w)));
                        progress.installed.set(None);
                    }
                    Err(e) => tracing::error!("cannot persist {}: {e}", path.display()),
                }
            }
        }
        crate::feature::schedule::state::schedule(&shard).leave();
        progress.next_due.set(index.next_due());
        if more || delivered {
            continue;
        }
        let mut wait = IDLE_RECHECK;
        if let Some(due) = index.next_due() {
            let ms = u64::try_from(due.saturating_sub(now_ms())).unwrap_or(0);
            wait = wait.min(Duration::from_millis(ms)).min(WALL_CLOCK_RECHECK);
        }
        // Progress to settle or write: come back for it within the persist interval, not only at
        // the next arrival or due time (which bounds the repeats after a crash).
        if index.watermark() != written || index.has_unsettled() {
            wait = wait.min(PERSIST_INTERVAL.saturating_sub(last_persist.elapsed()));
        }
        if !wait.is_zero() {
            futures_lite::future::or(arrival, glommio::timer::sleep(wait)).await;
        }
    }
}

/// Reads newly parked units into the index. True when a full batch was read (read again at once).
async fn scan(shard: &Shard, queue_id: i32, index: &mut TimerIndex) -> bool {
    let from = index.scan_next();
    let got = match shard
        .store
        .get_messages(TIMER_TOPIC, queue_id, from, BATCH, BATCH_BYTES, None)
        .await
    {
        Ok(got) => got,
        Err(e) => {
            tracing::warn!("timer queue {queue_id}: cannot read offset {from}: {e}");
            return false;
        }
    };
    if got.records.is_empty() {
        match got.status {
            GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetFoundNull
            | GetMessageStatus::MessageWasRemoving
            | GetMessageStatus::NoMatchedMessage
                if got.next_begin_offset > from =>
            {
                index.set_scan_next(got.next_begin_offset);
                return true;
            }
            GetMessageStatus::OffsetOverflowBadly => {
                tracing::warn!(
                    "timer queue {queue_id}: offset {from} is past the queue's end {}; correcting",
                    got.max_offset
                );
                index.set_scan_next(got.max_offset);
            }
            _ => {}
        }
        return false;
    }
    let full = got.records.len() >= BATCH as usize;
    let mut last = from.saturating_sub(1);
    let recalls = recall::recalls(shard);
    for bytes in &got.records {
        // An undecodable unit is "due now": its delivery finds it unreadable and skips it.
        let (offset, due, marker) = match MessageRecord::decode(bytes, false) {
            Ok((rec, _)) => {
                let due = properties::get(&rec.properties, TIMER_OUT_MS)
                    .and_then(|v| v.trim().parse::<i64>().ok())
                    .unwrap_or(0);
                if let Some(key) = recall::marker_key(&rec) {
                    recalls.note(key, due);
                }
                (
                    rec.queue_offset.max(last.saturating_add(1)),
                    due,
                    recall::marker_key(&rec).is_some(),
                )
            }
            Err(_) => (last.saturating_add(1), 0, false),
        };
        last = offset;
        if marker {
            // Read, never delivered: nothing to wait for.
            if offset >= index.scan_next() {
                index.set_scan_next(offset.saturating_add(1));
            }
        } else {
            index.add(due, offset);
        }
    }
    index.set_scan_next(index.scan_next().max(got.next_begin_offset));
    full
}

/// The parked unit at `offset`: Ok(None) when it is gone or unreadable (never deliverable).
async fn read_one(
    shard: &Shard,
    queue_id: i32,
    offset: i64,
) -> Result<Result<MessageRecord, String>, String> {
    let got = shard
        .store
        .get_messages(TIMER_TOPIC, queue_id, offset, 1, BATCH_BYTES, None)
        .await
        .map_err(|e| e.to_string())?;
    let Some(bytes) = got.records.first() else {
        return Ok(Err(format!("unit gone ({:?})", got.status)));
    };
    Ok(match MessageRecord::decode(bytes, false) {
        Ok((rec, _)) if rec.queue_offset == offset => {
            super::schedule::park::unpark(
                rec,
                shard.store_host,
                // RocketMQ's timer drops these on delivery; TIMER_OUT_MS stays.
                &[properties::REAL_TOPIC, properties::REAL_QUEUE_ID],
            )
        }
        Ok(_) => Err("unit gone".to_owned()),
        Err(e) => Err(format!("undecodable record: {e}")),
    })
}

/// Delivers the due timers. True when a full batch was due (look again at once).
async fn deliver_due(shard: &Rc<Shard>, queue_id: i32, index: &mut TimerIndex) -> bool {
    let now = now_ms();
    let due = index.take_due(now, BATCH as usize);
    recall::recalls(shard).prune(now, due.first().map(|(d, _)| *d).or(index.next_due()));
    if due.is_empty() {
        return false;
    }
    let full = due.len() >= BATCH as usize;
    let mut items = Vec::with_capacity(due.len());
    let recalls = recall::recalls(shard);
    for (_, offset) in &due {
        match read_one(shard, queue_id, *offset).await {
            Ok(Ok(rec)) if recalls.take_if_recalled(&rec) => {
                tracing::debug!("timer queue {queue_id}: unit {offset} was recalled; skipped");
                index.skipped(*offset);
            }
            Ok(item) => items.push((*offset, item)),
            Err(e) => {
                tracing::warn!("timer queue {queue_id}: cannot read offset {offset}: {e}");
                index.retry(now.saturating_add(RETRY_AFTER_MS), *offset);
            }
        }
    }
    let offsets: Vec<i64> = items.iter().map(|(o, _)| *o).collect();
    let label = format!("timer queue {queue_id}");
    let outcomes = put_restored(shard, &label, items).await;
    let mut stored = Vec::new();
    let mut marks: Vec<(usize, i64)> = Vec::new();
    for (offset, outcome) in offsets.into_iter().zip(outcomes) {
        match outcome {
            Outcome::Stored(mark) => {
                if let Some((s, end)) = mark {
                    match marks.iter_mut().find(|(t, _)| *t == s) {
                        Some((_, e)) => *e = (*e).max(end),
                        None => marks.push((s, end)),
                    }
                }
                stored.push(offset);
            }
            Outcome::Skipped => index.skipped(offset),
            Outcome::Failed => index.retry(now.saturating_add(RETRY_AFTER_MS), offset),
        }
    }
    index.delivered(stored, marks);
    full
}

/// Marks done the deliveries whose copies their shards have flushed.
async fn settle(shard: &Shard, index: &mut TimerIndex) {
    let mut flushed = Vec::new();
    for target in index.flush_targets() {
        if let Ok(stats) = shard.on(target).stats().await {
            flushed.push((target, stats.commit_log_flushed_offset));
        }
    }
    index.settle(|s| flushed.iter().find(|(t, _)| *t == s).map(|(_, f)| *f));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(props: &[(&str, &str)]) -> MessageRecord {
        MessageRecord {
            topic: "T".to_owned(),
            queue_id: 3,
            properties: properties::encode(props.iter().copied()),
            ..MessageRecord::default()
        }
    }

    /// [`park_timed`] on a whole record, its properties encoded as the send path encodes them.
    fn park_if_timed(
        mut record: MessageRecord,
        enabled: bool,
        max_delay_sec: u64,
        now: i64,
        timer_queue: impl Fn(&str, i32) -> i32,
    ) -> Result<MessageRecord, String> {
        let base = std::mem::take(&mut record.properties);
        let mut props = EditedProperties::new(&base);
        park_timed(
            &mut record,
            &mut props,
            enabled,
            max_delay_sec,
            now,
            timer_queue,
        )?;
        let text = (!props.is_unchanged()).then(|| props.encode());
        record.properties = text.unwrap_or(base);
        Ok(record)
    }

    fn park(props: &[(&str, &str)]) -> Result<MessageRecord, String> {
        park_if_timed(record(props), true, 10, 1_000_000, |_, q| q + 100)
    }

    #[test]
    fn parks_with_precedence_and_limits() {
        let p = park(&[("TIMER_DELAY_SEC", "2"), ("TIMER_DELAY_MS", "5")]).unwrap();
        assert_eq!((p.topic.as_str(), p.queue_id), (TIMER_TOPIC, 103));
        assert_eq!(
            properties::get(&p.properties, TIMER_OUT_MS),
            Some("1002000")
        );
        assert_eq!(properties::get(&p.properties, "REAL_TOPIC"), Some("T"));
        assert_eq!(properties::get(&p.properties, "REAL_QID"), Some("3"));
        let p = park(&[("TIMER_DELAY_MS", "5"), ("TIMER_DELIVER_MS", "1")]).unwrap();
        assert_eq!(
            properties::get(&p.properties, TIMER_OUT_MS),
            Some("1000005")
        );
        // Due now or in the past: stored at once.
        assert_eq!(park(&[("TIMER_DELIVER_MS", "1000000")]).unwrap().topic, "T");
        // Exactly the maximum is accepted, one ms more is not.
        assert_eq!(
            park(&[("TIMER_DELAY_MS", "10000")]).unwrap().topic,
            TIMER_TOPIC
        );
        assert!(park(&[("TIMER_DELAY_MS", "10001")]).is_err());
        assert!(park(&[("TIMER_DELAY_SEC", "x")]).is_err());
        // A DELAY level wins and the timer properties go.
        let p = park(&[("DELAY", "2"), ("TIMER_DELAY_MS", "5")]).unwrap();
        assert_eq!(p.topic, "T");
        assert_eq!(properties::get(&p.properties, TIMER_DELAY_MS), None);
        // Disabled: stored as it is.
        let off = park_if_timed(record(&[("TIMER_DELAY_MS", "5")]), false, 10, 0, |_, q| q);
        assert_eq!(off.unwrap().topic, "T");
        assert_eq!(park(&[("k", "v")]).unwrap().topic, "T");
    }
}

//! One pop from one queue, on the queue's owner (RocketMQ's `popMsgFromQueue`): under the queue's pop
//! lock, read from the group's position, then record what was taken (a durable check point, or the
//! ordered batch) before moving the position, so a message is never both skipped and unrecorded.

use std::rc::Rc;

use bytes::Bytes;
use protocol::header::extra_info::{ExtraInfo, RetryMark};
use protocol::header::{consume_init_mode, POP_ORDER_REVIVE_QUEUE};
use protocol::message::properties;
use protocol::message::record::{MessageRecord, PHYSICAL_OFFSET_POS, QUEUE_OFFSET_POS};
use storage::{GetMessageStatus, ReadFilter};

use super::checkpoint::{Ck, CkKey};
use super::{now_ms, revive_log, QueueKey};
use crate::feature::pull_filter::{is_tag_type, PullFilter, SQL92};
use crate::feature::tag_filter::TagFilter;
use crate::shard::Shard;

/// What a pop asks of every queue it visits (sent to other shards, so owned and `Send`).
#[derive(Debug, Clone)]
pub struct PopRequest {
    pub group: String,
    /// The topic the consumer asked for (messages of its retry topic are answered under it).
    pub topic: String,
    pub invisible_time: i64,
    pub init_mode: i32,
    pub order: bool,
    pub attempt_id: Option<String>,
    pub exp_type: Option<String>,
    pub exp: Option<String>,
    pub pop_time: i64,
}

/// What one queue gave.
#[derive(Debug, Clone, Default)]
pub struct QueuePop {
    /// The queue read: the topic or its pop retry topic.
    pub topic: String,
    pub queue_id: i32,
    /// The check point's start (`startOffsetInfo`).
    pub start_offset: i64,
    pub offsets: Vec<i64>,
    pub records: Vec<Bytes>,
    /// Ordered pops: earlier deliveries per offset.
    pub order_counts: Vec<(i64, i32)>,
    /// Messages left behind in the queue.
    pub rest: i64,
}

/// The queue offset stored in a record.
pub fn record_queue_offset(record: &[u8]) -> i64 {
    record
        .get(QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(-1, i64::from_be_bytes)
}

/// The group's pop position on a queue, initialised by `initMode` when it has none (RocketMQ's
/// `getPopOffset`; retry topics always start at their first message).
pub async fn position(shard: &Shard, key: &QueueKey, init_mode: i32, init: bool) -> i64 {
    if let Some(o) = shard
        .offsets
        .borrow()
        .query(&key.group, &key.topic, key.queue_id)
    {
        if o >= 0 {
            return o;
        }
    }
    let min = shard.store.min_offset(&key.topic, key.queue_id);
    let from_first = init_mode == consume_init_mode::MIN
        || key
            .topic
            .starts_with(protocol::header::extra_info::RETRY_GROUP_TOPIC_PREFIX)
        || (min <= 0 && first_is_recent(shard, key).await);
    let offset = if from_first {
        min
    } else {
        // MAX: the newest message is still delivered.
        (shard.store.readable_max_offset(&key.topic, key.queue_id) - 1).max(0)
    };
    if init {
        shard
            .offsets
            .borrow_mut()
            .commit(&key.group, &key.topic, key.queue_id, offset);
    }
    offset
}

/// Whether a queue's first message is recent enough that Apache would find it in memory
/// (`initPopOffsetByCheckMsgInMem`: within 40% of physical memory of the CommitLog's end); such a
/// young queue is consumed from its start also in MAX mode.
async fn first_is_recent(shard: &Shard, key: &QueueKey) -> bool {
    let Ok(first) = shard
        .store
        .get_messages(&key.topic, key.queue_id, 0, 1, 1, None)
        .await
    else {
        return false;
    };
    let Some(record) = first.records.first() else {
        // An empty queue: its first message is the next one.
        return true;
    };
    let physical = record
        .get(PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_be_bytes);
    shard.store.max_physical_offset() - physical <= in_memory_window()
}

/// 40% of the machine's memory (Apache's `accessMessageInMemoryMaxRatio`).
fn in_memory_window() -> i64 {
    // SAFETY: sysconf only reads system constants.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let bytes = (pages.max(0) as u64).saturating_mul(page.max(0) as u64) / 10 * 4;
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

fn filter_of(shard: &Shard, req: &PopRequest, topic: &str) -> Result<PullFilter, String> {
    if topic != req.topic {
        // The retry topic's messages all passed the filter once.
        return Ok(PullFilter::ALL);
    }
    let Some(exp) = req.exp.as_deref().filter(|e| !e.is_empty()) else {
        return Ok(PullFilter::ALL);
    };
    let kind = req.exp_type.as_deref().unwrap_or("TAG");
    if is_tag_type(kind) {
        return Ok(PullFilter::Tags(TagFilter::parse(exp)));
    }
    if kind != SQL92 {
        return Err(format!("no filter of type {kind}"));
    }
    if !shard.cfg.enable_property_filter {
        return Err(format!(
            "The broker does not support consumer to filter message by {kind}"
        ));
    }
    crate::feature::pull_filter::subscriptions(shard)
        .sql_filters
        .borrow_mut()
        .compile(&req.group, &req.topic, exp)
        .map(PullFilter::Sql)
        .map_err(|e| e.to_string())
}

/// Pops up to `want` messages from `(topic, queue_id)`; must run on the queue's owner.
pub async fn pop_queue(
    shard: &Rc<Shard>,
    req: &PopRequest,
    topic: &str,
    queue_id: i32,
    want: i32,
    max_bytes: usize,
) -> Result<QueuePop, String> {
    let key = QueueKey::new(&req.group, topic, queue_id);
    let mut out = QueuePop {
        topic: topic.to_owned(),
        queue_id,
        ..QueuePop::default()
    };
    let max = shard.store.readable_max_offset(topic, queue_id);
    let pop_state = crate::feature::pop::state(shard);
    let Some(_lock) = pop_state.try_lock(&key) else {
        out.rest = max - position(shard, &key, req.init_mode, false).await;
        return Ok(out);
    };
    if req.order
        && crate::feature::pop::state(shard).orders.borrow().blocked(
            &key,
            req.attempt_id.as_deref(),
            now_ms(),
        )
    {
        return Ok(out);
    }
    let filter = filter_of(shard, req, topic)?;
    let by_tags_code = |code: i64| filter.accepts_tags_code(code);
    let by_record = |record: &[u8]| filter.accepts_record(record);
    let read_filter = ReadFilter {
        tags_code: filter
            .checks_tags()
            .then_some(&by_tags_code as &dyn Fn(i64) -> bool),
        record: filter
            .checks_records()
            .then_some(&by_record as &dyn Fn(&[u8]) -> bool),
    };
    let mut offset = position(shard, &key, req.init_mode, true).await;
    let mut result = read(shard, topic, queue_id, offset, want, max_bytes, read_filter).await?;
    if matches!(
        result.status,
        GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetOverflowBadly
            | GetMessageStatus::OffsetFoundNull
    ) && result.next_begin_offset != offset
    {
        // The position is outside the queue (retention, a reset): start where the queue is.
        offset = result.next_begin_offset;
        commit(shard, &key, offset);
        result = read(shard, topic, queue_id, offset, want, max_bytes, read_filter).await?;
    }
    out.rest = (result.max_offset - result.next_begin_offset).max(0);
    if result.records.is_empty() {
        if result.next_begin_offset > offset {
            // Everything up to there was filtered out: nothing to deliver or revive.
            commit(shard, &key, result.next_begin_offset);
        }
        return Ok(out);
    }
    let offsets: Vec<i64> = result
        .records
        .iter()
        .map(|r| record_queue_offset(r))
        .collect();
    if req.order {
        out.order_counts = crate::feature::pop::state(shard)
            .orders
            .borrow_mut()
            .update(
                &key,
                req.attempt_id.clone(),
                req.pop_time,
                req.invisible_time,
                &offsets,
            );
        commit(shard, &key, offset);
    } else {
        let ck_key = CkKey {
            group: req.group.clone(),
            topic: topic.to_owned(),
            queue_id,
            start_offset: offset,
            pop_time: req.pop_time,
        };
        let revive_offset =
            revive_log::append_ck(shard, &ck_key, &offsets, req.invisible_time).await?;
        crate::feature::pop::state(shard)
            .cks
            .borrow_mut()
            .insert(Ck::new(
                ck_key,
                offsets.clone(),
                req.invisible_time,
                revive_offset,
            ));
        commit(shard, &key, result.next_begin_offset);
    }
    crate::feature::broker_stats::record_pull(
        topic,
        &req.group,
        offsets.len() as u64,
        result.total_bytes() as u64,
    );
    shard
        .counters
        .got(result.records.len() as u64, result.total_bytes() as u64);
    out.start_offset = offset;
    out.records = if topic == req.topic {
        result.records
    } else {
        result
            .records
            .iter()
            .map(|r| as_retry_delivery(shard, req, r, offset, queue_id))
            .collect::<Result<_, _>>()?
    };
    out.offsets = offsets;
    Ok(out)
}

async fn read(
    shard: &Shard,
    topic: &str,
    queue_id: i32,
    offset: i64,
    want: i32,
    max_bytes: usize,
    filter: ReadFilter<'_>,
) -> Result<storage::GetResult, String> {
    shard
        .store
        .get_messages_matching(topic, queue_id, offset, want, max_bytes, filter)
        .await
        .map_err(|e| format!("reading the queue failed: {e}"))
}

fn commit(shard: &Shard, key: &QueueKey, offset: i64) {
    shard
        .offsets
        .borrow_mut()
        .commit(&key.group, &key.topic, key.queue_id, offset);
}

/// A message of the pop retry topic as the consumer gets it: under the topic it asked for, with its
/// receipt handle in POP_CK (the response's offset infos describe the topic's own queues).
fn as_retry_delivery(
    shard: &Shard,
    req: &PopRequest,
    stored: &Bytes,
    start_offset: i64,
    queue_id: i32,
) -> Result<Bytes, String> {
    let (mut record, _) = MessageRecord::decode(stored, false).map_err(|e| e.to_string())?;
    let handle = ExtraInfo {
        ck_queue_offset: start_offset,
        pop_time: req.pop_time,
        invisible_time: req.invisible_time,
        revive_qid: if req.order { POP_ORDER_REVIVE_QUEUE } else { 0 },
        retry: RetryMark::of_topic(&record.topic),
        broker_name: shard.broker.broker_name.clone(),
        queue_id,
        queue_offset: Some(record.queue_offset),
    };
    if properties::get(&record.properties, properties::POP_CK).is_none() {
        record.properties =
            properties::with(&record.properties, properties::POP_CK, &handle.to_string());
    }
    record.topic = req.topic.clone();
    record.to_vec().map(Bytes::from).map_err(|e| e.to_string())
}

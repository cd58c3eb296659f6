//! `MessageStore`: one shard's store. Appends assign queue offsets, go to the CommitLog buffer and are
//! dispatched to the ConsumeQueue and index at once; a flusher task group-commits them (the policy is
//! in `group_commit`); a maintenance task flushes ConsumeQueues, the index and the checkpoint, and
//! runs retention.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::{Latency, Shares, Task};
use protocol::message::record::{MessageRecord, MAX_PROPERTIES_LEN};

use crate::arrival::Arrival;
use crate::arrival::ConfirmGate;
use crate::checkpoint::{Checkpoint, CheckpointWriter};
use crate::commitlog::CommitLog;
use crate::config::StoreConfig;
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::dispatch::{goes_to_consume_queue, goes_to_index, DispatchProps};
use crate::epoch_file::EpochFile;
use crate::error::{PutError, StoreError};
use crate::flush::{FlushSignal, FlushWaiters};
use crate::index::{flush_index, IndexService};
use crate::index_file::IndexFile;
use crate::layout::{abort_marker, consume_queue_root, file_name};
use crate::offset::physical;
use crate::retention_audit::ConsumerPositionsFn;
use crate::retention_clock::RetentionClock;
use crate::stats::{StatsSnapshot, StoreStats};
use crate::types::PutOk;

/// How often retention and the disk-usage check run.
const RETENTION_INTERVAL: Duration = Duration::from_secs(10);

/// The long-polling hook: (topic, queue id, new max offset).
pub type ArrivalFn = dyn Fn(&str, i32, i64);

pub(crate) type QueueMap = HashMap<
    String,
    HashMap<i32, Rc<RefCell<ConsumeQueue>>, ahash::RandomState>,
    ahash::RandomState,
>;

/// Topic names become ConsumeQueue directory names: RocketMQ's characters (`%|a-zA-Z0-9_-`, plus `.`),
/// never a path component like `..`.
pub fn topic_is_storable(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= i16::MAX as usize
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-' | b'.'))
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

pub(crate) struct Inner {
    pub cfg: StoreConfig,
    /// The settings that may change at run time (`tunables`), first from `cfg`.
    pub tunables: RefCell<crate::tunables::Tunables>,
    pub log: Rc<CommitLog>,
    pub cq_root: PathBuf,
    pub queues: RefCell<QueueMap>,
    pub index: RefCell<IndexService>,
    pub signal: FlushSignal,
    /// Set by `request_flush`: the next flush is due whatever the ASYNC_FLUSH interval and threshold.
    pub flush_requested: Cell<bool>,
    pub waiters: FlushWaiters,
    pub stats: StoreStats,
    /// Set when a CommitLog write failed; cleared by the next successful flush.
    pub write_failure: RefCell<Option<String>>,
    /// Set while the disk is fuller than `disk_space_warning_level_ratio`.
    pub disk_full: RefCell<Option<String>>,
    /// Set for good when a CommitLog fdatasync failed: no write is taken until a restart.
    pub sync_failure: RefCell<Option<String>>,
    pub arrival: RefCell<Option<Rc<ArrivalFn>>>,
    /// Committed offsets by group, asked by retention to say what it deletes unconsumed.
    pub consumer_positions: RefCell<Option<Rc<ConsumerPositionsFn>>>,
    pub shutting_down: Cell<bool>,
    /// The dispatch point last written to the checkpoint.
    pub dispatch_durable: Cell<u64>,
    pub checkpoint: RefCell<Option<CheckpointWriter>>,
    /// Serializes ConsumeQueue/index/checkpoint flushes and retention.
    pub maintenance: glommio::sync::Semaphore,
    pub flusher: RefCell<Option<Task<()>>>,
    pub background: RefCell<Vec<Task<()>>>,
    /// Retention's clock: forward steps of the wall clock while the store runs are ignored.
    pub retention_clock: RetentionClock,
    /// Which master epoch wrote which part of the log (controller mode; empty otherwise).
    pub epochs: RefCell<EpochFile>,
    /// Set while `truncate_tail` runs: appends are refused.
    pub truncating: Cell<bool>,
    /// The confirm-offset gate (controller mode; see `confirm`).
    pub confirm: RefCell<ConfirmGate>,
    /// Compacted and `reserve.time` topics, as the broker set them.
    pub policies: RefCell<crate::policy::TopicPolicies>,
    /// The compacted logs of this shard's compacted queues.
    pub compacted: RefCell<crate::compaction::logs::CompactedLogs>,
    /// Serializes compaction passes (timer and on demand).
    pub compaction_lock: glommio::sync::Semaphore,
}

/// One shard's message store. Create and use it inside one glommio executor; clones share it.
#[derive(Clone)]
pub struct MessageStore {
    pub(crate) inner: Rc<Inner>,
}

impl MessageStore {
    /// Opens (recovering if needed) the store in `cfg.root_dir` and starts its background tasks in the
    /// current executor.
    pub async fn open(cfg: StoreConfig) -> Result<MessageStore, StoreError> {
        cfg.validate()?;
        std::fs::create_dir_all(&cfg.root_dir)
            .map_err(|e| StoreError::io(cfg.root_dir.display(), e))?;
        crate::probe::prime_dma_detection(&cfg.root_dir).await?;
        let epochs = EpochFile::load(&cfg.root_dir)?;
        let rec = crate::recovery::recover(&cfg).await?;
        let writer =
            CheckpointWriter::open(&cfg.root_dir, rec.checkpoint_seq, cfg.shard_id).await?;
        let compacted = crate::compaction::logs::load_all(&cfg.root_dir).await?;
        let queues: QueueMap = rec
            .queues
            .into_iter()
            .map(|(topic, qs)| {
                (
                    topic,
                    qs.into_iter()
                        .map(|(q, cq)| (q, Rc::new(RefCell::new(cq))))
                        .collect(),
                )
            })
            .collect();
        let inner = Rc::new(Inner {
            cq_root: consume_queue_root(&cfg.root_dir),
            log: Rc::new(rec.log),
            queues: RefCell::new(queues),
            index: RefCell::new(rec.index),
            signal: FlushSignal::default(),
            flush_requested: Cell::new(false),
            waiters: FlushWaiters::default(),
            stats: StoreStats::default(),
            write_failure: RefCell::new(None),
            disk_full: RefCell::new(None),
            sync_failure: RefCell::new(None),
            arrival: RefCell::new(None),
            consumer_positions: RefCell::new(None),
            shutting_down: Cell::new(false),
            dispatch_durable: Cell::new(rec.dispatch_from),
            checkpoint: RefCell::new(Some(writer)),
            maintenance: glommio::sync::Semaphore::new(1),
            flusher: RefCell::new(None),
            background: RefCell::new(Vec::new()),
            retention_clock: RetentionClock::new(now_ms()),
            epochs: RefCell::new(epochs),
            truncating: Cell::new(false),
            policies: RefCell::new(crate::policy::TopicPolicies::default()),
            compacted: RefCell::new(compacted),
            confirm: RefCell::default(),
            compaction_lock: glommio::sync::Semaphore::new(1),
            tunables: RefCell::new(crate::tunables::Tunables::from_config(&cfg)),
            cfg,
        });
        inner.waiters.flushed.set(inner.log.flushed.get());
        let store = MessageStore { inner };
        if store.inner.cfg.confirm_gate_at_open {
            store.gate_at_restored_confirm(rec.confirm_offset).await;
        }
        // A crash between a tail cut and its rewind leaves a compacted log past its queue's end.
        store.rewind_compacted_logs().await?;
        if store.inner.cfg.message_index_enable && store.inner.index.borrow().files.is_empty() {
            let (slots, entries) = store.inner.index.borrow().slots_entries();
            let path = store
                .inner
                .index
                .borrow()
                .dir
                .join(file_name(now_ms() as u64));
            let file = IndexFile::create(path, slots, entries).await?;
            store.inner.index.borrow_mut().finish_new_file(Some(file));
        }
        // Keys recovery could not place (a full file) go to a new file.
        store.roll_index_file();
        // Make what recovery rebuilt durable before anything else happens.
        store.flush_maintenance().await?;
        std::fs::write(abort_marker(&store.inner.cfg.root_dir), b"")
            .map_err(|e| StoreError::io(store.inner.cfg.root_dir.display(), e))?;
        store.start_tasks()?;
        Ok(store)
    }

    fn start_tasks(&self) -> Result<(), StoreError> {
        // The flusher shares the appenders' task queue on purpose: appenders woken by a sync run (and
        // append again) before the flusher takes its next snapshot, so group-commit batches stay large.
        // A separate latency-sensitive queue halved the batches in measurements. Maintenance runs in
        // a low-share queue behind the hot path.
        let ex = glommio::executor();
        let maintenance_tq = ex.create_task_queue(
            Shares::Static(100),
            Latency::NotImportant,
            "storage-maintenance",
        );
        let spawn_err = |e| StoreError::io("task queue", e);
        self.inner.log.prepare_first_segment();
        self.start_flusher();
        let me = self.clone();
        let maintenance = glommio::spawn_local_into(
            async move {
                let interval =
                    Duration::from_millis(me.inner.cfg.flush_interval_consume_queue_ms.max(10));
                let mut last_retention = Instant::now();
                loop {
                    glommio::timer::sleep(interval).await;
                    if me.inner.shutting_down.get() {
                        break;
                    }
                    if let Err(e) = me.flush_maintenance().await {
                        tracing::error!(
                            "shard {}: flushing ConsumeQueues/index/checkpoint failed: {e}",
                            me.inner.cfg.shard_id
                        );
                    }
                    if last_retention.elapsed() < RETENTION_INTERVAL {
                        // A store refusing writes for a full disk looks again at every tick, not
                        // only at the next retention pass (up to 10 s after space was freed).
                        if me.inner.disk_full.borrow().is_some() {
                            me.check_disk_space();
                        }
                    } else {
                        last_retention = Instant::now();
                        let now = me.inner.retention_clock.now(now_ms());
                        if let Err(e) = me.run_retention(now, false).await {
                            tracing::error!(
                                "shard {}: retention failed: {e}",
                                me.inner.cfg.shard_id
                            );
                        }
                    }
                }
            },
            maintenance_tq,
        )
        .map_err(spawn_err)?;
        self.inner.background.borrow_mut().push(maintenance);
        if self.inner.cfg.enable_compaction {
            // Behind the hot path like the rest of maintenance, but in a task of its own: a long
            // pass must not hold back ConsumeQueue flushes and checkpoints.
            let me = self.clone();
            let compaction = glommio::spawn_local_into(
                async move {
                    let interval =
                        Duration::from_millis(me.inner.cfg.compaction_interval_ms.max(100));
                    loop {
                        glommio::timer::sleep(interval).await;
                        if me.inner.shutting_down.get() {
                            break;
                        }
                        if let Err(e) = me.compact_now().await {
                            tracing::error!(
                                "shard {}: compaction failed: {e}",
                                me.inner.cfg.shard_id
                            );
                        }
                    }
                },
                maintenance_tq,
            )
            .map_err(spawn_err)?;
            self.inner.background.borrow_mut().push(compaction);
        }
        Ok(())
    }

    /// The config the store was opened with.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.cfg
    }

    pub fn shard_id(&self) -> u16 {
        self.inner.cfg.shard_id
    }

    /// Why appends are refused, if they are.
    pub fn read_only_reason(&self) -> Option<String> {
        let sf = self.inner.sync_failure.borrow().clone();
        sf.or_else(|| self.inner.write_failure.borrow().clone())
            .or_else(|| self.inner.disk_full.borrow().clone())
    }

    /// Appends one message; `queue_offset`, `physical_offset` and `store_timestamp` are assigned here.
    /// With SYNC_FLUSH it resolves after the fdatasync that covers the record.
    pub async fn put(&self, msg: MessageRecord) -> Result<PutOk, PutError> {
        let len = msg.encoded_len();
        self.admit(len as u64)?;
        let (ok, end, arrival) = self.append(msg, len, now_ms())?;
        match self.after_append(end).await {
            Ok(()) => {
                self.notify_arrivals(arrival.into_iter());
                Ok(ok)
            }
            Err(e) => Err(e.with_stored(vec![ok])),
        }
    }

    /// Appends messages back to back (consecutive queue offsets within a queue), one flush covering all.
    pub async fn put_batch(&self, msgs: Vec<MessageRecord>) -> Result<Vec<PutOk>, PutError> {
        let total: u64 = msgs.iter().map(|m| m.encoded_len() as u64).sum();
        self.admit(total)?;
        let now = now_ms();
        let mut out = Vec::with_capacity(msgs.len());
        let mut arrivals = Vec::new();
        let mut end = self.inner.log.write_pos();
        for msg in msgs {
            let len = msg.encoded_len();
            let (ok, e, arrival) = self.append(msg, len, now)?;
            out.push(ok);
            arrivals.extend(arrival);
            end = e;
        }
        match self.after_append(end).await {
            Ok(()) => {
                self.notify_arrivals(arrivals.into_iter());
                Ok(out)
            }
            Err(e) => Err(e.with_stored(out)),
        }
    }

    /// After the flush that made them durable: readers may see these records now
    /// (`consume_durable_only`). The hook fires once per run of one queue. Not after a failed or
    /// timed-out flush: a later put's announcement, or a reader's own timeout, covers those.
    pub(crate) fn notify_arrivals(&self, arrivals: impl Iterator<Item = Arrival>) {
        let listener = self.inner.arrival.borrow().clone();
        let mut pending: Option<Arrival> = None;
        for mut a in arrivals {
            {
                let mut q = a.queue.borrow_mut();
                // One held across a tail cut names a max the queue no longer has.
                a.max_offset = a.max_offset.min(q.max_offset);
                let seen = q
                    .announced_max
                    .map_or(a.max_offset, |v| v.max(a.max_offset));
                q.announced_max = (seen < q.max_offset).then_some(seen);
            }
            if let Some(p) = pending.take() {
                if p.topic != a.topic || p.queue_id != a.queue_id {
                    if let Some(f) = &listener {
                        f(&p.topic, p.queue_id, p.max_offset);
                    }
                }
            }
            pending = Some(a);
        }
        if let (Some(p), Some(f)) = (pending, &listener) {
            f(&p.topic, p.queue_id, p.max_offset);
        }
    }

    /// Refuses an append of `len` bytes when read-only or when too much waits for a flush.
    fn admit(&self, len: u64) -> Result<(), PutError> {
        if let Some(why) = self.read_only_reason() {
            return Err(PutError::ReadOnly(why));
        }
        if self.inner.shutting_down.get() {
            return Err(PutError::ReadOnly("store is shutting down".to_owned()));
        }
        if self.inner.truncating.get() {
            return Err(PutError::ReadOnly(
                "the CommitLog tail is being truncated".to_owned(),
            ));
        }
        let unflushed = self.inner.log.unflushed();
        if unflushed > 0 && unflushed.saturating_add(len) > self.inner.cfg.max_unflushed_bytes {
            StoreStats::inc(&self.inner.stats.busy_rejects, 1);
            return Err(PutError::Busy { unflushed });
        }
        Ok(())
    }

    /// The synchronous part of a put: offsets, encoding into the log buffer, dispatch. Returns the
    /// arrival to announce after the flush when readers see only durable records.
    fn append(
        &self,
        mut msg: MessageRecord,
        len: usize,
        now: i64,
    ) -> Result<(PutOk, u64, Option<Arrival>), PutError> {
        let inner = &*self.inner;
        let max = self.max_record_len();
        if len > max {
            return Err(PutError::MessageTooLarge { size: len, max });
        }
        if !topic_is_storable(&msg.topic) || msg.properties.len() > MAX_PROPERTIES_LEN {
            return Err(PutError::Illegal(format!(
                "topic {:?} is not storable or properties length {} out of range",
                msg.topic,
                msg.properties.len()
            )));
        }
        let size = i32::try_from(len).map_err(|_| PutError::MessageTooLarge { size: len, max })?;
        msg.store_timestamp = now;
        let to_cq = goes_to_consume_queue(msg.sys_flag);
        let cq = self.queue_or_create(&msg.topic, msg.queue_id);
        msg.queue_offset = if to_cq { cq.borrow().max_offset } else { 0 };
        let local = inner.log.prepare_append(len as u64);
        let phys = physical(inner.cfg.shard_id, local);
        msg.physical_offset = phys;
        inner.log.append_with(
            len,
            |v| msg.encode(v).map_err(|e| PutError::Illegal(e.to_string())),
            |n| PutError::Illegal(format!("record encoded to {n} bytes, expected {len}")),
        )?;
        let props = DispatchProps::scan(&msg.properties);
        let tags = props.tags_code(&inner.cfg, &msg.topic, now);
        let new_max = if to_cq {
            let mut q = cq.borrow_mut();
            q.append(CqEntry {
                phys,
                size,
                tags_code: tags,
            });
            Some(q.max_offset)
        } else {
            None
        };
        if inner.cfg.message_index_enable && goes_to_index(msg.sys_flag) {
            self.index_keys(&msg.topic, props.index_keys(), phys, now);
        }
        StoreStats::inc(&inner.stats.puts, 1);
        StoreStats::inc(&inner.stats.put_bytes, len as u64);
        let ok = PutOk {
            physical_offset: phys,
            queue_offset: msg.queue_offset,
            size,
            store_timestamp: now,
        };
        let mut held = None;
        let end = local + len as u64;
        if let Some(max) = new_max {
            let arrival = Arrival {
                topic: std::mem::take(&mut msg.topic),
                queue_id: msg.queue_id,
                max_offset: max,
                queue: cq.clone(),
            };
            // With a confirm gate it is announced when the confirm offset passes it (`confirm`).
            let arrival = self.hold_for_confirm(physical(inner.cfg.shard_id, end), arrival);
            if let Some(a) = arrival {
                if inner.cfg.consume_durable_only {
                    {
                        // Readers were told of everything before this record (or of less, still).
                        let mut q = cq.borrow_mut();
                        q.announced_max = Some(q.announced_max.unwrap_or(max - 1));
                    }
                    held = Some(a);
                } else {
                    let listener = inner.arrival.borrow().clone();
                    if let Some(f) = listener {
                        f(&a.topic, a.queue_id, max);
                    }
                }
            }
        }
        Ok((ok, end, held))
    }

    pub(crate) fn index_keys<'a>(
        &self,
        topic: &str,
        keys: impl Iterator<Item = &'a str>,
        phys: i64,
        ts: i64,
    ) {
        let mut need_file = false;
        {
            let mut index = self.inner.index.borrow_mut();
            for key in keys {
                if !index.put(topic, key, phys, ts) {
                    need_file = true;
                }
            }
        }
        if need_file {
            self.roll_index_file();
        }
    }

    /// Creates the next index file in the background; keys wait in memory meanwhile.
    fn roll_index_file(&self) {
        let Some(path) = self.inner.index.borrow_mut().begin_new_file(now_ms()) else {
            return;
        };
        let (slots, entries) = self.inner.index.borrow().slots_entries();
        let inner = self.inner.clone();
        glommio::spawn_local(async move {
            let file = match IndexFile::create(path.clone(), slots, entries).await {
                Ok(f) => Some(f),
                Err(e) => {
                    tracing::error!("creating index file {} failed: {e}", path.display());
                    None
                }
            };
            inner.index.borrow_mut().finish_new_file(file);
        })
        .detach();
    }

    /// The queue's ConsumeQueue, created empty if new.
    pub(crate) fn queue_or_create(&self, topic: &str, queue_id: i32) -> Rc<RefCell<ConsumeQueue>> {
        if let Some(q) = self.queue(topic, queue_id) {
            return q;
        }
        let units = (self.inner.cfg.mapped_file_size_consume_queue / 20) as i64;
        let cq = Rc::new(RefCell::new(ConsumeQueue::new(
            &self.inner.cq_root,
            topic,
            queue_id,
            units,
        )));
        self.inner
            .queues
            .borrow_mut()
            .entry(topic.to_owned())
            .or_default()
            .insert(queue_id, cq.clone());
        cq
    }

    pub(crate) fn queue(&self, topic: &str, queue_id: i32) -> Option<Rc<RefCell<ConsumeQueue>>> {
        self.inner
            .queues
            .borrow()
            .get(topic)
            .and_then(|qs| qs.get(&queue_id))
            .cloned()
    }

    /// Registers the long-polling hook, called after a record reaches its ConsumeQueue with
    /// (topic, queue id, new max offset).
    pub fn set_arrival_listener(&self, f: Box<ArrivalFn>) {
        *self.inner.arrival.borrow_mut() = Some(Rc::from(f));
    }

    /// Where consumer groups are on each queue, so that retention can count (and log) the messages it
    /// deletes before they were consumed.
    pub fn set_consumer_positions(&self, f: Box<ConsumerPositionsFn>) {
        *self.inner.consumer_positions.borrow_mut() = Some(Rc::from(f));
    }

    /// Every (topic, queue id) with a ConsumeQueue.
    pub fn queues(&self) -> Vec<(String, i32)> {
        let qs = self.inner.queues.borrow();
        let mut out: Vec<(String, i32)> = qs
            .iter()
            .flat_map(|(t, m)| m.keys().map(move |q| (t.clone(), *q)))
            .collect();
        out.sort();
        out
    }

    /// Drops a topic's ConsumeQueues and compacted logs (files included). Its records stay in the
    /// CommitLog until retention.
    /// Waits for a ConsumeQueue flush in progress: it would recreate the directory, or glommio would
    /// panic on a file of it opened just before the directory went.
    pub async fn delete_topic(&self, topic: &str) {
        // A compaction pass of the topic finishes first: it would write its log back afterwards.
        let _compaction = self.inner.compaction_lock.acquire_permit(1).await.ok();
        let _permit = self.inner.maintenance.acquire_permit(1).await.ok();
        let removed = self.inner.queues.borrow_mut().remove(topic);
        self.drop_compacted(topic);
        if removed.is_some() {
            let dir = self.inner.cq_root.join(topic);
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!("deleting {} failed: {e}", dir.display());
                }
            }
        }
    }

    /// Highest physical offset written (full offset, shard bits included).
    pub fn max_physical_offset(&self) -> i64 {
        physical(self.inner.cfg.shard_id, self.inner.log.write_pos())
    }

    /// Lowest physical offset still stored.
    pub fn min_physical_offset(&self) -> i64 {
        physical(self.inner.cfg.shard_id, self.inner.log.min_offset())
    }

    /// Physical offset up to which the CommitLog is durable.
    pub fn flushed_physical_offset(&self) -> i64 {
        physical(self.inner.cfg.shard_id, self.inner.log.flushed.get())
    }

    /// Start offsets (physical) of the CommitLog segments, oldest first.
    pub fn commitlog_segments(&self) -> Vec<i64> {
        self.inner
            .log
            .segment_starts()
            .into_iter()
            .map(|s| physical(self.inner.cfg.shard_id, s))
            .collect()
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats.snapshot()
    }

    /// Every ConsumeQueue of this shard, for a pass that awaits between queues (the map itself is
    /// not borrowed across those awaits: appends may add queues meanwhile).
    pub(crate) fn queue_handles(&self) -> Vec<Rc<RefCell<ConsumeQueue>>> {
        self.inner
            .queues
            .borrow()
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Flushes ConsumeQueues and the index, then writes the checkpoint.
    pub async fn flush_maintenance(&self) -> Result<(), StoreError> {
        let _permit = self
            .inner
            .maintenance
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::io("maintenance", e))?;
        self.flush_maintenance_locked().await
    }

    /// `flush_maintenance` for a caller holding the maintenance permit.
    pub(crate) async fn flush_maintenance_locked(&self) -> Result<(), StoreError> {
        let inner = &*self.inner;
        // Keys still waiting for an index file are not durable: keep the old dispatch point then.
        let dispatched = if inner.index.borrow().has_pending() {
            inner.dispatch_durable.get()
        } else {
            inner.log.write_pos()
        };
        let commitlog_flushed = inner.log.flushed.get();
        for q in self.queue_handles() {
            let job = q.borrow().prepare_flush();
            if let Some(job) = job {
                let target = job.target;
                let created = job.run(inner.cfg.shard_id).await?;
                q.borrow_mut().complete_flush(target, created);
            }
        }
        flush_index(&inner.index, inner.cfg.shard_id).await?;
        self.write_checkpoint(commitlog_flushed, dispatched).await
    }

    /// Writes the checkpoint and, once durable, adopts its dispatch point.
    pub(crate) async fn write_checkpoint(
        &self,
        commitlog_flushed: u64,
        dispatched: u64,
    ) -> Result<(), StoreError> {
        let inner = &*self.inner;
        let writer = inner.checkpoint.borrow_mut().take();
        if let Some(mut w) = writer {
            let cp = Checkpoint {
                seq: 0,
                commitlog_flushed,
                dispatch_durable: dispatched,
                timestamp_ms: now_ms(),
                confirm_offset: Some(self.confirmed_local(commitlog_flushed)),
            };
            let res = w.write(cp).await;
            *inner.checkpoint.borrow_mut() = Some(w);
            res?;
            inner.dispatch_durable.set(dispatched);
        }
        Ok(())
    }

    /// Final flush, checkpoint, and removal of the abort marker. Appends are refused from now on.
    pub async fn shutdown(&self) {
        let inner = &*self.inner;
        if inner.shutting_down.replace(true) {
            return;
        }
        inner.log.close();
        inner.log.wait_segment_creation().await;
        inner.signal.raise();
        let flusher = inner.flusher.borrow_mut().take();
        if let Some(task) = flusher {
            task.await;
        }
        // Stop the maintenance loop between its steps, then do the last round ourselves.
        let permit = inner.maintenance.acquire_permit(1).await;
        drop(std::mem::take(&mut *inner.background.borrow_mut()));
        drop(permit);
        if let Some(why) = inner.sync_failure.borrow().clone() {
            // Keep the abort marker: the next start checks the log past the last good checkpoint.
            tracing::error!(
                "shard {}: not a clean shutdown ({why}); recovery will check the CommitLog at the next start",
                inner.cfg.shard_id
            );
            return;
        }
        let clean = inner.log.unflushed() == 0;
        match self.flush_maintenance().await {
            Ok(()) if clean => {
                let _ = std::fs::remove_file(abort_marker(&inner.cfg.root_dir));
            }
            Ok(()) => tracing::error!(
                "shard {}: CommitLog not fully flushed at shutdown",
                inner.cfg.shard_id
            ),
            Err(e) => tracing::error!("shard {}: final flush failed: {e}", inner.cfg.shard_id),
        }
    }
}

impl MessageStore {
    /// The settings in force.
    pub fn tunables(&self) -> crate::tunables::Tunables {
        self.inner.tunables.borrow().clone()
    }

    /// The largest record a put takes now: `max_message_size`, held to what one segment of this
    /// store fits (a raise beyond it waits for a restart with larger segments).
    pub(crate) fn max_record_len(&self) -> usize {
        let fits = usize::try_from(self.inner.cfg.mapped_file_size_commit_log.saturating_sub(8))
            .unwrap_or(usize::MAX);
        self.inner.tunables.borrow().max_message_size.min(fits)
    }

    /// Replaces the settings; the flusher wakes to re-read its interval and threshold.
    pub fn set_tunables(&self, tunables: crate::tunables::Tunables) {
        *self.inner.tunables.borrow_mut() = tunables;
        self.inner.signal.raise();
    }
}

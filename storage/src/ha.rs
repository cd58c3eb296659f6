//! Replication support: reading raw CommitLog bytes on a master and appending them on a slave, where
//! they are dispatched to ConsumeQueues and the index like local puts.

use bytes::Bytes;
use protocol::message::record::{decode_view, peek_head, RecordHead};

use crate::config::FlushDiskType;
use crate::consume_queue::CqEntry;
use crate::dispatch::{goes_to_consume_queue, goes_to_index, index_keys, tags_code};
use crate::error::StoreError;
use crate::offset::{local_of, physical, shard_of};
use crate::store::MessageStore;

impl MessageStore {
    /// Raw CommitLog bytes from `from_phys`, at most `max_bytes`, never crossing a segment end; empty
    /// when nothing new is written.
    pub async fn read_commitlog(
        &self,
        from_phys: i64,
        max_bytes: usize,
    ) -> Result<Bytes, StoreError> {
        self.read_commitlog_up_to(from_phys, max_bytes, self.inner.log.write_pos())
            .await
    }

    /// As `read_commitlog`, but only bytes already durable (written and synced): what a master sends
    /// its slaves. A slave must never hold bytes that a crash of the master can take back: the master
    /// would come back with a shorter log and write other records at those offsets, and the slave's
    /// log would no longer be a prefix of it. The bytes end where the last sync ended, which may be
    /// inside a record.
    pub async fn read_durable_commitlog(
        &self,
        from_phys: i64,
        max_bytes: usize,
    ) -> Result<Bytes, StoreError> {
        self.read_commitlog_up_to(from_phys, max_bytes, self.inner.log.flushed.get())
            .await
    }

    async fn read_commitlog_up_to(
        &self,
        from_phys: i64,
        max_bytes: usize,
        limit: u64,
    ) -> Result<Bytes, StoreError> {
        if shard_of(from_phys) != self.inner.cfg.shard_id || from_phys < 0 {
            return Err(StoreError::WrongShard(from_phys));
        }
        let log = &self.inner.log;
        let from = local_of(from_phys);
        let seg_end = log.segment_start(from) + log.segment_size;
        let end = limit
            .min(seg_end)
            .min(from.saturating_add(max_bytes as u64));
        if from < log.min_offset() || end <= from {
            return Ok(Bytes::new());
        }
        Ok(log
            .read(from, (end - from) as usize)
            .await?
            .unwrap_or_default())
    }

    /// Asks the flusher to write and sync what is pending now, whatever the flush policy (a slave
    /// waits for it: see `read_durable_commitlog`).
    pub fn request_flush(&self) {
        if self.inner.log.unflushed() > 0 {
            self.inner.flush_requested.set(true);
            self.inner.signal.raise();
        }
    }

    /// Resolves once the CommitLog is durable up to `end_phys`, or with the error of a failed flush.
    pub async fn wait_durable(&self, end_phys: i64) -> Result<(), StoreError> {
        self.inner
            .waiters
            .wait(local_of(end_phys))
            .await
            .map_err(|e| StoreError::io("commitlog", e))
    }

    /// Appends bytes read from a master's `read_commitlog` at `from_phys`, which must be this log's end.
    /// Only whole records are taken; returns the new end (the offset to ask the master for next).
    /// With SYNC_FLUSH, returns once a sync covered them.
    pub async fn append_replicated(&self, from_phys: i64, bytes: &[u8]) -> Result<i64, StoreError> {
        let end = self.append_replicated_unsynced(from_phys, bytes)?;
        if self.inner.cfg.flush_disk_type == FlushDiskType::SyncFlush {
            self.wait_durable(end).await?;
        }
        Ok(end)
    }

    /// `append_replicated` without waiting for a sync (the flusher writes them as usual): what an HA
    /// slave acknowledges, as RocketMQ's slaves do (the master holds the data durably already).
    pub fn append_replicated_unsynced(
        &self,
        from_phys: i64,
        bytes: &[u8],
    ) -> Result<i64, StoreError> {
        let inner = &*self.inner;
        let log = &inner.log;
        if inner.truncating.get() {
            return Err(StoreError::ReadOnly(
                self.read_only_reason()
                    .unwrap_or_else(|| "the CommitLog tail is being truncated".to_owned()),
            ));
        }
        // After a failed sync the flusher writes nothing more until a restart, which drops whatever
        // is only in memory: bytes taken now would be acknowledged to the master and never reach the
        // disk (a slave elected with them loses records the master acknowledged; chaos seed
        // 1531577810).
        let failed = inner.sync_failure.borrow().clone();
        if let Some(why) = failed {
            return Err(StoreError::ReadOnly(why));
        }
        let expected = self.max_physical_offset();
        if from_phys != expected {
            return Err(StoreError::NotContiguous {
                expected,
                got: from_phys,
            });
        }
        let mut pos = log.write_pos();
        let mut at = 0usize;
        let mut records = 0u64;
        let mut arrivals = Vec::new();
        while let Some(rest) = bytes.get(at..) {
            let room = log.segment_size - pos % log.segment_size;
            let size = match peek_head(rest)? {
                None => break,
                Some(RecordHead::Blank { total_size }) => {
                    if total_size as u64 != room {
                        return Err(StoreError::Corrupt {
                            path: "replicated data".into(),
                            offset: pos,
                            reason: format!("blank of {total_size} bytes where {room} remain"),
                        });
                    }
                    if rest.len() < total_size {
                        break;
                    }
                    log.append_raw(rest.get(..total_size).unwrap_or_default(), 0);
                    total_size
                }
                Some(RecordHead::Message { total_size }) => {
                    let Some(rec) = rest.get(..total_size) else {
                        break;
                    };
                    let view = decode_view(rec, true)?;
                    let phys = physical(inner.cfg.shard_id, pos);
                    if view.physical_offset != phys || total_size as u64 + 8 > room {
                        return Err(StoreError::Corrupt {
                            path: "replicated data".into(),
                            offset: pos,
                            reason: "record offset or placement disagrees".into(),
                        });
                    }
                    log.append_raw(rec, 1);
                    if goes_to_consume_queue(view.sys_flag) {
                        let cq = self.queue_or_create(view.topic, view.queue_id);
                        let mut q = cq.borrow_mut();
                        if view.queue_offset == q.max_offset {
                            let tags = tags_code(
                                &inner.cfg,
                                view.topic,
                                view.properties,
                                view.store_timestamp,
                            );
                            q.append(CqEntry {
                                phys,
                                size: total_size as i32,
                                tags_code: tags,
                            });
                            arrivals.push((
                                view.topic.to_owned(),
                                view.queue_id,
                                q.max_offset,
                                phys.saturating_add(total_size as i64),
                            ));
                        } else {
                            tracing::warn!(
                                "replicated record for {}/{} has queue offset {}, queue is at {}",
                                view.topic,
                                view.queue_id,
                                view.queue_offset,
                                q.max_offset
                            );
                        }
                    }
                    if inner.cfg.message_index_enable && goes_to_index(view.sys_flag) {
                        self.index_keys(
                            view.topic,
                            index_keys(view.properties),
                            phys,
                            view.store_timestamp,
                        );
                    }
                    records += 1;
                    total_size
                }
            };
            at += size;
            pos += size as u64;
        }
        let _ = records;
        let end = physical(inner.cfg.shard_id, pos);
        if self.confirm_offset().is_some() {
            // A slave serves what it holds of its master's log up to the master's confirm offset
            // when the master sends it (`set_replica_bound`), else up to its end (what it still
            // holds back is a tail of its own from before it followed this master). A record above
            // that waits, as on a master, until the confirm offset passes it.
            self.set_confirm_offset(self.replica_confirm_at(end));
            let shown: Vec<crate::arrival::Arrival> = arrivals
                .into_iter()
                .filter_map(|(topic, queue_id, max_offset, record_end)| {
                    let queue = self.queue(&topic, queue_id)?;
                    let arrival = crate::arrival::Arrival {
                        topic,
                        queue_id,
                        max_offset,
                        queue,
                    };
                    self.hold_for_confirm(record_end, arrival)
                })
                .collect();
            self.notify_arrivals(shown.into_iter());
        } else {
            let listener = inner.arrival.borrow().clone();
            if let Some(f) = listener {
                for (t, q, max, _) in arrivals {
                    f(&t, q, max);
                }
            }
        }
        inner.signal.raise();
        Ok(end)
    }
}

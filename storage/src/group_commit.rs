//! Group commit policy: when the CommitLog is flushed and when a put returns. With SYNC_FLUSH every
//! put wakes the flusher and waits (up to `syncFlushTimeout`) for the fdatasync that covers its record;
//! the flusher flushes as soon as anything is pending, so records appended during one flush share the
//! next. With ASYNC_FLUSH a put returns at once and the flusher runs when `flushCommitLogLeastPages`
//! pages are pending, every `flushIntervalCommitLog` ms otherwise, at shutdown, and at once when an
//! HA sender asks (`request_flush`: a master sends its slaves only durable bytes). A failed flush
//! fails the waiting puts. A failed write (disk full, EIO) leaves the store read-only until a later
//! flush, which writes every unsynced byte again from memory, succeeds. A failed fdatasync leaves it
//! read-only until the process restarts: after a failed sync the kernel may already have dropped or
//! forgotten what it could not write, so a later sync that succeeds proves nothing about the data
//! before it ("fsyncgate"); recovery at the next start checks the log instead.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::commitlog::{FlushError, FlushStage};
use crate::config::FlushDiskType;
use crate::error::PutError;
use crate::stats::StoreStats;
use crate::store::{Inner, MessageStore};

impl MessageStore {
    /// Starts the CommitLog flusher task in the current executor (once, at open).
    pub(crate) fn start_flusher(&self) {
        let flusher = glommio::spawn_local(flusher_loop(self.inner.clone()));
        *self.inner.flusher.borrow_mut() = Some(flusher);
    }

    /// Wakes the flusher and, with SYNC_FLUSH, waits for the flush covering `end`.
    pub(crate) async fn after_append(&self, end: u64) -> Result<(), PutError> {
        let inner = &*self.inner;
        match inner.cfg.flush_disk_type {
            FlushDiskType::AsyncFlush => {
                let least_pages = inner.tunables.borrow().flush_commit_log_least_pages;
                if inner.log.unflushed() >= least_pages.saturating_mul(4096) {
                    inner.signal.raise();
                }
                Ok(())
            }
            FlushDiskType::SyncFlush => {
                inner.signal.raise();
                let timeout_ms = inner.cfg.sync_flush_timeout_ms;
                let wait = async { inner.waiters.wait(end).await.map_err(PutError::Io) };
                let timer = async {
                    glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
                    Err(PutError::FlushTimeout {
                        timeout_ms,
                        stored: Vec::new(),
                    })
                };
                let res = futures_lite::future::or(wait, timer).await;
                if matches!(res, Err(PutError::FlushTimeout { .. })) {
                    StoreStats::inc(&inner.stats.flush_timeouts, 1);
                }
                res
            }
        }
    }
}

/// The CommitLog flusher: group commit (SYNC_FLUSH flushes as soon as anything is pending, so records
/// appended during a flush join the next one) or timer/threshold flushing (ASYNC_FLUSH).
async fn flusher_loop(inner: Rc<Inner>) {
    let cfg = &inner.cfg;
    let sync = cfg.flush_disk_type == FlushDiskType::SyncFlush;
    let mut last_flush = Instant::now();
    loop {
        // Read each round: UPDATE_BROKER_CONFIG may change them (`tunables`).
        let (interval, least) = {
            let t = inner.tunables.borrow();
            (
                Duration::from_millis(t.flush_interval_commit_log_ms.max(1)),
                t.flush_commit_log_least_pages.saturating_mul(4096),
            )
        };
        let unflushed = inner.log.unflushed();
        let stopping = inner.shutting_down.get();
        let requested = inner.flush_requested.replace(false);
        let due = unflushed > 0
            && (sync
                || stopping
                || requested
                || unflushed >= least
                || last_flush.elapsed() >= interval);
        if !due {
            if stopping {
                break;
            }
            let wait = if unflushed > 0 {
                interval.saturating_sub(last_flush.elapsed())
            } else {
                interval
            };
            futures_lite::future::or(inner.signal.wait(), glommio::timer::sleep(wait)).await;
            continue;
        }
        let started = Instant::now();
        match inner.log.flush(cfg.shard_id).await {
            Ok(out) => {
                inner.stats.record_flush(
                    started.elapsed().as_nanos() as u64,
                    out.records,
                    out.bytes,
                );
                inner.waiters.advance(inner.log.flushed.get());
                if inner.write_failure.borrow_mut().take().is_some() {
                    tracing::warn!(
                        "shard {}: CommitLog writes work again; store writable",
                        cfg.shard_id
                    );
                }
                last_flush = Instant::now();
            }
            Err(FlushError {
                stage: FlushStage::Sync,
                error,
            }) => {
                let why = format!(
                    "CommitLog fdatasync failed: {error}; data written since the last good sync \
                     may not be on disk, so the store takes no writes until the broker restarts \
                     (a later sync would not prove it is)"
                );
                tracing::error!("shard {}: {why}", cfg.shard_id);
                *inner.sync_failure.borrow_mut() = Some(why.clone());
                inner.waiters.fail(why);
                // No more flushes: their syncs could not be believed either.
                break;
            }
            Err(FlushError {
                stage: FlushStage::Write,
                error: e,
            }) => {
                let why = format!("CommitLog write failed: {e}");
                tracing::error!(
                    "shard {}: {why}; store is read-only until a flush succeeds",
                    cfg.shard_id
                );
                *inner.write_failure.borrow_mut() = Some(why.clone());
                inner.waiters.fail(why);
                if stopping {
                    break;
                }
                glommio::timer::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

//! The timer checkpoint a master answers to GET_TIMER_CHECK_POINT (60) and a slave copies, so a slave
//! promoted to master starts its timer queues from the master's progress instead of its own (which,
//! never delivering, stays where it was: everything delivered since would be delivered again).
//!
//! The body starts with the 56 bytes of RocketMQ 5's `TimerCheckpoint` (big-endian longs):
//! lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset and the
//! dataVersion's stateVersion, timestamp and counter. Our timer has no timer log and no time-wheel
//! read pointer; its progress is a low watermark per timer queue (every unit below it is delivered
//! and flushed). So lastReadTimeMs is the earliest due time not yet delivered (or now),
//! lastTimerLogFlushPos is 0, and both queue offsets are the watermark of the lowest timer queue.
//! An Apache reader stops after those 56 bytes. After them comes what our slaves use: a tag, every
//! timer queue's watermark with the shard that owns it, and each shard's commit-log end read after
//! the watermarks. The copies of the units below a watermark were stored before that end, so a slave
//! takes the watermarks only once it has replicated that far (see `Pending::ready`): never past a
//! timer whose delivered copy it lacks (controller mode's default acknowledges a put before any slave
//! has it).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::shard::Shard;

/// Marks the part after Apache's 56 bytes.
const TAG: &[u8; 4] = b"RTW1";
const APACHE_LEN: usize = 56;

/// One timer queue's progress: the shard owning it, the queue id and its watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueMark {
    pub shard: u32,
    pub queue_id: i32,
    pub watermark: i64,
}

/// What GET_TIMER_CHECK_POINT carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Apache's lastReadTimeMs: timers due before it are delivered.
    pub read_time_ms: i64,
    /// Apache's dataVersion timestamp (when the answer was made).
    pub timestamp_ms: i64,
    pub queues: Vec<QueueMark>,
    /// Per shard: its commit-log end (physical offset) read after the watermarks.
    pub log_ends: Vec<(u32, i64)>,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let first = self
            .queues
            .iter()
            .min_by_key(|q| q.queue_id)
            .map_or(0, |q| q.watermark);
        let counter: i64 = self
            .queues
            .iter()
            .fold(0i64, |a, q| a.wrapping_add(q.watermark));
        let mut out = Vec::with_capacity(APACHE_LEN + 16 + 16 * self.queues.len());
        for v in [
            self.read_time_ms,
            0,
            first,
            first,
            0,
            self.timestamp_ms,
            counter,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(TAG);
        out.extend_from_slice(&(self.queues.len() as u32).to_be_bytes());
        for q in &self.queues {
            out.extend_from_slice(&q.shard.to_be_bytes());
            out.extend_from_slice(&q.queue_id.to_be_bytes());
            out.extend_from_slice(&q.watermark.to_be_bytes());
        }
        out.extend_from_slice(&(self.log_ends.len() as u32).to_be_bytes());
        for (s, end) in &self.log_ends {
            out.extend_from_slice(&s.to_be_bytes());
            out.extend_from_slice(&end.to_be_bytes());
        }
        out
    }

    /// Ok(None): a checkpoint without our part (an Apache master's), whose offsets count units
    /// enqueued into its time wheel, not delivered: nothing a slave of ours may start from.
    pub fn decode(body: &[u8]) -> Result<Option<Checkpoint>, String> {
        if body.len() < 32 {
            return Err(format!("timer checkpoint of {} bytes", body.len()));
        }
        if body.len() <= APACHE_LEN {
            return Ok(None);
        }
        let mut r = Reader { body, at: 0 };
        let read_time_ms = r.i64()?;
        r.skip(32)?;
        let timestamp_ms = r.i64()?;
        r.skip(8)?;
        if r.take(4)? != TAG {
            return Ok(None);
        }
        let n = r.u32()? as usize;
        let mut queues = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            queues.push(QueueMark {
                shard: r.u32()?,
                queue_id: r.i32()?,
                watermark: r.i64()?,
            });
        }
        let n = r.u32()? as usize;
        let mut log_ends = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            log_ends.push((r.u32()?, r.i64()?));
        }
        Ok(Some(Checkpoint {
            read_time_ms,
            timestamp_ms,
            queues,
            log_ends,
        }))
    }
}

struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).ok_or("length overflow")?;
        let s = self
            .body
            .get(self.at..end)
            .ok_or_else(|| format!("timer checkpoint cut short at byte {}", self.at))?;
        self.at = end;
        Ok(s)
    }
    fn skip(&mut self, n: usize) -> Result<(), String> {
        self.take(n).map(|_| ())
    }
    fn i64(&mut self) -> Result<i64, String> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(i64::from_be_bytes(b))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(b))
    }
    fn i32(&mut self) -> Result<i32, String> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(i32::from_be_bytes(b))
    }
}

/// A shard's timer progress as its delivery task last persisted it.
#[derive(Default)]
pub struct Progress {
    /// (timer queue, persisted watermark) once the task has started on this shard.
    pub persisted: Cell<Option<(i32, i64)>>,
    /// The earliest due time still pending.
    pub next_due: Cell<Option<i64>>,
    /// A slave: the watermark last copied from the master into the file.
    pub installed: Cell<Option<i64>>,
}

pub fn progress(shard: &Shard) -> Rc<Progress> {
    shard.extensions.get()
}

/// Master: the checkpoint of the broker `shard` belongs to (every shard of it, or this shard alone
/// when shards are brokers). The watermarks are read on every shard first, then the log ends.
pub async fn answer(shard: &Shard) -> Result<Vec<u8>, String> {
    let now = crate::state::topics::now_ms();
    let mut marks = Vec::new();
    for s in shard.broker_shards(shard.id) {
        marks.push(s.timer_progress().await.map_err(|e| e.to_string())?);
    }
    let mut cp = Checkpoint {
        read_time_ms: now,
        timestamp_ms: now,
        ..Checkpoint::default()
    };
    for (id, (persisted, next_due)) in marks.into_iter().enumerate() {
        let id = if shard.is_broker { shard.id } else { id };
        if let Some((queue_id, watermark)) = persisted {
            cp.queues.push(QueueMark {
                shard: id as u32,
                queue_id,
                watermark,
            });
        }
        if let Some(due) = next_due {
            cp.read_time_ms = cp.read_time_ms.min(due);
        }
    }
    for s in shard.broker_shards(shard.id) {
        let stats = s.stats().await.map_err(|e| e.to_string())?;
        cp.log_ends
            .push((stats.shard as u32, stats.commit_log_max_offset));
    }
    Ok(cp.encode())
}

/// Slave: a checkpoint copied from a master, waiting for the replication to reach its log ends.
pub struct Pending {
    /// The broker's first shard on this side (the key: one per master).
    pub first: usize,
    pub checkpoint: Checkpoint,
    /// Each shard's role-change count from before the copy: a shard that has followed another
    /// master since (its log cut back to that one's and refilled) cannot judge the log ends.
    pub terms: Vec<(usize, u64)>,
}

/// Shard 0 of a slave: the checkpoints copied and not yet installed.
#[derive(Default)]
pub struct PendingCheckpoints {
    pub list: RefCell<Vec<Pending>>,
}

pub fn pending(shard: &Shard) -> Rc<PendingCheckpoints> {
    shard.extensions.get()
}

/// Keeps `cp`, copied from the master of the broker whose first shard is `first`, replacing an
/// older one from the same master; `terms` were read before the copy was asked for.
pub fn copied(shard: &Shard, first: usize, cp: Checkpoint, terms: Vec<(usize, u64)>) {
    let p = pending(shard);
    let mut list = p.list.borrow_mut();
    list.retain(|p| p.first != first);
    list.push(Pending {
        first,
        checkpoint: cp,
        terms,
    });
}

/// The role-change counts of the shards of the broker whose first shard is `first`.
pub async fn terms(shard: &Shard, first: usize) -> Result<Vec<(usize, u64)>, String> {
    let mut out = Vec::new();
    for (i, s) in shard.broker_shards(first).enumerate() {
        let id = if shard.is_broker { first } else { i };
        out.push((id, s.ha_term().await.map_err(|e| e.to_string())?));
    }
    Ok(out)
}

/// Installs the copied checkpoints whose log ends this slave has replicated (each on the shard that
/// owns the timer queue, while it is a slave). Run on shard 0 by the sync task.
pub async fn install_ready(shard: &Rc<Shard>) {
    let list = std::mem::take(&mut *pending(shard).list.borrow_mut());
    let mut keep = Vec::new();
    for p in list {
        let term_of = |idx: usize| p.terms.iter().find(|(s, _)| *s == idx).map(|(_, t)| *t);
        let mut current = true;
        for (idx, term) in &p.terms {
            if shard.on(*idx).ha_term().await.ok() != Some(*term) {
                current = false;
            }
        }
        if !current {
            tracing::debug!("HA: a timer checkpoint copied before a role change dropped");
            continue;
        }
        let mut ready = true;
        for (s, end) in &p.checkpoint.log_ends {
            let idx = *s as usize;
            if idx >= shard.shards || term_of(idx).is_none() {
                ready = false;
                break;
            }
            match shard.on(idx).stats().await {
                Ok(st) if st.commit_log_max_offset >= *end => {}
                _ => {
                    ready = false;
                    break;
                }
            }
        }
        if !ready {
            keep.push(p);
            continue;
        }
        for q in &p.checkpoint.queues {
            let idx = q.shard as usize;
            let Some(term) = term_of(idx).filter(|_| idx < shard.shards) else {
                continue;
            };
            if let Err(e) = shard
                .on(idx)
                .install_timer_watermark(q.queue_id, q.watermark, term)
                .await
            {
                tracing::warn!("HA: timer watermark not installed on shard {idx}: {e}");
            }
        }
    }
    // A newer copy may have come in while this one ran: it wins.
    let p = pending(shard);
    let mut list = p.list.borrow_mut();
    for k in keep {
        if !list.iter().any(|n| n.first == k.first) {
            list.push(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_layout_then_ours() {
        let cp = Checkpoint {
            read_time_ms: 1_000,
            timestamp_ms: 2_000,
            queues: vec![
                QueueMark {
                    shard: 1,
                    queue_id: 3,
                    watermark: 70,
                },
                QueueMark {
                    shard: 0,
                    queue_id: 0,
                    watermark: 42,
                },
            ],
            log_ends: vec![(0, 9_000), (1, 1 << 50)],
        };
        let body = cp.encode();
        let long = |i: usize| i64::from_be_bytes(body[i * 8..i * 8 + 8].try_into().unwrap());
        // What Apache's TimerCheckpoint.decode reads.
        assert_eq!(
            (long(0), long(1), long(2), long(3), long(5), long(6)),
            (1_000, 0, 42, 42, 2_000, 112)
        );
        assert_eq!(Checkpoint::decode(&body), Ok(Some(cp)));
        // Apache's own 56 (or 32) bytes: nothing of ours to take.
        assert_eq!(Checkpoint::decode(&body[..56]), Ok(None));
        assert_eq!(Checkpoint::decode(&body[..32]), Ok(None));
        assert!(Checkpoint::decode(&body[..20]).is_err());
        // Cut anywhere in our part: an error, never a panic.
        for n in 57..body.len() {
            let r = Checkpoint::decode(&body[..n]);
            assert!(matches!(r, Err(_) | Ok(None)), "{n}");
        }
    }
}

//! The CommitLog of one shard: appends into memory, flushes 4 KiB-aligned O_DIRECT writes followed by
//! fdatasync (the partial last block is rewritten by the next flush), reads from memory or disk.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use glommio::io::DmaBuffer;
use protocol::message::record::{encode_blank, peek_head, RecordHead, MIN_BLANK_LEN};

use crate::error::StoreError;
use crate::log_buffer::LogBuffer;
use crate::read_cache::BlockCache;
use crate::segment::{open_segment, Segment, SegmentMap};

/// O_DIRECT block size used for every write.
pub const BLOCK: u64 = 4096;
/// Largest single write of a flush.
pub const MAX_WRITE: u64 = 4 << 20;
/// Most bytes one flush round covers; all its writes are in flight at once, so the flusher needs the
/// CPU only to start them and to start the sync. A bigger backlog takes several rounds.
pub const MAX_FLUSH_ROUND: u64 = 32 << 20;
/// Write buffers kept for reuse: one round's worth.
const POOLED_WRITE_BUFFERS: usize = (MAX_FLUSH_ROUND / MAX_WRITE) as usize;
/// One zero write of a background segment fill, and the pause after it (at most ~128 MB/s).
const FILL_CHUNK: u64 = 256 << 10;
const FILL_PAUSE: Duration = Duration::from_millis(2);
/// How far a fill runs ahead of the appends, and how often it looks again once there.
const FILL_AHEAD: u64 = 32 << 20;
const FILL_IDLE: Duration = Duration::from_millis(20);
/// Size of the disk read for one record outside the block cache (most records fit in one read).
pub const READ_WINDOW: usize = 64 << 10;

/// How a record is read from disk.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// Part of a sequential scan (a pull): through the block cache, reading ahead.
    Sequential,
    /// One record on its own (a lookup by offset or key): one small read.
    Single,
}

pub(crate) fn align_down(v: u64) -> u64 {
    v - v % BLOCK
}

pub(crate) fn align_up(v: u64) -> u64 {
    v.div_ceil(BLOCK) * BLOCK
}

/// Largest power-of-two multiple of 4 KiB up to 1 MiB that divides the segment size.
fn chunk_size_for(segment_size: u64) -> u64 {
    let mut chunk = 1 << 20;
    while chunk > BLOCK && segment_size % chunk != 0 {
        chunk /= 2;
    }
    chunk
}

/// What one flush covered.
pub(crate) struct FlushOutcome {
    pub bytes: u64,
    pub records: u64,
}

/// Where a flush failed: the store's answer differs (see `group_commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlushStage {
    /// Creating a segment or writing the data: nothing claims the bytes are on disk, and every
    /// later flush writes them again from memory before it syncs.
    Write,
    /// The fdatasync after successful writes: the kernel reported that data it had accepted may
    /// not be on disk, and a later successful sync does not prove otherwise.
    Sync,
}

/// A failed flush.
#[derive(Debug, Clone)]
pub(crate) struct FlushError {
    pub stage: FlushStage,
    pub error: StoreError,
}

impl FlushError {
    fn write(error: StoreError) -> FlushError {
        FlushError {
            stage: FlushStage::Write,
            error,
        }
    }
}

pub(crate) struct CommitLog {
    pub dir: PathBuf,
    pub segment_size: u64,
    pub buf: RefCell<LogBuffer>,
    segments: RefCell<SegmentMap>,
    /// Where the log's data begins when it has no segment file: the oldest segment's start at open
    /// (the write position if none), moved past each segment deleted. Appends go to memory before their segment file exists (it is
    /// created in the background or by the first flush), so with no file at all every byte from
    /// here on is still in memory, however far appends have gone.
    floor: Cell<u64>,
    /// Start of a segment being created in the background.
    creating: Cell<Option<u64>>,
    /// Zero-fill segments created ahead, so syncs need no unwritten-extent conversion.
    warm: bool,
    /// The zero write of a background fill now in flight (shard-local range): flushes wait for it
    /// before writing over the same bytes.
    zeroing: Cell<Option<(u64, u64)>>,
    /// Set at shutdown: background fills stop.
    closed: Cell<bool>,
    /// Shard-local offset up to which data is durable.
    pub flushed: Cell<u64>,
    /// Records appended since open, and records covered by completed flushes.
    pub appended_records: Cell<u64>,
    flushed_records: Cell<u64>,
    read_cache_bytes: u64,
    /// Durable blocks for sequential reads of older data.
    blocks: BlockCache,
    /// Direct disk reads (the block cache counts its own).
    direct_reads: Cell<u64>,
    scratch: RefCell<Vec<u8>>,
    /// Full-size write buffers kept between flushes (fresh 4 MiB buffers cost page faults each time).
    write_buffers: RefCell<Vec<DmaBuffer>>,
}

impl CommitLog {
    /// A log ending at `write_pos` (all durable) with `tail` = bytes from the chunk boundary before it.
    pub fn new(
        dir: PathBuf,
        segment_size: u64,
        segments: SegmentMap,
        write_pos: u64,
        tail: Vec<u8>,
        read_cache_bytes: u64,
        read_block_cache_bytes: u64,
    ) -> CommitLog {
        let floor = segments.keys().next().copied().unwrap_or(write_pos);
        CommitLog {
            dir,
            segment_size,
            floor: Cell::new(floor),
            buf: RefCell::new(LogBuffer::new(
                chunk_size_for(segment_size),
                write_pos,
                tail,
            )),
            segments: RefCell::new(segments),
            creating: Cell::new(None),
            warm: false,
            zeroing: Cell::new(None),
            closed: Cell::new(false),
            flushed: Cell::new(write_pos),
            appended_records: Cell::new(0),
            flushed_records: Cell::new(0),
            read_cache_bytes,
            blocks: BlockCache::new(chunk_size_for(segment_size), read_block_cache_bytes),
            direct_reads: Cell::new(0),
            scratch: RefCell::new(Vec::new()),
            write_buffers: RefCell::new(Vec::new()),
        }
    }

    /// Zero-fills segments created ahead of need (RocketMQ's warmMapedFileEnable, done with O_DIRECT).
    pub fn set_warm_segments(&mut self, warm: bool) {
        self.warm = warm;
    }

    pub fn chunk_size(segment_size: u64) -> u64 {
        chunk_size_for(segment_size)
    }

    pub fn write_pos(&self) -> u64 {
        self.buf.borrow().write_pos()
    }

    pub fn unflushed(&self) -> u64 {
        self.write_pos().saturating_sub(self.flushed.get())
    }

    pub fn segment_start(&self, local: u64) -> u64 {
        local - local % self.segment_size
    }

    /// The log's minimum offset: the start of the oldest segment, or where the log begins while no
    /// segment file exists (not the segment of the write position: unflushed appends may already
    /// have passed the end of a segment whose file is not created yet).
    pub fn min_offset(&self) -> u64 {
        let first = self.segments.borrow().keys().next().copied();
        first
            .unwrap_or_else(|| self.floor.get())
            .min(self.write_pos())
    }

    pub fn segment_starts(&self) -> Vec<u64> {
        self.segments.borrow().keys().copied().collect()
    }

    pub fn segment_at(&self, start: u64) -> Option<Rc<Segment>> {
        self.segments.borrow().get(&start).cloned()
    }

    pub fn remove_segment(&self, start: u64) -> Option<Rc<Segment>> {
        self.blocks.forget(start, start + self.segment_size);
        // Memory may still hold some of its bytes (the read cache); they count as deleted.
        self.floor
            .set(self.floor.get().max(start + self.segment_size));
        self.segments.borrow_mut().remove(&start)
    }

    /// Disk reads of CommitLog data so far (direct ones and block loads).
    pub fn disk_reads(&self) -> u64 {
        self.direct_reads.get() + self.blocks.loads()
    }

    /// Where a record of `len` bytes will start: if it does not fit the current segment with room for
    /// a blank after it, the segment is closed with a blank record first.
    pub fn prepare_append(&self, len: u64) -> u64 {
        let pos = self.write_pos();
        let room = self.segment_size - pos % self.segment_size;
        if len + MIN_BLANK_LEN as u64 > room {
            // room >= 8 always: every record leaves at least a blank's worth behind it.
            let mut buf = self.buf.borrow_mut();
            let mut scratch = self.scratch.borrow_mut();
            let _ = buf.append_encoded(
                room as usize,
                &mut scratch,
                |v| encode_blank(room as usize, v).map_err(|_| ()),
                |_| (),
            );
            pos + room
        } else {
            pos
        }
    }

    /// Appends bytes produced by `encode` (exactly `len` of them) at the write position.
    pub fn append_with<E>(
        &self,
        len: usize,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
        wrong_len: impl FnOnce(usize) -> E,
    ) -> Result<(), E> {
        let mut buf = self.buf.borrow_mut();
        let mut scratch = self.scratch.borrow_mut();
        buf.append_encoded(len, &mut scratch, encode, wrong_len)?;
        self.appended_records.set(self.appended_records.get() + 1);
        Ok(())
    }

    /// Appends raw, already-encoded bytes (replication).
    pub fn append_raw(&self, bytes: &[u8], records: u64) {
        self.buf.borrow_mut().append(bytes);
        self.appended_records
            .set(self.appended_records.get() + records);
    }

    /// Opens the segment at `start`, waiting for a background creation of it or creating it.
    async fn segment_for_write(self: &Rc<Self>, start: u64) -> Result<Rc<Segment>, StoreError> {
        loop {
            if let Some(seg) = self.segment_at(start) {
                return Ok(seg);
            }
            if self.creating.get() != Some(start) {
                break;
            }
            glommio::timer::sleep(Duration::from_micros(100)).await;
        }
        let seg = open_segment(&self.dir, start, self.segment_size, true).await?;
        self.segments.borrow_mut().insert(start, seg.clone());
        Ok(seg)
    }

    /// Creates the next segment in the background as soon as the current one is in use (and
    /// zero-fills it when warming is on).
    fn preallocate_ahead(self: &Rc<Self>) {
        let pos = self.write_pos();
        let next = self.segment_start(pos) + self.segment_size;
        let threshold = if self.warm { 0 } else { self.segment_size / 2 };
        if pos % self.segment_size >= threshold {
            self.preallocate(next);
        }
    }

    /// At open: a log whose write position starts a segment not created yet gets it created (and
    /// zero-filled when warming) in the background, before the first append needs it.
    pub fn prepare_first_segment(self: &Rc<Self>) {
        let pos = self.write_pos();
        if pos % self.segment_size == 0 {
            self.preallocate(pos);
        }
    }

    /// Stops background work on the files (zero-fills) before the store closes.
    pub fn close(&self) {
        self.closed.set(true);
    }

    /// Waits until no segment is being created in the background. Opening a file must not race with
    /// its directory going away (a store deleted after shutdown, segments removed by a cut): glommio
    /// panics when the path is gone between its open and its `statfs`.
    pub async fn wait_segment_creation(&self) {
        while self.creating.get().is_some() {
            glommio::timer::sleep(Duration::from_micros(100)).await;
        }
    }

    fn preallocate(self: &Rc<Self>, next: u64) {
        if self.closed.get() || self.creating.get().is_some() || self.segment_at(next).is_some() {
            return;
        }
        self.creating.set(Some(next));
        let log = self.clone();
        glommio::spawn_local(async move {
            let created = open_segment(&log.dir, next, log.segment_size, true).await;
            log.creating.set(None);
            match created {
                Ok(seg) => {
                    log.segments.borrow_mut().insert(next, seg.clone());
                    if log.warm {
                        if let Err(e) = log.zero_fill(&seg).await {
                            tracing::warn!(
                                "zero-filling segment {} failed: {e}",
                                seg.path.display()
                            );
                        }
                    }
                }
                Err(e) => tracing::warn!("preallocating segment {next} failed: {e}"),
            }
        })
        .detach();
    }

    /// Writes zeros over a segment a little ahead of the appends, paced, then syncs it. The segment
    /// may be in use meanwhile: the fill never writes below the append position (it skips ahead when
    /// appends catch up), and a flush waits for the one zero write in flight before writing over its
    /// bytes. Pacing keeps the device queue short, so group-commit syncs never wait behind a long run
    /// of zeros (a 1 GiB fill at full speed made every SYNC_FLUSH sync several times slower).
    async fn zero_fill(self: &Rc<Self>, seg: &Segment) -> Result<(), StoreError> {
        let zeros = {
            let mut b = seg.file.alloc_dma_buffer(FILL_CHUNK as usize);
            b.as_bytes_mut().fill(0);
            Rc::new(b)
        };
        let seg_end = seg.start + self.segment_size;
        let mut pos = seg.start;
        // Stops at shutdown, or when the store was dropped (only this task holds the log).
        while !self.closed.get() && Rc::strong_count(self) > 1 {
            pos = pos.max(align_up(self.write_pos()));
            if pos >= seg_end {
                break;
            }
            // Only a short way ahead of the appends: the zeros then cost about as much bandwidth
            // as the data, spread over time, instead of a burst when the segment is created.
            if pos >= self.write_pos() + FILL_AHEAD {
                glommio::timer::sleep(FILL_IDLE).await;
                continue;
            }
            let end = (pos + FILL_CHUNK).min(seg_end);
            self.zeroing.set(Some((pos, end)));
            let written = if end - pos == FILL_CHUNK {
                seg.file.write_rc_at(zeros.clone(), pos - seg.start).await
            } else {
                let mut b = seg.file.alloc_dma_buffer((end - pos) as usize);
                b.as_bytes_mut().fill(0);
                seg.file.write_at(b, pos - seg.start).await
            };
            self.zeroing.set(None);
            written.map_err(|e| StoreError::io(seg.path.display(), e))?;
            pos = end;
            glommio::timer::sleep(FILL_PAUSE).await;
        }
        seg.file
            .fdatasync()
            .await
            .map_err(|e| StoreError::io(seg.path.display(), e))
    }

    /// Waits while a background zero write covers part of `[from, to)`.
    async fn wait_for_zeroing(&self, from: u64, to: u64) {
        while self
            .zeroing
            .get()
            .is_some_and(|(zf, zt)| zf < to && from < zt)
        {
            glommio::timer::sleep(Duration::from_micros(50)).await;
        }
    }

    /// Writes everything appended so far (from the block holding the flush point) and fdatasyncs it.
    /// `shard` names the shard's fail points (test builds).
    pub async fn flush(self: &Rc<Self>, shard: u16) -> Result<FlushOutcome, FlushError> {
        let flushed = self.flushed.get();
        let write_pos = self.write_pos();
        let target = write_pos.min(align_down(flushed) + MAX_FLUSH_ROUND);
        // Records are counted for the group-commit statistics only when the round covers them all.
        let records_target = if target == write_pos {
            self.appended_records.get()
        } else {
            self.flushed_records.get()
        };
        if target <= flushed {
            return Ok(FlushOutcome {
                bytes: 0,
                records: 0,
            });
        }
        let end = align_up(target);
        let mut pieces = Vec::new();
        let mut p = align_down(flushed);
        while p < end {
            let seg_start = self.segment_start(p);
            let piece_end = end.min(seg_start + self.segment_size).min(p + MAX_WRITE);
            pieces.push((seg_start, p, piece_end));
            p = piece_end;
        }
        let mut segs: Vec<Rc<Segment>> = Vec::new();
        for &(seg_start, _, _) in &pieces {
            if segs.last().map(|s| s.start) != Some(seg_start) {
                segs.push(
                    self.segment_for_write(seg_start)
                        .await
                        .map_err(FlushError::write)?,
                );
            }
        }
        // A fill only zeroes beyond the append position, so this waits only when appends caught up
        // with the zero write in flight.
        self.wait_for_zeroing(align_down(flushed), end).await;
        // Copy the data before any further await; appends only add bytes after `target`.
        let mut writes = Vec::with_capacity(pieces.len());
        {
            let buf = self.buf.borrow();
            for &(seg_start, from, to) in &pieces {
                let Some(seg) = segs.iter().find(|s| s.start == seg_start) else {
                    return Err(FlushError::write(StoreError::io(
                        self.dir.display(),
                        "segment vanished during flush",
                    )));
                };
                let len = (to - from) as usize;
                let pooled = if len as u64 == MAX_WRITE {
                    self.write_buffers.borrow_mut().pop()
                } else {
                    None
                };
                let mut dma = pooled.unwrap_or_else(|| seg.file.alloc_dma_buffer(len));
                let bytes = dma.as_bytes_mut();
                let data_len = (target.min(to) - from) as usize;
                let (data, pad) = bytes.split_at_mut(data_len);
                if !buf.copy_to(from, data) {
                    return Err(FlushError::write(StoreError::io(
                        self.dir.display(),
                        "flush range no longer in memory",
                    )));
                }
                pad.fill(0);
                writes.push((seg.clone(), Rc::new(dma), from - seg_start, len));
            }
        }
        let tasks: Vec<_> = writes
            .into_iter()
            .map(|(seg, dma, pos, len)| {
                let log = self.clone();
                glommio::spawn_local(async move {
                    let res = match crate::fault::injected_error("commitlog_write", shard) {
                        Some(e) => Err(glommio::GlommioError::IoError(e)),
                        None => seg.file.write_rc_at(dma.clone(), pos).await,
                    };
                    if let Ok(buf) = Rc::try_unwrap(dma) {
                        let mut pool = log.write_buffers.borrow_mut();
                        if buf.len() as u64 == MAX_WRITE && pool.len() < POOLED_WRITE_BUFFERS {
                            pool.push(buf);
                        }
                    }
                    match res {
                        Ok(n) if n == len => Ok(()),
                        Ok(n) => Err(StoreError::io(
                            seg.path.display(),
                            format!("short write: {n} of {len} bytes at {pos} (disk full?)"),
                        )),
                        Err(e) => Err(StoreError::io(seg.path.display(), e)),
                    }
                })
            })
            .collect();
        let mut first_error = None;
        for task in tasks {
            if let Err(e) = task.await {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(FlushError::write(e));
        }
        crate::fault::injected_stall(shard).await;
        for seg in &segs {
            let synced = match crate::fault::injected_error("commitlog_fdatasync", shard) {
                Some(e) => Err(glommio::GlommioError::IoError(e)),
                None => seg.file.fdatasync().await,
            };
            synced.map_err(|e| FlushError {
                stage: FlushStage::Sync,
                error: StoreError::io(seg.path.display(), e),
            })?;
        }
        self.flushed.set(target);
        let records = records_target - self.flushed_records.get();
        self.flushed_records.set(records_target);
        self.trim_memory();
        self.preallocate_ahead();
        Ok(FlushOutcome {
            bytes: target - flushed,
            records,
        })
    }

    /// Cuts the log back to `end` while it is open: the bytes after it are zeroed on disk in its
    /// segment (synced), later segments are deleted, memory and the block cache forget them, and
    /// appends continue at `end`. The caller made everything durable first and holds appends off.
    pub async fn cut_back(self: &Rc<Self>, end: u64) -> Result<(), StoreError> {
        let chunk = self.buf.borrow().chunk_size();
        let tail_start = end - end % chunk;
        let tail = if end > tail_start {
            self.read(tail_start, (end - tail_start) as usize)
                .await?
                .unwrap_or_default()
                .to_vec()
        } else {
            Vec::new()
        };
        if tail.len() as u64 != end - tail_start {
            return Err(StoreError::io(
                self.dir.display(),
                format!("cannot read the log's last bytes before {end}"),
            ));
        }
        self.wait_segment_creation().await;
        let seg_start = self.segment_start(end);
        if let Some(seg) = self.segment_at(seg_start) {
            let in_seg = end - seg_start;
            let block = align_down(in_seg);
            self.wait_for_zeroing(seg_start + block, u64::MAX).await;
            let keep = (in_seg - block) as usize;
            let mut buf = seg.file.alloc_dma_buffer(BLOCK as usize);
            let bytes = buf.as_bytes_mut();
            bytes.fill(0);
            let kept = tail.get(tail.len() - keep..).unwrap_or_default();
            if let Some(dst) = bytes.get_mut(..kept.len()) {
                dst.copy_from_slice(kept);
            }
            let io = |e: glommio::GlommioError<()>| StoreError::io(seg.path.display(), e);
            seg.file.write_at(buf, block).await.map_err(io)?;
            // Drop the rest and allocate it again: it reads back as zeros.
            seg.file
                .truncate(align_up(in_seg.max(1)))
                .await
                .map_err(io)?;
            seg.file
                .pre_allocate(self.segment_size, false)
                .await
                .map_err(io)?;
            seg.file.fdatasync().await.map_err(io)?;
        }
        let later: Vec<u64> = self
            .segments
            .borrow()
            .range(seg_start + 1..)
            .map(|(k, _)| *k)
            .collect();
        for start in later {
            let seg = self.segments.borrow_mut().remove(&start);
            if let Some(seg) = seg {
                std::fs::remove_file(&seg.path)
                    .map_err(|e| StoreError::io(seg.path.display(), e))?;
            }
        }
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io(self.dir.display(), e))?;
        self.blocks.forget(self.blocks.block_start(end), u64::MAX);
        *self.buf.borrow_mut() = LogBuffer::new(chunk, end, tail);
        self.flushed.set(end);
        self.flushed_records.set(self.appended_records.get());
        self.floor.set(self.floor.get().min(end));
        Ok(())
    }

    /// Drops memory below both the block the next flush rewrites and the read cache window.
    fn trim_memory(&self) {
        let mut buf = self.buf.borrow_mut();
        let keep_from = align_down(self.flushed.get())
            .min(buf.write_pos().saturating_sub(self.read_cache_bytes));
        buf.trim_before(keep_from);
    }

    /// Bytes `[local, local + len)` (fewer at the log's or the segment's end) from memory or, if
    /// older, from the segment; None when none of them can be read.
    pub async fn read(&self, local: u64, len: usize) -> Result<Option<Bytes>, StoreError> {
        if let Some(b) = self.buf.borrow().read(local, len) {
            return Ok(Some(b));
        }
        let seg_start = self.segment_start(local);
        let end = local
            .saturating_add(len as u64)
            .min(seg_start + self.segment_size);
        let mut pieces: Vec<Bytes> = Vec::new();
        let mut pos = local;
        // Disk holds only durable bytes and memory only bytes from its start on; the two overlap
        // (memory keeps the block the next flush rewrites), but a range can begin below memory and
        // end past the durable point: its head comes from disk, its tail from memory. A flush that
        // completes during a disk read may trim that tail from memory; it is durable by then, so the
        // loop reads it from disk (every pass makes progress or stops).
        while pos < end {
            let mem = {
                let buf = self.buf.borrow();
                let mem_end = end.min(buf.write_pos());
                (pos < mem_end)
                    .then(|| buf.read(pos, (mem_end - pos) as usize))
                    .flatten()
            };
            if let Some(b) = mem {
                pieces.push(b);
                break;
            }
            let disk_end = end.min(self.flushed.get());
            if disk_end <= pos {
                break;
            }
            let Some(seg) = self.segment_at(seg_start) else {
                break;
            };
            self.direct_reads.set(self.direct_reads.get() + 1);
            let b = seg.read(pos - seg_start, (disk_end - pos) as usize).await?;
            let short = (b.len() as u64) < disk_end - pos;
            pos += b.len() as u64;
            if !b.is_empty() {
                pieces.push(b);
            }
            if short {
                break;
            }
        }
        Ok(match pieces.len() {
            0 => None,
            1 => pieces.pop(),
            _ => {
                let total = pieces.iter().map(Bytes::len).sum();
                let mut out = bytes::BytesMut::with_capacity(total);
                for p in &pieces {
                    out.extend_from_slice(p);
                }
                Some(out.freeze())
            }
        })
    }

    /// Bytes `[local, local + len)` through the block cache, starting a read of the block after the
    /// last one touched; None unless the blocks holding them are wholly durable and in one segment
    /// (a block read with the flush point inside it would keep stale bytes past that point).
    async fn read_blocks(&self, local: u64, len: usize) -> Result<Option<Bytes>, StoreError> {
        let end = local + len as u64;
        let seg_start = self.segment_start(local);
        let size = self.blocks.block_size();
        let first = self.blocks.block_start(local);
        let last = self.blocks.block_start(end.saturating_sub(1).max(local));
        if len == 0 || last + size > self.flushed.get() || end > seg_start + self.segment_size {
            return Ok(None);
        }
        let Some(seg) = self.segment_at(seg_start) else {
            return Ok(None);
        };
        self.read_ahead(&seg, last + size);
        if first == last {
            let block = self.blocks.get(&seg, first).await?;
            let at = (local - first) as usize;
            return Ok(block.get(at..at + len).map(|b| block.slice_ref(b)));
        }
        // A record across blocks: copy its parts.
        let mut out = bytes::BytesMut::with_capacity(len);
        let mut start = first;
        while start <= last {
            let block = self.blocks.get(&seg, start).await?;
            let from = local.max(start) - start;
            let to = end.min(start + size) - start;
            let Some(part) = block.get(from as usize..to as usize) else {
                return Ok(None);
            };
            out.extend_from_slice(part);
            start += size;
        }
        Ok(Some(out.freeze()))
    }

    /// Starts loading the block at `next` if it is durable (it may begin the next segment).
    fn read_ahead(&self, seg: &Rc<Segment>, next: u64) {
        if next + self.blocks.block_size() > self.flushed.get() || self.blocks.has(next) {
            return;
        }
        if next < seg.start + self.segment_size {
            self.blocks.prefetch(seg.clone(), next);
        } else if let Some(seg) = self.segment_at(next) {
            self.blocks.prefetch(seg, next);
        }
    }

    /// The stored message record at `local`, or None if there is none (blank, out of range, garbage).
    pub async fn read_record(
        &self,
        local: u64,
        mode: ReadMode,
    ) -> Result<Option<Bytes>, StoreError> {
        if local >= self.write_pos() || local < self.min_offset() {
            return Ok(None);
        }
        let head = self.buf.borrow().read(local, MIN_BLANK_LEN);
        if let Some(head) = head {
            let Some(size) = head_size(&head) else {
                return Ok(None);
            };
            if let Some(b) = self.buf.borrow().read(local, size) {
                return Ok(Some(b));
            }
        }
        if mode == ReadMode::Sequential {
            if let Some(head) = self.read_blocks(local, MIN_BLANK_LEN).await? {
                let Some(size) = head_size(&head) else {
                    return Ok(None);
                };
                if let Some(rec) = self.read_blocks(local, size).await? {
                    return Ok(Some(rec));
                }
            }
        }
        let Some(bytes) = self.read(local, READ_WINDOW).await? else {
            return Ok(None);
        };
        let Some(size) = bytes.get(..MIN_BLANK_LEN).and_then(head_size) else {
            return Ok(None);
        };
        if bytes.len() >= size {
            return Ok(Some(bytes.slice(..size)));
        }
        let Some(bytes) = self.read(local, size).await? else {
            return Ok(None);
        };
        Ok((bytes.len() >= size).then(|| bytes.slice(..size)))
    }
}

fn head_size(head: &[u8]) -> Option<usize> {
    match peek_head(head) {
        Ok(Some(RecordHead::Message { total_size })) => Some(total_size),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEGMENT: u64 = 64 * 1024;

    fn in_executor<Fut: std::future::Future<Output = ()> + 'static>(
        f: impl FnOnce() -> Fut + Send + 'static,
    ) {
        glommio::LocalExecutorBuilder::default()
            .spawn(f)
            .expect("spawn executor")
            .join()
            .expect("executor thread");
    }

    #[test]
    fn min_offset_before_any_segment_file_is_where_the_log_begins() {
        in_executor(|| async {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = CommitLog::new(
                dir.path().to_owned(),
                SEGMENT,
                SegmentMap::new(),
                0,
                Vec::new(),
                0,
                0,
            );
            // Unflushed appends past the first segment's end: no file exists for either segment.
            log.append_raw(&vec![1u8; SEGMENT as usize + 5000], 0);
            assert_eq!(log.min_offset(), 0);
        });
    }

    #[test]
    fn closing_waits_for_a_background_segment_creation() {
        in_executor(|| async {
            let dir = tempfile::tempdir().expect("tempdir");
            crate::probe::prime_dma_detection(dir.path())
                .await
                .expect("probe");
            let log = Rc::new(CommitLog::new(
                dir.path().to_owned(),
                SEGMENT,
                SegmentMap::new(),
                0,
                Vec::new(),
                0,
                0,
            ));
            // The write position starts a segment with no file: its creation runs in the background.
            log.prepare_first_segment();
            assert_eq!(log.creating.get(), Some(0));
            log.close();
            log.wait_segment_creation().await;
            assert_eq!(log.creating.get(), None);
            assert!(
                log.segment_at(0).is_some(),
                "the creation finished, not abandoned"
            );
            // Once closed, no new creation starts (its directory may be deleted next).
            log.prepare_first_segment();
            log.preallocate(SEGMENT);
            assert_eq!(log.creating.get(), None);
        });
    }

    #[test]
    fn min_offset_stays_past_a_deleted_segment_still_held_in_memory() {
        in_executor(|| async {
            let dir = tempfile::tempdir().expect("tempdir");
            crate::probe::prime_dma_detection(dir.path())
                .await
                .expect("probe");
            let seg = open_segment(dir.path(), 0, SEGMENT, true)
                .await
                .expect("segment");
            let log = Rc::new(CommitLog::new(
                dir.path().to_owned(),
                SEGMENT,
                SegmentMap::from([(0, seg)]),
                0,
                Vec::new(),
                1 << 20,
                0,
            ));
            // A full segment, flushed; the large read cache keeps its bytes in memory.
            log.append_raw(&vec![1u8; SEGMENT as usize], 0);
            log.flush(0).await.expect("flush");
            assert_eq!(log.buf.borrow().mem_start(), 0);
            log.close();
            assert!(log.remove_segment(0).is_some());
            assert!(log.segment_starts().is_empty());
            assert_eq!(log.min_offset(), SEGMENT);
        });
    }
}

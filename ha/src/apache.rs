//! Slave side of Apache RocketMQ's classic HA protocol (DefaultHAClient / HAConnection, spoken by
//! Apache 4.x masters and by 5.x masters outside controller mode), so this broker can follow an
//! Apache master and hold its CommitLog byte for byte at the same physical offsets.
//!
//! The protocol has no handshake and no checksum:
//! - slave -> master: its max physical offset as an `i64` (big-endian), first on connecting and then
//!   after data arrived and at least every 5 s (Apache's `haSendHeartbeatInterval`);
//! - master -> slave: frames `physical offset i64 | body size i32 | body`, the body being raw
//!   CommitLog bytes from that offset (at most the master's `haTransferBatchSize`, never past a
//!   segment's end, and cut anywhere, inside a record too); a frame with size 0 is a heartbeat.
//!
//! The master starts at the slave's first report; a slave reporting 0 (empty) gets the start of the
//! master's newest segment, so everything before it would be missing. An empty slave offered a
//! later offset therefore refuses it, saying how to seed the store: the master's sealed segment
//! files copied into `shard-0/commitlog` (recovery rebuilds their ConsumeQueues and index, and the
//! slave then reports their end, which the master takes as it is).
//!
//! Received bytes wait in a buffer until they hold whole records; only whole records are appended
//! (`append_replicated_unsynced` checks each record's CRC, its physical offset and its placement in
//! the segment, dispatches ConsumeQueues and the index). The offset reported is the end of what was
//! appended, so after a reconnect the master resumes at a record boundary and nothing is duplicated
//! or skipped.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::io::ReadHalf;
use glommio::net::TcpStream;
use storage::{MessageStore, StoreError};

use crate::error::HaError;
use crate::io::{read_exact_within, write_all_within};
use crate::signal::DataSignal;
use crate::slave::{now_ms, report_loop, SlaveConfig, SlaveStatus};
use crate::wire;

/// Apache's transfer header: physical offset, body size.
pub const HEADER: usize = 8 + 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Apache's `haHousekeepingInterval`: a master silent this long (it sends a heartbeat every 5 s) is
/// taken for gone.
const MASTER_SILENCE_LIMIT: Duration = Duration::from_secs(20);
/// Most replicated bytes held unflushed before the slave stops reading frames.
const UNFLUSHED_LIMIT: i64 = 64 << 20;

/// A transfer header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub offset: i64,
    pub size: usize,
}

impl Header {
    /// Decodes and bounds a header: a negative offset or size, or a body over `max_frame`, is refused.
    pub fn decode(b: &[u8; HEADER], max_frame: usize) -> Result<Header, HaError> {
        let (off, size) = b.split_at(8);
        let offset = i64::from_be_bytes(off.try_into().unwrap_or_default());
        let size = i32::from_be_bytes(size.try_into().unwrap_or_default());
        if offset < 0 {
            return Err(wire::WireError::NegativeOffset(offset).into());
        }
        let size = usize::try_from(size).map_err(|_| {
            HaError::Other(format!(
                "Apache master sent a frame of negative size {size}"
            ))
        })?;
        if size > max_frame {
            return Err(wire::WireError::FrameTooLarge {
                size: size as i64,
                max: max_frame,
            }
            .into());
        }
        Ok(Header { offset, size })
    }

    /// Encodes a header (what an Apache master sends, and ours to an Apache slave).
    pub fn encode(&self) -> [u8; HEADER] {
        let mut out = [0u8; HEADER];
        let (off, size) = out.split_at_mut(8);
        off.copy_from_slice(&self.offset.to_be_bytes());
        size.copy_from_slice(&(self.size as i32).to_be_bytes());
        out
    }
}

/// Bytes received but not yet appended: the tail of a record cut by a frame boundary.
struct Pending {
    /// Physical offset of `bytes[0]`: always the store's end.
    start: i64,
    bytes: Vec<u8>,
    /// Most bytes held before the slave gives up (a record larger than any the master may write).
    limit: usize,
}

impl Pending {
    fn end(&self) -> i64 {
        self.start.saturating_add(self.bytes.len() as i64)
    }
}

/// One connection to an Apache master: reports this log's end, then appends what arrives until an
/// error, the master's silence or `stopped()`.
pub(crate) async fn session(
    store: &MessageStore,
    cfg: &SlaveConfig,
    addr: SocketAddr,
    status: &SlaveStatus,
    stopped: &Rc<dyn Fn() -> bool>,
) -> Result<(), HaError> {
    let shard = store.shard_id();
    if shard != 0 {
        return Err(HaError::Refused(format!(
            "shard {shard}: an Apache master has one CommitLog, replicated to shard 0 only"
        )));
    }
    let mut stream = TcpStream::connect_timeout(addr, CONNECT_TIMEOUT)
        .await
        .map_err(|e| HaError::Other(format!("cannot connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    let end = store.max_physical_offset();
    write_all_within(&mut stream, &wire::encode_report(end), MASTER_SILENCE_LIMIT).await?;
    tracing::info!(
        "HA shard {shard}: replicating from the Apache master {addr} (classic protocol), starting at offset {end}"
    );
    status.connected.set(true);
    let (reader, writer) = futures_lite::io::split(stream);
    let reported = Rc::new(Cell::new(end));
    let signal = DataSignal::new();
    let done = Rc::new(Cell::new(false));
    let reporter = glommio::spawn_local(report_loop(
        writer,
        reported.clone(),
        signal.clone(),
        done.clone(),
        status.last_report_ms.clone(),
    ));
    let mut pending = Pending {
        start: end,
        bytes: Vec::new(),
        limit: cfg.max_frame.saturating_mul(2),
    };
    let result = receive(
        reader,
        store,
        cfg,
        status,
        &mut pending,
        &reported,
        &signal,
        stopped,
    )
    .await;
    done.set(true);
    signal.raise();
    let _ = reporter.await;
    result
}

#[allow(clippy::too_many_arguments)]
async fn receive(
    mut reader: ReadHalf<TcpStream>,
    store: &MessageStore,
    cfg: &SlaveConfig,
    status: &SlaveStatus,
    pending: &mut Pending,
    reported: &Cell<i64>,
    signal: &DataSignal,
    stopped: &Rc<dyn Fn() -> bool>,
) -> Result<(), HaError> {
    let mut header = [0u8; HEADER];
    let mut data = Vec::new();
    loop {
        read_exact_within(&mut reader, &mut header, MASTER_SILENCE_LIMIT).await?;
        if stopped() {
            return Ok(());
        }
        let frame = Header::decode(&header, cfg.max_frame).inspect_err(|_| reject(status))?;
        check_start(pending, &frame).inspect_err(|_| reject(status))?;
        if frame.size == 0 {
            continue;
        }
        data.resize(frame.size, 0);
        read_exact_within(&mut reader, &mut data, MASTER_SILENCE_LIMIT).await?;
        pending.bytes.extend_from_slice(&data);
        let new_end = store
            .append_replicated_unsynced(pending.start, &pending.bytes)
            .map_err(explain)
            .inspect_err(|_| reject(status))?;
        let taken = usize::try_from(new_end.saturating_sub(pending.start)).unwrap_or(0);
        pending.bytes.drain(..taken.min(pending.bytes.len()));
        pending.start = new_end;
        if pending.bytes.len() > pending.limit {
            reject(status);
            return Err(HaError::Other(format!(
                "{} bytes from offset {new_end} hold no whole record (more than {} bytes): is the \
                 master's maxMessageSize larger than this broker's?",
                pending.bytes.len(),
                pending.limit
            )));
        }
        status.frames.set(status.frames.get() + 1);
        status.bytes.set(status.bytes.get() + frame.size as u64);
        status.rate.add(frame.size as u64);
        if taken > 0 {
            status.last_append_ms.set(now_ms());
            reported.set(new_end);
            signal.raise();
        }
        while store
            .max_physical_offset()
            .saturating_sub(store.flushed_physical_offset())
            > UNFLUSHED_LIMIT
        {
            glommio::timer::sleep(Duration::from_millis(2)).await;
        }
        if stopped() {
            return Ok(());
        }
    }
}

fn reject(status: &SlaveStatus) {
    status.rejected.set(status.rejected.get() + 1);
}

/// A frame must continue exactly where the received bytes end. An empty store is the one case where
/// Apache's master picks the start itself (its newest segment's), which this store cannot begin at.
fn check_start(pending: &Pending, frame: &Header) -> Result<(), HaError> {
    let expected = pending.end();
    if frame.offset == expected {
        return Ok(());
    }
    if expected == 0 && pending.bytes.is_empty() {
        return Err(HaError::Refused(format!(
            "the Apache master starts an empty slave at its newest CommitLog segment (offset {}), \
             which would leave out everything before it: stop this broker, copy the master's \
             CommitLog files named below {} (sealed, they no longer change) into this store's \
             shard-0/commitlog directory and start it again; it rebuilds their ConsumeQueues and \
             index and asks the master for the rest",
            frame.offset, frame.offset
        )));
    }
    Err(wire::WireError::OutOfOrder {
        expected,
        got: frame.offset,
    }
    .into())
}

/// Adds the likely causes to a store refusal: segment sizes that differ put the master's end-of-file
/// blank where this store has none; a store that is not a copy of the master's log makes the master
/// resume inside a record.
fn explain(e: StoreError) -> HaError {
    match e {
        StoreError::Corrupt { .. } => HaError::Other(format!(
            "{e} (the master's records must land at the same offsets in segments of the same size: \
             is mappedFileSizeCommitLog the master's, and does this store hold only a copy of the \
             master's log?)"
        )),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_bounds() {
        let h = Header {
            offset: 1 << 33,
            size: 32 * 1024,
        };
        assert_eq!(Header::decode(&h.encode(), 64 * 1024).unwrap(), h);
        assert!(Header::decode(&h.encode(), 1024).is_err());
        let mut neg = h.encode();
        neg[0] = 0x80;
        assert!(Header::decode(&neg, 64 * 1024).is_err());
        let mut neg_size = h.encode();
        neg_size[8] = 0xff;
        assert!(Header::decode(&neg_size, 64 * 1024).is_err());
    }

    #[test]
    fn frames_must_continue_the_received_bytes() {
        let p = Pending {
            start: 100,
            bytes: vec![0; 20],
            limit: 1000,
        };
        assert!(check_start(
            &p,
            &Header {
                offset: 120,
                size: 5
            }
        )
        .is_ok());
        assert!(matches!(
            check_start(
                &p,
                &Header {
                    offset: 100,
                    size: 5
                }
            ),
            Err(HaError::Wire(wire::WireError::OutOfOrder {
                expected: 120,
                got: 100
            }))
        ));
        let empty = Pending {
            start: 0,
            bytes: Vec::new(),
            limit: 1000,
        };
        assert!(check_start(&empty, &Header { offset: 0, size: 0 }).is_ok());
        assert!(matches!(
            check_start(
                &empty,
                &Header {
                    offset: 1 << 30,
                    size: 0
                }
            ),
            Err(HaError::Refused(_))
        ));
    }
}

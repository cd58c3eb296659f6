//! Master side: reads a slave's handshake (on whichever shard accepted it), then, on the shard that
//! owns the requested stream, streams that shard's CommitLog from the slave's offset and records the
//! slave's acknowledgements in the shard's `Watermark`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use storage::{local_of, shard_of, MessageStore};

use crate::epochs::{decide_start, Start};
use crate::error::HaError;
use crate::io::{read_exact_within, write_all_within};
use crate::signal::DataSignal;
use crate::watermark::Watermark;
use crate::wire::{self, AcceptExt, Answer, FrameHeader, Handshake};

/// How long a slave may take to send its handshake and first report.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A slave that reports nothing for this long is dropped (it reports at least every 5 s).
pub const SLAVE_SILENCE_LIMIT: Duration = Duration::from_secs(20);
/// Longest a frame write may block (a stuck slave must not hold the sender forever).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a version 2 slave's first report after the acceptance: it may be cutting its log
/// first (a cut waits up to 30 s for its log to be durable).
const FIRST_REPORT_TIMEOUT: Duration = Duration::from_secs(90);
/// Senders re-check the log at least this often even without a signal.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// What a fresh connection to the HA port opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    /// Our handshake (it starts with `wire::MAGIC`).
    Ours(Handshake),
    /// An Apache slave (classic protocol): its first 8 bytes are its max physical offset. The first
    /// 4 bytes of an offset below 2^62 are never `wire::MAGIC` (that would be an offset of over 5 EiB),
    /// so the two are told apart without ambiguity.
    Apache { reported: i64 },
}

/// Reads what a fresh connection opens with: our handshake (either version) or an Apache slave's
/// first offset report.
pub async fn read_hello(stream: &mut TcpStream) -> Result<Hello, HaError> {
    let mut first = [0u8; 4];
    read_exact_within(stream, &mut first, HANDSHAKE_TIMEOUT).await?;
    if u32::from_be_bytes(first) != wire::MAGIC {
        let mut report = [0u8; wire::REPORT];
        let (high, low) = report.split_at_mut(4);
        high.copy_from_slice(&first);
        read_exact_within(stream, low, HANDSHAKE_TIMEOUT).await?;
        let reported = wire::decode_report(&report)?;
        return Ok(Hello::Apache { reported });
    }
    let mut fixed = [0u8; wire::HANDSHAKE_FIXED];
    let (magic, rest) = fixed.split_at_mut(4);
    magic.copy_from_slice(&first);
    read_exact_within(stream, rest, HANDSHAKE_TIMEOUT).await?;
    read_handshake_rest(stream, &fixed).await.map(Hello::Ours)
}

/// Reads a slave's handshake (either version) from a fresh connection.
pub async fn read_handshake(stream: &mut TcpStream) -> Result<Handshake, HaError> {
    let mut fixed = [0u8; wire::HANDSHAKE_FIXED];
    read_exact_within(stream, &mut fixed, HANDSHAKE_TIMEOUT).await?;
    read_handshake_rest(stream, &fixed).await
}

/// The rest of a handshake whose fixed part is `fixed`.
async fn read_handshake_rest(
    stream: &mut TcpStream,
    fixed: &[u8; wire::HANDSHAKE_FIXED],
) -> Result<Handshake, HaError> {
    let head = Handshake::decode_head(fixed)?;
    let mut name = vec![0u8; head.name_len];
    read_exact_within(stream, &mut name, HANDSHAKE_TIMEOUT).await?;
    let mut hello = Handshake::from_parts(head.shard_count, head.shard_id, &name)?;
    if wire::has_epochs(head.version) {
        let mut ext = [0u8; wire::HANDSHAKE_EXT_FIXED];
        read_exact_within(stream, &mut ext, HANDSHAKE_TIMEOUT).await?;
        let (broker_id, len) = Handshake::decode_ext_fixed(&ext)?;
        let mut entries = vec![0u8; len];
        read_exact_within(stream, &mut entries, HANDSHAKE_TIMEOUT).await?;
        hello.version = head.version;
        hello.broker_id = broker_id;
        hello.epochs = wire::decode_epochs(&entries)?;
    }
    Ok(hello)
}

/// Checks a handshake against this master; `Err` is the reason sent back to the slave.
pub fn check_handshake(h: &Handshake, shard_count: usize, broker_name: &str) -> Result<(), String> {
    if usize::from(h.shard_count) != shard_count {
        return Err(format!(
            "shard count mismatch: the slave runs {} shards, the master {shard_count}; set shardCount = {shard_count} on the slave (with an empty store)",
            h.shard_count
        ));
    }
    if usize::from(h.shard_id) >= shard_count {
        return Err(format!("no shard {} on this master", h.shard_id));
    }
    if h.broker_name != broker_name {
        return Err(format!(
            "brokerName mismatch: the slave is {:?}, this master is {broker_name:?}",
            h.broker_name
        ));
    }
    Ok(())
}

/// Sends a refusal and closes.
pub async fn refuse(mut stream: TcpStream, reason: &str) {
    let _ = write_all_within(
        &mut stream,
        &Answer::Refused(reason.to_owned()).encode(),
        Duration::from_secs(2),
    )
    .await;
    let _ = stream.close().await;
}

/// What a master's shard shares with its senders.
#[derive(Clone)]
pub struct MasterShard {
    pub store: MessageStore,
    pub watermark: Watermark,
    pub signal: DataSignal,
    pub transfer_batch_size: usize,
    /// The master's remoting address (`brokerIP1:listenPort`), told to the slave on acceptance.
    pub broker_addr: String,
}

/// Serves one slave whose handshake `hello` was accepted, on the shard owning the stream: reads its
/// first offset report, decides where it starts (a version 2 slave with epochs may have to cut its
/// log first), answers, then streams frames until either side fails.
pub async fn serve_slave(
    mut stream: TcpStream,
    ms: MasterShard,
    hello: &Handshake,
) -> Result<(), HaError> {
    let _ = stream.set_nodelay(true);
    let mut report = [0u8; wire::REPORT];
    read_exact_within(&mut stream, &mut report, HANDSHAKE_TIMEOUT).await?;
    let reported = wire::decode_report(&report)?;
    let start = plan_start(&ms.store, hello, reported)
        .and_then(|start| check_start(&ms.store, start.offset()).map(|()| start));
    let start = match start {
        Ok(s) if wire::has_epochs(hello.version) => {
            match starts_record(&ms.store, s.offset()).await {
                Ok(()) => Ok(s),
                Err(reason) => Err(reason),
            }
        }
        other => other,
    };
    let start = match start {
        Ok(s) => s,
        Err(reason) => {
            refuse(stream, &reason).await;
            return Err(HaError::Refused(reason));
        }
    };
    let from = start.offset();
    let mut answer = Answer::Accepted(ms.broker_addr.clone()).encode();
    if wire::has_epochs(hello.version) {
        let truncate_offset = match start {
            Start::Truncate(at) => at,
            Start::From(_) => wire::NO_TRUNCATION,
        };
        answer.extend_from_slice(
            &AcceptExt {
                truncate_offset,
                epochs: ms.store.epochs(),
            }
            .encode(),
        );
        if let Start::Truncate(at) = start {
            tracing::warn!(
                "HA shard {}: slave {} must cut its log from {} back to {} (data of an epoch this master never had)",
                ms.store.shard_id(),
                hello.broker_id,
                local_of(reported),
                local_of(at)
            );
        }
    }
    write_all_within(&mut stream, &answer, WRITE_TIMEOUT).await?;
    // A version 2 slave counts (acks, catch-up time, SyncStateSet) only once its first report says
    // its log ends exactly at `from`: a slave whose cut failed never reports (Apache's master, too,
    // counts a slave only from its TRANSFER-state reports).
    let first = if wire::has_epochs(hello.version) {
        let mut report = [0u8; wire::REPORT];
        read_exact_within(&mut stream, &mut report, FIRST_REPORT_TIMEOUT).await?;
        let first = wire::decode_report(&report)?;
        if first != from {
            let why = format!(
                "slave {} reported its log end at {} after the handshake, not at {} where its replication starts",
                hello.broker_id,
                local_of(first),
                local_of(from)
            );
            tracing::error!("HA shard {}: {why}; connection closed", ms.store.shard_id());
            return Err(HaError::Other(why));
        }
        Some(first)
    } else {
        None
    };
    let conn = ms.watermark.connected_as(from, hello.broker_id);
    if let Some(first) = first {
        ms.watermark
            .ack(conn, first, ms.store.max_physical_offset());
    }
    if let Ok(peer) = stream.peer_addr() {
        ms.watermark.set_addr(conn, peer.to_string());
    }
    let rate = ms.watermark.rate(conn).unwrap_or_default();
    let closed = Rc::new(Cell::new(false));
    let (reader, writer) = futures_lite::io::split(stream);
    let acks = glommio::spawn_local(read_acks(reader, ms.clone(), conn, closed.clone()));
    let framing = if hello.version == wire::VERSION_3 {
        Framing::OursConfirmed
    } else {
        Framing::Ours
    };
    let result = stream_frames(writer, &ms, from, &closed, &rate, framing).await;
    closed.set(true);
    ms.watermark.disconnected(conn);
    // The ack reader ends on its own once the socket is gone; don't wait for a silent peer.
    drop(acks.cancel());
    result
}

/// Where a slave reporting `reported` starts: a version 2 slave that sent epochs by the epoch rule
/// (`epochs::decide_start`), any other by its report (the classic rule, checked by `check_start`).
fn plan_start(store: &MessageStore, hello: &Handshake, reported: i64) -> Result<Start, String> {
    if !wire::has_epochs(hello.version) || hello.epochs.is_empty() {
        return Ok(Start::From(reported));
    }
    if shard_of(reported) != store.shard_id() {
        return Err(format!(
            "offset {reported} is not in shard {}'s stream",
            store.shard_id()
        ));
    }
    let slave_has_data = local_of(reported) > 0;
    decide_start(
        &store.epochs(),
        store.max_physical_offset(),
        &hello.epochs,
        reported,
        slave_has_data,
    )
}

/// A version 2 slave starts only where a record of this log starts (its end counts): a slave whose
/// log differs from this one inside a record (it wrote bytes this master never had) would otherwise
/// get frames cut mid-record.
async fn starts_record(store: &MessageStore, from: i64) -> Result<(), String> {
    match store.record_starts_at(from).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "no record starts at {} in this master's shard {} log: the slave's log differs from the master's inside a record; clear the slave's store",
            local_of(from),
            store.shard_id()
        )),
        Err(e) => Err(format!(
            "cannot check for a record at {} in this master's log: {e}",
            local_of(from)
        )),
    }
}

/// Where a slave may start: its end must be a point of this shard's log that the master still holds.
pub(crate) fn check_start(store: &MessageStore, from: i64) -> Result<(), String> {
    let shard = store.shard_id();
    if shard_of(from) != shard {
        return Err(format!("offset {from} is not in shard {shard}'s stream"));
    }
    let max = store.max_physical_offset();
    let min = store.min_physical_offset();
    if from > max {
        return Err(format!(
            "the slave's shard {shard} log ends at {} but the master's ends at {}: the slave holds data the master lost; clear the slave's store",
            local_of(from),
            local_of(max)
        ));
    }
    if from < min {
        return Err(format!(
            "the slave's shard {shard} log ends at {} but the master only holds data from {}",
            local_of(from),
            local_of(min)
        ));
    }
    Ok(())
}

/// How data frames are laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Ours: offset, size, crc32 (`wire::FrameHeader`).
    Ours,
    /// Ours, then the master's confirm offset (version 3: `wire::CONFIRM`).
    OursConfirmed,
    /// Apache's classic HA: offset, size (`apache::Header`).
    Apache,
}

impl Framing {
    /// The header of a frame of `data` at `start`; `confirm` is the master's confirm offset.
    fn header(self, start: i64, data: &[u8], confirm: i64) -> Vec<u8> {
        match self {
            Framing::Ours => FrameHeader::for_data(start, data).encode().to_vec(),
            Framing::OursConfirmed => {
                let mut out = FrameHeader::for_data(start, data).encode().to_vec();
                out.extend_from_slice(&wire::encode_confirm(confirm));
                out
            }
            Framing::Apache => crate::apache::Header {
                offset: start,
                size: data.len(),
            }
            .encode()
            .to_vec(),
        }
    }
}

/// Reads a slave's offset reports (8 bytes each, in both protocols) and records them as its acks.
pub(crate) async fn read_acks(
    mut reader: futures_lite::io::ReadHalf<TcpStream>,
    ms: MasterShard,
    conn: u64,
    closed: Rc<Cell<bool>>,
) {
    let mut buf = [0u8; wire::REPORT];
    loop {
        if closed.get() {
            return;
        }
        let result = read_exact_within(&mut reader, &mut buf, SLAVE_SILENCE_LIMIT).await;
        let offset = match result.and_then(|()| wire::decode_report(&buf).map_err(HaError::from)) {
            Ok(o) => o,
            Err(e) => {
                if !closed.get() {
                    tracing::info!(
                        "HA shard {}: slave connection ended: {e}",
                        ms.store.shard_id()
                    );
                }
                break;
            }
        };
        ms.watermark
            .ack(conn, offset, ms.store.max_physical_offset());
    }
    closed.set(true);
    // Wake the sender so it notices.
    ms.signal.raise();
}

/// Streams durable whole records from `from`, never past a segment's end, with a heartbeat frame
/// every `wire::HEARTBEAT_SECS` while idle.
pub(crate) async fn stream_frames(
    mut writer: futures_lite::io::WriteHalf<TcpStream>,
    ms: &MasterShard,
    from: i64,
    closed: &Cell<bool>,
    rate: &crate::rate::ByteRate,
    framing: Framing,
) -> Result<(), HaError> {
    let batch = ms.transfer_batch_size.max(4096);
    let mut next = from;
    let mut buf = Vec::with_capacity(batch + wire::FRAME_HEADER + wire::CONFIRM);
    let heartbeat = Duration::from_secs(wire::HEARTBEAT_SECS);
    let mut last_sent = std::time::Instant::now();
    // The confirm offset the slave was last told (version 3); None: not yet, told at once.
    let mut told: Option<i64> = None;
    loop {
        if closed.get() {
            return Ok(());
        }
        let seq = ms.signal.seq();
        let confirm = confirm_offset(&ms.store);
        // Durable bytes only: see `MessageStore::read_durable_commitlog`.
        let durable = ms.store.flushed_physical_offset();
        let mut data = ms.store.read_durable_commitlog(next, batch).await?;
        let len = match wire::whole_records(&data) {
            Ok(n) => n,
            // One record larger than a batch travels alone, once all of it is durable.
            Err(size) if next.saturating_add(size as i64) <= durable => {
                data = ms.store.read_durable_commitlog(next, size).await?;
                wire::whole_records(&data).unwrap_or_default()
            }
            Err(_) => 0,
        };
        if len == 0 {
            check_stuck(ms, next, &data, durable)?;
            let moved = framing == Framing::OursConfirmed && told != Some(confirm);
            if moved || last_sent.elapsed() >= heartbeat {
                let empty = framing.header(next, &[], confirm);
                write_all_within(&mut writer, &empty, WRITE_TIMEOUT).await?;
                last_sent = std::time::Instant::now();
                told = Some(confirm);
            }
            let written = ms.store.max_physical_offset();
            if written > durable {
                // Written but not yet synced: have the flusher sync it now (with ASYNC_FLUSH it would
                // wait for its interval) and send it once durable.
                ms.store.request_flush();
                let synced = async {
                    if ms.store.wait_durable(written).await.is_err() {
                        // A failed flush: the store says why elsewhere; retry at the idle pace.
                        glommio::timer::sleep(IDLE_POLL).await;
                    }
                };
                futures_lite::future::or(synced, glommio::timer::sleep(IDLE_POLL)).await;
            } else {
                let wake = ms.signal.changed(seq);
                let tick = glommio::timer::sleep(IDLE_POLL);
                futures_lite::future::or(wake, tick).await;
            }
            continue;
        }
        let Some(chunk) = data.get(..len) else {
            return Err(HaError::Other(
                "record boundary beyond the data read".into(),
            ));
        };
        buf.clear();
        buf.extend_from_slice(&framing.header(next, chunk, confirm));
        buf.extend_from_slice(chunk);
        write_all_within(&mut writer, &buf, WRITE_TIMEOUT).await?;
        rate.add(buf.len() as u64);
        last_sent = std::time::Instant::now();
        told = Some(confirm);
        next = next.saturating_add(len as i64);
    }
}

/// What a version 3 slave may show of this master's log: the confirm offset, or without a gate
/// (classic mode, `readUnCommitted`, a master alone in its SyncStateSet) the whole log.
fn confirm_offset(store: &MessageStore) -> i64 {
    store
        .confirm_offset()
        .unwrap_or_else(|| store.max_physical_offset())
}

/// With nothing to send at `next`: an error when the slave's position can never be served (deleted
/// here, or durable bytes there that do not start a record).
fn check_stuck(ms: &MasterShard, next: i64, data: &[u8], durable: i64) -> Result<(), HaError> {
    if next < ms.store.min_physical_offset() {
        return Err(HaError::Other(format!(
            "the slave needs offset {next}, already deleted on the master"
        )));
    }
    let unreadable = match wire::whole_records(data) {
        Ok(0) => data.len() >= 4,
        Ok(_) => false,
        Err(size) => next.saturating_add(size as i64) <= durable,
    };
    if unreadable {
        return Err(HaError::Other(format!(
            "the log at {next} does not start a record; stopping this stream"
        )));
    }
    Ok(())
}

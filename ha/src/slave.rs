//! Slave side: one replication connection per shard to the master's HA port. Sends the handshake and
//! its log end, appends each checked frame byte-identically, reports its new end after every append and
//! at least every 5 s; on any error it ends, and `follow` backs off and reconnects from the true end. In
//! controller mode (a broker id set) it speaks version 3: it sends its epochs, cuts its log where the
//! master says, and adopts the master's epochs before replicating; each frame brings the master's
//! confirm offset, past which its reads show nothing (`MessageStore::set_replica_bound`).

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::io::{ReadHalf, WriteHalf};
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use storage::MessageStore;

use crate::error::HaError;
use crate::io::{read_exact_within, write_all_within};
use crate::signal::DataSignal;
use crate::wire::{self, AcceptExt, Answer, FrameHeader, Handshake};

/// The slave reports its end at least this often (heartbeat).
pub const REPORT_INTERVAL: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// A master sends an empty frame every 5 s when idle: silence this long means the link is dead.
const MASTER_SILENCE_LIMIT: Duration = Duration::from_secs(20);
/// Most replicated bytes a slave holds unflushed before it stops reading frames.
const UNFLUSHED_LIMIT: i64 = 64 << 20;

pub struct SlaveConfig {
    pub broker_name: String,
    pub shard_count: u16,
    /// Largest frame accepted: the master's batch size, or one record when a record is larger.
    pub max_frame: usize,
    /// The controller broker id in controller mode (handshake version 2, epochs and truncation);
    /// `wire::NO_BROKER_ID` for classic master/slave (version 1).
    pub broker_id: i64,
    /// Which protocol the master speaks: ours, or Apache's classic HA (`apache`).
    pub protocol: MasterProtocol,
}

/// The replication protocol a slave speaks to its master (`haMasterProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MasterProtocol {
    /// Ours: handshake, CRC-checked frames of whole records, per-shard streams.
    #[default]
    Native,
    /// Apache RocketMQ's classic HA (4.x, 5.x outside controller mode): offset reports and raw
    /// CommitLog frames, one stream (shard 0).
    Apache,
}

/// What a slave shard's replication is doing, for logs and runtime info.
#[derive(Default)]
pub struct SlaveStatus {
    pub connected: Cell<bool>,
    /// Unix ms of the last frame appended (0 = none yet).
    pub last_append_ms: Cell<i64>,
    pub frames: Cell<u64>,
    pub bytes: Cell<u64>,
    /// Connections closed because of a bad frame or a store refusal.
    pub rejected: Cell<u64>,
    /// Times the master had this slave cut its log's tail (controller mode), and bytes cut.
    pub truncations: Cell<u64>,
    pub truncated_bytes: Cell<u64>,
    /// The master's remoting address, as it said when accepting.
    pub master_addr: std::cell::RefCell<Option<String>>,
    /// Bytes received per second (`haStatus`).
    pub rate: crate::rate::ByteRate,
    /// Unix ms of the last offset report written to the master (0 = none yet).
    pub last_report_ms: Rc<Cell<i64>>,
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) async fn session(
    store: &MessageStore,
    cfg: &SlaveConfig,
    addr: SocketAddr,
    status: &SlaveStatus,
    stopped: &Rc<dyn Fn() -> bool>,
) -> Result<(), HaError> {
    let shard = store.shard_id();
    let controller_mode = cfg.broker_id != wire::NO_BROKER_ID;
    if let Some(why) = store.unrecovered_failure() {
        // What it would acknowledge is not what its disk holds: a restart's recovery comes first.
        return Err(HaError::Other(format!(
            "not replicating: this store refuses writes until a restart ({why})"
        )));
    }
    let end = store.max_physical_offset();
    let (stream, end) = if controller_mode {
        let (stream, new_end) = adopt_master_history(store, cfg, addr, status, end).await?;
        if new_end < end {
            status.truncations.set(status.truncations.get() + 1);
            let cut = u64::try_from(end - new_end).unwrap_or_default();
            status
                .truncated_bytes
                .set(status.truncated_bytes.get() + cut);
        }
        (stream, new_end)
    } else {
        let (stream, _) = handshake(store, cfg, addr, status, end).await?;
        (stream, end)
    };
    tracing::info!(
        "HA shard {shard}: replicating from {addr}, starting at local offset {}",
        storage::local_of(end)
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
    let result = receive(
        reader,
        store,
        cfg,
        status,
        &reported,
        &signal,
        stopped,
        controller_mode,
    )
    .await;
    done.set(true);
    signal.raise();
    // The reporter ends on the next wake-up; its error, if any, is already reflected in `result`.
    let _ = reporter.await;
    result
}

/// Connects, sends the handshake with `end` as this slave's log end and reads the answer; in
/// controller mode also the truncation offset and the master's epochs that follow an acceptance.
async fn handshake(
    store: &MessageStore,
    cfg: &SlaveConfig,
    addr: SocketAddr,
    status: &SlaveStatus,
    end: i64,
) -> Result<(TcpStream, Option<(i64, Vec<storage::EpochEntry>)>), HaError> {
    let shard = store.shard_id();
    let mut stream = TcpStream::connect_timeout(addr, CONNECT_TIMEOUT)
        .await
        .map_err(|e| HaError::Other(format!("cannot connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    let mut handshake = Handshake::classic(cfg.shard_count, shard, &cfg.broker_name);
    let controller_mode = cfg.broker_id != wire::NO_BROKER_ID;
    if controller_mode {
        handshake.version = wire::VERSION_3;
        handshake.broker_id = cfg.broker_id;
        handshake.epochs = store.epochs();
    }
    let mut hello = handshake.encode();
    hello.extend_from_slice(&wire::encode_report(end));
    write_all_within(&mut stream, &hello, ANSWER_TIMEOUT).await?;
    let mut fixed = [0u8; wire::ANSWER_FIXED];
    read_exact_within(&mut stream, &mut fixed, ANSWER_TIMEOUT).await?;
    let (accepted, len) = Answer::decode_fixed(&fixed)?;
    let mut msg = vec![0u8; len];
    read_exact_within(&mut stream, &mut msg, ANSWER_TIMEOUT).await?;
    if accepted {
        let addr = String::from_utf8_lossy(&msg).into_owned();
        *status.master_addr.borrow_mut() = Some(addr).filter(|a| !a.is_empty());
    } else {
        let reason = String::from_utf8_lossy(&msg).into_owned();
        tracing::error!("HA shard {shard}: the master at {addr} refused replication: {reason}");
        return Err(HaError::Refused(reason));
    }
    if !controller_mode {
        return Ok((stream, None));
    }
    let mut fixed = [0u8; wire::ACCEPT_EXT_FIXED];
    read_exact_within(&mut stream, &mut fixed, ANSWER_TIMEOUT).await?;
    let (truncate_offset, len) = AcceptExt::decode_fixed(&fixed)?;
    let mut entries = vec![0u8; len];
    read_exact_within(&mut stream, &mut entries, ANSWER_TIMEOUT).await?;
    let epochs = wire::decode_epochs(&entries)?;
    Ok((stream, Some((truncate_offset, epochs))))
}

/// Version 2: handshakes, cuts the log where the master says, and adopts the master's epoch history
/// (Apache RocketMQ's AutoSwitchHAClient handshake and truncation). Returns the connection and the
/// log end replication starts from.
///
/// The cut is never skipped: replicating from this log's own end after a failed cut would leave bytes
/// the master never had below the replication point. When the master's point `p` falls inside one
/// of this log's records (this slave wrote bytes there that the master never had), the slave takes
/// the start `b` of that record and handshakes again claiming `b` as its end: the master accepts
/// only if its own log has a record starting at `b` that it still holds (so everything cut from `b`
/// on is fetched again from it), or names an earlier point. Then the slave cuts. Any other failure
/// (a refusal, a cut that fails) ends the attempt with an ERROR and no replication; `follow`
/// retries the handshake after its back-off, so a repaired disk or another master resolves it.
async fn adopt_master_history(
    store: &MessageStore,
    cfg: &SlaveConfig,
    addr: SocketAddr,
    status: &SlaveStatus,
    end: i64,
) -> Result<(TcpStream, i64), HaError> {
    let shard = store.shard_id();
    let local = storage::local_of;
    let mut claim = end;
    let mut tries = 0;
    loop {
        tries += 1;
        let (stream, ext) = handshake(store, cfg, addr, status, claim).await?;
        let (truncate_offset, epochs) = ext.ok_or_else(|| {
            HaError::Other("no truncation offset after a version 2 acceptance".to_owned())
        })?;
        let target = if truncate_offset == wire::NO_TRUNCATION {
            claim
        } else if truncate_offset > claim {
            return Err(HaError::Other(format!(
                "the master says cut at {}, past the end {} this slave claimed",
                local(truncate_offset),
                local(claim)
            )));
        } else {
            truncate_offset
        };
        if target < end {
            let starts = store.record_starts_at(target).await.map_err(|e| {
                tracing::error!(
                    "HA shard {shard}: cannot cut local offsets {}..{} for the master at {addr}: {e}; not replicating",
                    local(target),
                    local(end)
                );
                HaError::Store(e)
            })?;
            if !starts {
                let before = store.record_start_at_or_before(target).await?;
                tracing::error!(
                    "HA shard {shard}: the master at {addr} has no copy of local offsets {}..{}, but no local record starts at {} (the record at {} crosses it: this slave wrote bytes the master never had); asking the master to confirm it holds a record at {}",
                    local(target),
                    local(end),
                    local(target),
                    local(before),
                    local(before)
                );
                if tries >= 2 || before >= target {
                    return Err(HaError::Other(format!(
                        "no record starts at local offset {} (the master's divergence point); not replicating",
                        local(target)
                    )));
                }
                claim = before;
                drop(stream);
                continue;
            }
            tracing::warn!(
                "HA shard {shard}: the master has no copy of local offsets {}..{} (written in an older epoch or never replicated): cutting them",
                local(target),
                local(end)
            );
            if let Err(e) = store.truncate_tail(target).await {
                tracing::error!(
                    "HA shard {shard}: cutting local offsets {}..{} for the master at {addr} failed: {e}; not replicating (retried at the next handshake)",
                    local(target),
                    local(end)
                );
                return Err(HaError::Store(e));
            }
        }
        // Its data up to here is the master's; what comes next is too, so its history is ours.
        store.set_epochs(epochs)?;
        let now = store.max_physical_offset();
        if now != target {
            return Err(HaError::Other(format!(
                "after the handshake this log ends at {}, not at {} where the master starts",
                local(now),
                local(target)
            )));
        }
        // A gate from before the role was known (a restart), or a deposed master's, moves up to
        // the master's confirm offset, which its first frame brings: what this log holds is the
        // master's, but not all of it is confirmed there (a deposed master's slave has the
        // unconfirmed tail it shared, chaos seed 1728471827).
        store.set_replica_bound(Some(i64::MIN));
        return Ok((stream, now));
    }
}

/// Writes the slave's log end whenever it moved, and at least every `REPORT_INTERVAL`.
pub(crate) async fn report_loop(
    mut writer: WriteHalf<TcpStream>,
    end: Rc<Cell<i64>>,
    signal: DataSignal,
    done: Rc<Cell<bool>>,
    wrote_at: Rc<Cell<i64>>,
) -> Result<(), HaError> {
    let mut sent = -1i64;
    let mut last = Instant::now();
    loop {
        let seq = signal.seq();
        if done.get() {
            let _ = writer.close().await;
            return Ok(());
        }
        let now = end.get();
        if now != sent || last.elapsed() >= REPORT_INTERVAL {
            if let Err(e) =
                write_all_within(&mut writer, &wire::encode_report(now), REPORT_INTERVAL * 2).await
            {
                done.set(true);
                return Err(e);
            }
            sent = now;
            last = Instant::now();
            wrote_at.set(now_ms());
        }
        let wake = signal.changed(seq);
        let tick = glommio::timer::sleep(
            REPORT_INTERVAL
                .saturating_sub(last.elapsed())
                .max(Duration::from_millis(10)),
        );
        futures_lite::future::or(wake, tick).await;
    }
}

/// Reads, checks and appends frames until the connection fails or the slave stops. `confirmed`: the
/// stream is version 3, each frame header followed by the master's confirm offset.
#[allow(clippy::too_many_arguments)]
async fn receive(
    mut reader: ReadHalf<TcpStream>,
    store: &MessageStore,
    cfg: &SlaveConfig,
    status: &SlaveStatus,
    reported: &Cell<i64>,
    signal: &DataSignal,
    stopped: &Rc<dyn Fn() -> bool>,
    confirmed: bool,
) -> Result<(), HaError> {
    let mut header = [0u8; wire::FRAME_HEADER];
    let mut confirm = [0u8; wire::CONFIRM];
    let mut data = Vec::new();
    loop {
        read_exact_within(&mut reader, &mut header, MASTER_SILENCE_LIMIT).await?;
        if confirmed {
            read_exact_within(&mut reader, &mut confirm, MASTER_SILENCE_LIMIT).await?;
        }
        if stopped() {
            return Ok(());
        }
        let expected = store.max_physical_offset();
        let frame = FrameHeader::decode(&header, expected, cfg.max_frame).inspect_err(|_| {
            status.rejected.set(status.rejected.get() + 1);
        })?;
        if confirmed {
            // Before the append: the records it brings above the master's confirm offset wait.
            store.set_replica_bound(Some(wire::decode_confirm(&confirm)));
        }
        if frame.size == 0 {
            continue;
        }
        data.resize(frame.size, 0);
        read_exact_within(&mut reader, &mut data, MASTER_SILENCE_LIMIT).await?;
        frame.check(&data).inspect_err(|_| {
            status.rejected.set(status.rejected.get() + 1);
        })?;
        // Acknowledged once appended, not once synced (as RocketMQ's slaves): the master already
        // holds the data, and a sync per frame would cap a SYNC_MASTER at one frame per fsync.
        let new_end = store
            .append_replicated_unsynced(frame.start, &data)
            .inspect_err(|_| status.rejected.set(status.rejected.get() + 1))?;
        status.frames.set(status.frames.get() + 1);
        status.bytes.set(status.bytes.get() + frame.size as u64);
        status.rate.add(frame.size as u64);
        status.last_append_ms.set(now_ms());
        reported.set(new_end);
        signal.raise();
        let whole_end = frame.start.saturating_add(frame.size as i64);
        if new_end != whole_end {
            status.rejected.set(status.rejected.get() + 1);
            return Err(HaError::Other(format!(
                "frame at {} of {} bytes ended inside a record (appended up to {new_end})",
                frame.start, frame.size
            )));
        }
        // Catching up faster than the disk writes: let the flusher gain ground first.
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

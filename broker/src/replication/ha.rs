//! The broker's use of the `ha` crate: the HA listener (shard 0 accepts, each stream is served by the
//! shard owning it), the slave replication tasks, the SYNC_MASTER wait after a put, and HA figures.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

use glommio::net::{TcpListener, TcpStream};
use storage::PutOk;

use crate::shard::put::{PutOutcome, SendStatus};

use crate::config::BrokerRole;
use crate::shard::Shard;

/// After records reached a queue: wakes the master's senders. On a slave, replicated records of a
/// topic (or queue) its config does not know yet, because the master created it since the last copy,
/// get a stand-in config at once, so the slave can serve them even if the master dies before the next
/// copy, and shard 0 copies the master's metadata now (which replaces the stand-in).
pub fn on_arrival(shard: &Rc<Shard>, topic: &str, queue_id: i32) {
    crate::replication::ha_state::ha(shard).signal.raise();
    if is_master(shard) {
        return;
    }
    let known = shard
        .topics
        .borrow()
        .get(topic)
        .map(|tc| tc.read_queue_nums);
    if known.is_some_and(|n| queue_id < n) {
        return;
    }
    let default = i32::try_from(shard.cfg.default_topic_queue_nums).unwrap_or(4);
    let queues = default.max(queue_id.saturating_add(1));
    if !crate::replication::ha_state::ha(shard)
        .unknown_topics
        .borrow_mut()
        .insert((topic.to_owned(), queues))
    {
        return;
    }
    let s = shard.clone();
    let topic = topic.to_owned();
    glommio::spawn_local(async move { s.control_shard().topic_seen(topic, queues).await }).detach();
}

/// Shard 0 of a slave: installs a stand-in config for a replicated topic and asks for a metadata copy.
pub async fn topic_seen(shard: &Rc<Shard>, topic: String, queues: i32) {
    crate::replication::ha_state::ha(shard).sync_soon.set(true);
    let existing = shard.topics.borrow().get(&topic).cloned();
    if existing
        .as_ref()
        .is_some_and(|tc| tc.read_queue_nums >= queues)
    {
        return;
    }
    let tc = match existing {
        Some(tc) => protocol::body::TopicConfig {
            read_queue_nums: queues,
            write_queue_nums: tc.write_queue_nums.max(queues),
            ..tc
        },
        None => protocol::body::TopicConfig::new(topic.clone(), queues),
    };
    tracing::info!(
        "HA: replicated data of topic {topic} arrived before its config: serving it with {queues} queues until the master's config is copied"
    );
    crate::role::control::change_topic(shard, Some(tc), None).await;
}

fn is_master(shard: &Shard) -> bool {
    shard.role() != BrokerRole::Slave
}

/// Starts this shard's HA work for its role (called once the mesh serves).
pub fn start(shard: &Rc<Shard>) -> Result<(), crate::error::BrokerError> {
    if shard.cfg.controller.enabled {
        crate::replication::confirm::start(shard);
        // Either role may come at any time: slaves are refused while this broker is one, and
        // replication starts when the controllers name a master (`follow_master`).
        if shard.id == 0 {
            start_listener(shard)?;
            crate::replication::ha_sync::start(shard);
        }
        start_lag_log(shard);
        return Ok(());
    }
    if is_master(shard) {
        if shard.id == 0 {
            start_listener(shard)?;
        }
        start_lag_log(shard);
    } else {
        start_slave(shard);
    }
    Ok(())
}

/// How often a master logs its slaves' lag (when they lag).
const LAG_LOG_PERIOD: Duration = Duration::from_secs(30);

fn start_lag_log(shard: &Rc<Shard>) {
    let shard = shard.clone();
    glommio::spawn_local(async move {
        loop {
            glommio::timer::sleep(LAG_LOG_PERIOD).await;
            if shard.shutting_down.get() {
                return;
            }
            let s =
                crate::replication::ha_state::ha(&shard).stats(shard.store.max_physical_offset());
            if s.slaves > 0 && (s.behind_bytes > 0 || s.behind_ms > 0) {
                tracing::info!(
                    "HA shard {}: best slave is {} bytes and {} ms behind",
                    shard.id,
                    s.behind_bytes,
                    s.behind_ms
                );
            }
        }
    })
    .detach();
}

fn start_listener(shard: &Rc<Shard>) -> Result<(), crate::error::BrokerError> {
    let ip: std::net::IpAddr = shard
        .cfg
        .bind_address
        .parse()
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    let addr = SocketAddr::new(ip, shard.cfg.ha_listen_port);
    let listener = TcpListener::bind(addr).map_err(|e| {
        crate::error::BrokerError::io(
            format!("HA port {addr}"),
            std::io::Error::other(e.to_string()),
        )
    })?;
    tracing::info!("HA: listening for slaves on {addr}");
    let shard = shard.clone();
    glommio::spawn_local(async move {
        loop {
            let stream = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    if shard.shutting_down.get() {
                        return;
                    }
                    tracing::warn!("HA: accept failed: {e}");
                    glommio::timer::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if shard.shutting_down.get() {
                return;
            }
            let shard = shard.clone();
            glommio::spawn_local(route_connection(shard, stream)).detach();
        }
    })
    .detach();
    Ok(())
}

/// Reads the handshake and passes the socket to the shard owning the requested stream.
async fn route_connection(shard: Rc<Shard>, mut stream: TcpStream) {
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    let hello = match ha::read_hello(&mut stream).await {
        Ok(ha::Hello::Ours(h)) => h,
        Ok(ha::Hello::Apache { reported }) => {
            serve_apache(shard, stream, peer, reported).await;
            return;
        }
        Err(e) => {
            tracing::warn!("HA: bad handshake from {peer}: {e}");
            return;
        }
    };
    if let Err(reason) = ha::check_handshake(&hello, shard.shards, &shard.cfg.broker_name) {
        tracing::error!(
            "HA: refusing slave {peer} (shard {}): {reason}",
            hello.shard_id
        );
        ha::refuse(stream, &reason).await;
        return;
    }
    let target = usize::from(hello.shard_id);
    if target == shard.id {
        serve(shard, stream, peer, hello).await;
        return;
    }
    // The socket moves to its shard's executor as a duplicate descriptor; this one is closed here.
    // Should the hand-over fail, the job and the descriptor it owns are dropped, closing it.
    // SAFETY: `stream` is open and outlives `borrowed`, which is only used to duplicate it.
    let borrowed = unsafe { BorrowedFd::borrow_raw(stream.as_raw_fd()) };
    match borrowed.try_clone_to_owned() {
        Ok(fd) => {
            drop(stream);
            shard.on(target).adopt_slave(fd, peer, hello).await;
        }
        Err(e) => {
            tracing::error!("HA: cannot pass the connection of {peer} to shard {target}: {e}")
        }
    }
}

/// On the owning shard: takes over a slave connection passed by shard 0.
pub(crate) fn adopt(shard: &Rc<Shard>, fd: OwnedFd, peer: String, hello: ha::wire::Handshake) {
    // SAFETY: `fd` is an open TCP socket descriptor duplicated for this shard alone; `into_raw_fd`
    // gives up its ownership, which the stream takes over.
    let stream = unsafe { TcpStream::from_raw_fd(fd.into_raw_fd()) };
    glommio::spawn_local(serve(shard.clone(), stream, peer, hello)).detach();
}

async fn serve(shard: Rc<Shard>, stream: TcpStream, peer: String, hello: ha::wire::Handshake) {
    if !is_master(&shard) {
        ha::refuse(stream, "this broker is a SLAVE").await;
        return;
    }
    let ms = master_shard(&shard);
    tracing::info!("HA shard {}: slave {peer} connected", shard.id);
    match ha::serve_slave(stream, ms, &hello).await {
        Ok(()) => tracing::info!("HA shard {}: slave {peer} disconnected", shard.id),
        Err(e) => tracing::warn!("HA shard {}: slave {peer} dropped: {e}", shard.id),
    }
}

/// An Apache slave (classic protocol) on the HA port: served on this shard (0, the listener's) when
/// the broker is a one-shard master; otherwise closed with the reason logged.
async fn serve_apache(shard: Rc<Shard>, mut stream: TcpStream, peer: String, reported: i64) {
    let refusal = if !is_master(&shard) {
        Some("this broker is a SLAVE".to_owned())
    } else if shard.shards != 1 || shard.id != 0 {
        Some(format!(
            "this master runs {} shards: an Apache slave keeps one CommitLog and can only follow a master with shardCount = 1",
            shard.shards
        ))
    } else {
        None
    };
    if let Some(reason) = refusal {
        tracing::error!("HA: refusing Apache slave {peer}: {reason}");
        let _ = futures_lite::AsyncWriteExt::close(&mut stream).await;
        return;
    }
    let ms = master_shard(&shard);
    tracing::info!("HA: Apache slave {peer} connected, reporting offset {reported}");
    match ha::serve_apache_slave(stream, ms, reported).await {
        Ok(()) => tracing::info!("HA: Apache slave {peer} disconnected"),
        Err(ha::HaError::Refused(reason)) => {
            tracing::error!("HA: refusing Apache slave {peer}: {reason}")
        }
        Err(e) => tracing::warn!("HA: Apache slave {peer} dropped: {e}"),
    }
}

fn master_shard(shard: &Shard) -> ha::MasterShard {
    ha::MasterShard {
        store: shard.store.clone(),
        watermark: crate::replication::ha_state::ha(shard).watermark.clone(),
        signal: crate::replication::ha_state::ha(shard).signal.clone(),
        transfer_batch_size: shard.cfg.ha_transfer_batch_size,
        broker_addr: shard.broker.broker_addr.clone(),
    }
}

fn start_slave(shard: &Rc<Shard>) {
    let task = replicate(shard, shard.cfg.ha_master_address.clone());
    task.detach();
    if shard.id == 0 {
        crate::replication::ha_sync::start(shard);
    }
}

/// Controller mode: replicates this shard from the master whose HA address `master_ha_addr` holds
/// (waiting while it is unknown), replacing any replication running before.
pub async fn follow_master(shard: &Rc<Shard>) {
    stop_replication(shard).await;
    let handle = replicate(shard, None).detach();
    *crate::replication::ha_state::ha(shard)
        .replication
        .borrow_mut() = Some(handle);
}

/// Controller mode: stops this shard's replication and waits until it has stopped, so nothing
/// more is appended from the old master. Appends are not awaited, so none is cut in half.
pub async fn stop_replication(shard: &Shard) {
    let handle = crate::replication::ha_state::ha(shard)
        .replication
        .borrow_mut()
        .take();
    if let Some(handle) = handle {
        handle.cancel();
        handle.await;
    }
    crate::replication::ha_state::ha(shard)
        .slave
        .connected
        .set(false);
}

/// The replication task of one shard: from `configured` (haMasterAddress), else from the master the
/// name server or the controllers named.
fn replicate(shard: &Rc<Shard>, configured: Option<String>) -> glommio::Task<()> {
    let cfg = Rc::new(ha::SlaveConfig {
        broker_name: shard.cfg.broker_name.clone(),
        shard_count: u16::try_from(shard.shards).unwrap_or(u16::MAX),
        max_frame: shard
            .cfg
            .ha_transfer_batch_size
            .max(shard.cfg.max_message_size)
            .saturating_add(64 * 1024),
        // Controller mode: handshake version 2 (this replica's id and epochs, truncation by epoch).
        broker_id: crate::replication::ha_state::ha(shard)
            .controller_id
            .get()
            .filter(|_| shard.cfg.controller.enabled)
            .and_then(|id| i64::try_from(id).ok())
            .unwrap_or(ha::wire::NO_BROKER_ID),
        protocol: shard.cfg.ha_master_protocol,
    });
    let weak = Rc::downgrade(shard);
    let master: ha::MasterAddr = Rc::new(move || {
        let learned = weak.upgrade().and_then(|s| {
            crate::replication::ha_state::ha(&s)
                .master_ha_addr
                .borrow()
                .clone()
        });
        let addr = configured.clone().or(learned)?;
        remoting::resolve(&addr).ok()
    });
    let weak = Rc::downgrade(shard);
    let stopped: Rc<dyn Fn() -> bool> =
        Rc::new(move || weak.upgrade().is_none_or(|s| s.shutting_down.get()));
    glommio::spawn_local(ha::run_slave(
        shard.store.clone(),
        cfg,
        master,
        crate::replication::ha_state::ha(shard).slave.clone(),
        stopped,
    ))
}

/// Controller mode: the slaves of this shard that belong in the SyncStateSet, by controller brokerId.
/// A member stays while it held all of this shard's log within the last `limit_ms`
/// (`haMaxTimeSlaveNotCatchup`). A newcomer that held all of it within the last `join_ms` joins:
/// from then on puts wait for it as for a member (`HaShard::joining`), and it is named here once it
/// holds the log end of that moment (within `join_ms`), so it then has every record acknowledged
/// without it. Under a steady stream of puts a slave's ack is never the master's end of the moment,
/// which the old test for newcomers required: after a failover the new master acknowledged alone for
/// 15-20 s (chaos, 2026-12-07). The caller ends the round with `end_joining`.
pub async fn caught_up_slaves(
    shard: &Shard,
    limit_ms: u64,
    join_ms: u64,
    members: &std::collections::BTreeSet<u64>,
) -> std::collections::BTreeSet<u64> {
    let end = shard.store.max_physical_offset();
    let limit = Duration::from_millis(limit_ms);
    let join_within = Duration::from_millis(join_ms);
    let state = crate::replication::ha_state::ha(shard);
    let wm = &state.watermark;
    let mut in_sync = std::collections::BTreeSet::new();
    let mut newcomers = std::collections::BTreeSet::new();
    for s in wm.slaves() {
        let Ok(id) = u64::try_from(s.broker_id) else {
            continue;
        };
        if members.contains(&id) {
            if wm.in_sync(s.broker_id, end, limit) {
                in_sync.insert(id);
            }
        } else if s.caught_up_age.is_some_and(|age| age <= join_within) {
            newcomers.insert(id);
        }
    }
    if newcomers.is_empty() {
        return in_sync;
    }
    // In one step with reading the end: every record acknowledged without the newcomers is below it.
    state.joining.borrow_mut().extend(newcomers.iter().copied());
    // The joiners hold readers back too (a master alone puts its gate in here, at `mark`): a record
    // stored during the join is not shown before they hold it.
    crate::replication::confirm::update(shard);
    let mark = shard.store.max_physical_offset();
    let reached = crate::shard::mesh::join_all(newcomers.iter().map(|id| {
        let wm = wm.clone();
        let id = *id;
        async move {
            let wire_id = i64::try_from(id).unwrap_or(i64::MAX);
            (id, wm.wait_all(mark, &[wire_id], join_within).await.is_ok())
        }
    }))
    .await;
    let mut dropped = false;
    for (id, ok) in reached {
        if ok {
            in_sync.insert(id);
        } else {
            // Not caught up after all: sends and readers stop waiting for it now.
            state.joining.borrow_mut().remove(&id);
            dropped = true;
        }
    }
    if dropped {
        crate::replication::confirm::update(shard);
    }
    in_sync
}

/// Controller mode: this shard's role-change count, noted by a put before its role check.
pub fn term(shard: &Shard) -> u64 {
    crate::replication::ha_state::ha(shard).term.get()
}

/// After a put on the owning shard: wakes the senders and, on a SYNC_MASTER, waits until a slave
/// acknowledged the records; the outcome's status says when none did. After a late flush the slave
/// still gets the records, but the answer does not wait for it.
/// `term` is the shard's role-change count before the put's role check (`term`).
pub async fn replicated(shard: &Shard, mut outcome: PutOutcome, term: u64) -> PutOutcome {
    if outcome.status != SendStatus::SendOk {
        crate::replication::ha_state::ha(shard).signal.raise();
        return outcome;
    }
    outcome.status = match after_put(shard, &outcome.stored, term).await {
        Ok(()) => SendStatus::SendOk,
        Err(ha::WaitError::SlaveNotAvailable) => SendStatus::SlaveNotAvailable,
        Err(ha::WaitError::Timeout) => SendStatus::FlushSlaveTimeout,
    };
    crate::replication::confirm::update(shard);
    outcome
}

/// Wakes the senders and, on a SYNC_MASTER, waits until a slave acknowledged the records (the error
/// says why none did). In controller mode with `allAckInSyncStateSet`, every other member of the
/// SyncStateSet must have acknowledged them, and a broker that stepped down to slave while storing
/// them, or whose role changed at all since `term` (before the wait or during it), does not
/// acknowledge them (`ack_rule`).
async fn after_put(shard: &Shard, stored: &[PutOk], term: u64) -> Result<(), ha::WaitError> {
    use crate::replication::ack_rule::{ack_rule, AckRule};
    let state = crate::replication::ha_state::ha(shard);
    state.signal.raise();
    let controller = &shard.cfg.controller;
    let rule = {
        let members = state.sync_state_set.borrow();
        let joining = state.joining.borrow();
        let with_joining: std::collections::BTreeSet<u64>;
        let waited = if joining.is_empty() {
            &*members
        } else {
            with_joining = members.union(&joining).copied().collect();
            &with_joining
        };
        ack_rule(
            shard.role(),
            controller.enabled,
            controller.all_ack_in_sync_state_set,
            state.controller_id.get(),
            waited,
            state.term.get() != term,
        )
    };
    let end = stored
        .iter()
        .map(|ok| ok.physical_offset.saturating_add(i64::from(ok.size)))
        .max();
    let timeout = Duration::from_millis(shard.cfg.sync_flush_timeout_ms.max(1));
    match (rule, end) {
        (AckRule::Nobody, _) | (_, None) => Ok(()),
        (AckRule::SteppedDown, Some(_)) => Err(ha::WaitError::Timeout),
        (AckRule::AllOf(others), Some(end)) => {
            crate::replication::set_wait::wait_for_set(&state, end, others, timeout).await?;
            // Deposed (and perhaps elected again) while waiting: the acks may come from replicas
            // that cut these records and got others at the same offsets from the interim master.
            if state.term.get() != term {
                return Err(ha::WaitError::Timeout);
            }
            Ok(())
        }
        (AckRule::AnySlave, Some(end)) => {
            state
                .watermark
                .wait(
                    end,
                    shard.store.max_physical_offset(),
                    shard.cfg.ha_max_gap_not_in_sync,
                    timeout,
                )
                .await
        }
    }
}

/// HA entries of GET_BROKER_RUNTIME_INFO. Master: `slaveFallBehindMuch` (bytes the slaves miss, summed
/// over shards), `haSlaveAckOffset.shardN`, `haBehindMillis` (longest time a shard's best slave has not
/// held everything), `haSlaveConnections` (fewest connected slaves of any shard). Slave: `masterAddr`,
/// `haMasterAddr`, `haReplicating` (shards connected), `haLastAppendTimestamp`, `haRejectedFrames`.
pub fn runtime_info(
    shard: &Shard,
    stats: &[crate::shard::stats::ShardStats],
    put: &mut impl FnMut(&str, String),
) {
    if is_master(shard) {
        let behind: u64 = stats
            .iter()
            .map(|s| s.ha.behind_bytes)
            .fold(0, u64::saturating_add);
        put("slaveFallBehindMuch", behind.to_string());
        put(
            "haBehindMillis",
            stats
                .iter()
                .map(|s| s.ha.behind_ms)
                .max()
                .unwrap_or(0)
                .to_string(),
        );
        put(
            "haSlaveConnections",
            stats
                .iter()
                .map(|s| s.ha.slaves)
                .min()
                .unwrap_or(0)
                .to_string(),
        );
        for s in stats {
            put(
                &format!("haSlaveAckOffset.shard{}", s.shard),
                s.ha.slave_ack_offset.to_string(),
            );
        }
    } else {
        let configured = shard.cfg.ha_master_address.clone();
        let learned = crate::replication::ha_state::ha(shard)
            .master_ha_addr
            .borrow()
            .clone();
        put("haMasterAddr", configured.or(learned).unwrap_or_default());
        let from_ns = crate::replication::ha_state::ha(shard)
            .master_addr
            .borrow()
            .clone();
        let from_ha = crate::replication::ha_state::ha(shard)
            .slave
            .master_addr
            .borrow()
            .clone();
        put("masterAddr", from_ns.or(from_ha).unwrap_or_default());
        put(
            "haReplicating",
            stats
                .iter()
                .filter(|s| s.ha.slave_connected)
                .count()
                .to_string(),
        );
        put(
            "haLastAppendTimestamp",
            stats
                .iter()
                .map(|s| s.ha.slave_last_append_ms)
                .max()
                .unwrap_or(0)
                .to_string(),
        );
        put(
            "haRejectedFrames",
            stats
                .iter()
                .map(|s| s.ha.slave_rejected_frames)
                .sum::<u64>()
                .to_string(),
        );
    }
}

/// Whether a pull's consumer reads slowly (RocketMQ's `suggestPullingFromSlave`), which decides the
/// broker id its answer suggests: a master with `slaveReadEnable` and a slave connected says so when
/// the consumer's last record is further behind the log end than the read cache holds (reads from disk
/// would compete with writes). `None` when slave reads are off or this is not a master: the answer
/// then names the master.
pub fn consumes_slowly(shard: &Shard, result: &storage::GetResult) -> Option<bool> {
    if !crate::config::live::slave_read_enable(&shard.cfg) || !is_master(shard) {
        return None;
    }
    let Some(last) = result.records.last() else {
        return Some(false);
    };
    // PHYSICALOFFSET sits at bytes 28..36 of a stored record.
    let Some(phys) = last
        .get(28..36)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(i64::from_be_bytes)
    else {
        return Some(false);
    };
    let behind = shard.store.max_physical_offset().saturating_sub(phys);
    let cache = i64::try_from(shard.cfg.read_cache_bytes).unwrap_or(i64::MAX);
    Some(
        behind > cache
            && crate::replication::ha_state::ha(shard)
                .watermark
                .lag()
                .slaves
                > 0,
    )
}

//! The broker's use of the `ha` crate: the HA listener (shard 0 accepts, each stream is served by the
//! shard owning it), the slave replication tasks, the SYNC_MASTER wait after a put, and HA figures.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd};
use std::rc::Rc;
use std::time::Duration;

use glommio::net::{TcpListener, TcpStream};
use storage::{PutError, PutOk};

use crate::config::BrokerRole;
use crate::shard::mesh::ShardCall;
use crate::shard::Shard;

/// One shard's replication state (both roles; only the parts of its role are used).
#[derive(Default)]
pub struct HaShard {
    /// Master: the slaves' acks for this shard's stream.
    pub watermark: ha::Watermark,
    /// Master: raised on every append so senders stream at once.
    pub signal: ha::DataSignal,
    /// Slave: what this shard's replication does.
    pub slave: Rc<ha::SlaveStatus>,
    /// Slave: the master's HA address learned from the name server.
    pub master_ha_addr: RefCell<Option<String>>,
    /// Slave: the master's remoting address learned from the name server.
    pub master_addr: RefCell<Option<String>>,
    /// Slave: topics seen in replicated data before their config arrived (asked for once each).
    unknown_topics: RefCell<std::collections::HashSet<(String, i32)>>,
    /// Slave, shard 0: copy the master's metadata at the next tick instead of waiting 60 s.
    pub sync_soon: std::cell::Cell<bool>,
}

/// After records reached a queue: wakes the master's senders. On a slave, replicated records of a
/// topic (or queue) its config does not know yet, because the master created it since the last copy,
/// get a stand-in config at once, so the slave can serve them even if the master dies before the next
/// copy, and shard 0 copies the master's metadata now (which replaces the stand-in).
pub fn on_arrival(shard: &Rc<Shard>, topic: &str, queue_id: i32) {
    shard.ha.signal.raise();
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
    if !shard
        .ha
        .unknown_topics
        .borrow_mut()
        .insert((topic.to_owned(), queues))
    {
        return;
    }
    let s = shard.clone();
    let topic = topic.to_owned();
    glommio::spawn_local(async move {
        s.mesh
            .tell(0, ShardCall::HaTopicSeen { topic, queues })
            .await
    })
    .detach();
}

/// Shard 0 of a slave: installs a stand-in config for a replicated topic and asks for a metadata copy.
pub async fn topic_seen(shard: &Rc<Shard>, topic: String, queues: i32) {
    shard.ha.sync_soon.set(true);
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

/// HA figures of one shard for GET_BROKER_RUNTIME_INFO.
#[derive(Debug, Clone, Default)]
pub struct HaStats {
    pub slaves: usize,
    pub slave_ack_offset: i64,
    pub behind_bytes: u64,
    pub behind_ms: u64,
    pub slave_connected: bool,
    pub slave_last_append_ms: i64,
    pub slave_rejected_frames: u64,
}

pub fn stats(shard: &Shard) -> HaStats {
    let lag = shard.ha.watermark.lag();
    let max = shard.store.max_physical_offset();
    let st = &shard.ha.slave;
    HaStats {
        slaves: lag.slaves,
        slave_ack_offset: lag.slave_ack_offset,
        behind_bytes: if lag.slaves == 0 {
            0
        } else {
            u64::try_from(max.saturating_sub(lag.slave_ack_offset)).unwrap_or(0)
        },
        behind_ms: lag.behind_ms,
        slave_connected: st.connected.get(),
        slave_last_append_ms: st.last_append_ms.get(),
        slave_rejected_frames: st.rejected.get(),
    }
}

fn is_master(shard: &Shard) -> bool {
    shard.cfg.broker_role != BrokerRole::Slave
}

/// Starts this shard's HA work for its role (called once the mesh serves).
pub fn start(shard: &Rc<Shard>) -> Result<(), crate::BrokerError> {
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
            let s = stats(&shard);
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

fn start_listener(shard: &Rc<Shard>) -> Result<(), crate::BrokerError> {
    let ip: std::net::IpAddr = shard
        .cfg
        .bind_address
        .parse()
        .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    let addr = SocketAddr::new(ip, shard.cfg.ha_listen_port);
    let listener = TcpListener::bind(addr).map_err(|e| {
        crate::BrokerError::io(
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
    let hello = match ha::read_handshake(&mut stream).await {
        Ok(h) => h,
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
        serve(shard, stream, peer).await;
        return;
    }
    // The socket moves to its shard's executor as a duplicate descriptor; this one is closed here.
    let borrowed = unsafe { BorrowedFd::borrow_raw(stream.as_raw_fd()) };
    match borrowed.try_clone_to_owned() {
        Ok(fd) => {
            let raw = fd.into_raw_fd();
            drop(stream);
            shard
                .mesh
                .tell(target, ShardCall::HaSlave { fd: raw, peer })
                .await;
        }
        Err(e) => {
            tracing::error!("HA: cannot pass the connection of {peer} to shard {target}: {e}")
        }
    }
}

/// On the owning shard: takes over a slave connection passed by shard 0.
pub fn adopt(shard: &Rc<Shard>, fd: i32, peer: String) {
    // The descriptor was duplicated for this shard alone and is owned from here on.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    glommio::spawn_local(serve(shard.clone(), stream, peer)).detach();
}

async fn serve(shard: Rc<Shard>, stream: TcpStream, peer: String) {
    if !is_master(&shard) {
        ha::refuse(stream, "this broker is a SLAVE").await;
        return;
    }
    let ms = ha::MasterShard {
        store: shard.store.clone(),
        watermark: shard.ha.watermark.clone(),
        signal: shard.ha.signal.clone(),
        transfer_batch_size: shard.cfg.ha_transfer_batch_size,
        broker_addr: shard.cfg.broker_addr(),
    };
    tracing::info!("HA shard {}: slave {peer} connected", shard.id);
    match ha::serve_slave(stream, ms).await {
        Ok(()) => tracing::info!("HA shard {}: slave {peer} disconnected", shard.id),
        Err(e) => tracing::warn!("HA shard {}: slave {peer} dropped: {e}", shard.id),
    }
}

fn start_slave(shard: &Rc<Shard>) {
    let cfg = Rc::new(ha::SlaveConfig {
        broker_name: shard.cfg.broker_name.clone(),
        shard_count: u16::try_from(shard.shards).unwrap_or(u16::MAX),
        max_frame: shard
            .cfg
            .ha_transfer_batch_size
            .max(shard.cfg.max_message_size)
            .saturating_add(64 * 1024),
    });
    let weak = Rc::downgrade(shard);
    let configured = shard.cfg.ha_master_address.clone();
    let master: ha::MasterAddr = Rc::new(move || {
        let learned = weak
            .upgrade()
            .and_then(|s| s.ha.master_ha_addr.borrow().clone());
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
        shard.ha.slave.clone(),
        stopped,
    ))
    .detach();
    if shard.id == 0 {
        crate::role::ha_sync::start(shard);
    }
}

/// The name server told shard 0 where the master is: tell every shard.
pub async fn master_learned(
    shard: &Rc<Shard>,
    ha_addr: Option<String>,
    master_addr: Option<String>,
) {
    let changed = *shard.ha.master_ha_addr.borrow() != ha_addr
        || *shard.ha.master_addr.borrow() != master_addr;
    if !changed {
        return;
    }
    tracing::info!("HA: master is {master_addr:?}, its HA address {ha_addr:?}");
    for s in 0..shard.shards {
        shard
            .mesh
            .tell(
                s,
                ShardCall::HaMaster {
                    ha_addr: ha_addr.clone(),
                    master_addr: master_addr.clone(),
                },
            )
            .await;
    }
}

pub fn set_master(shard: &Shard, ha_addr: Option<String>, master_addr: Option<String>) {
    *shard.ha.master_ha_addr.borrow_mut() = ha_addr;
    *shard.ha.master_addr.borrow_mut() = master_addr;
}

/// After a put on the owning shard: wakes the senders and, on a SYNC_MASTER, waits until a slave
/// acknowledged the records (FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE otherwise).
pub async fn after_put(
    shard: &Shard,
    result: Result<Vec<PutOk>, PutError>,
) -> Result<Vec<PutOk>, PutError> {
    let oks = result?;
    shard.ha.signal.raise();
    if shard.cfg.broker_role != BrokerRole::SyncMaster {
        return Ok(oks);
    }
    let Some(end) = oks
        .iter()
        .map(|ok| ok.physical_offset.saturating_add(i64::from(ok.size)))
        .max()
    else {
        return Ok(oks);
    };
    let timeout = Duration::from_millis(shard.cfg.sync_flush_timeout_ms.max(1));
    let waited = shard
        .ha
        .watermark
        .wait(
            end,
            shard.store.max_physical_offset(),
            shard.cfg.ha_max_gap_not_in_sync,
            timeout,
        )
        .await;
    match waited {
        Ok(()) => Ok(oks),
        Err(ha::WaitError::SlaveNotAvailable) => Err(PutError::SlaveNotAvailable(oks)),
        Err(ha::WaitError::Timeout) => Err(PutError::FlushSlaveTimeout(oks)),
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
        let learned = shard.ha.master_ha_addr.borrow().clone();
        put("haMasterAddr", configured.or(learned).unwrap_or_default());
        let from_ns = shard.ha.master_addr.borrow().clone();
        let from_ha = shard.ha.slave.master_addr.borrow().clone();
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

/// The broker id a pull response suggests (RocketMQ's suggestWhichBrokerId): with `slaveReadEnable`,
/// a master points a consumer whose next record is further behind the log end than the read cache
/// holds at slave 1 (reads from disk would compete with writes); otherwise the master (0).
pub fn suggest_broker(shard: &Shard, result: &storage::GetResult) -> i64 {
    if !shard.cfg.slave_read_enable || !is_master(shard) {
        return 0;
    }
    let Some(last) = result.records.last() else {
        return 0;
    };
    // PHYSICALOFFSET sits at bytes 28..36 of a stored record.
    let Some(phys) = last
        .get(28..36)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(i64::from_be_bytes)
    else {
        return 0;
    };
    let behind = shard.store.max_physical_offset().saturating_sub(phys);
    let cache = i64::try_from(shard.cfg.read_cache_bytes).unwrap_or(i64::MAX);
    if behind > cache && shard.ha.watermark.lag().slaves > 0 {
        1
    } else {
        0
    }
}

/// A SYNC_MASTER send that was stored but not acknowledged by a slave: where it was stored and the
/// response code (SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT) to answer with the send result.
pub fn stored_without_slave_ack(e: &PutError) -> Option<(&[PutOk], i32)> {
    use protocol::response_code as rc;
    match e {
        PutError::SlaveNotAvailable(oks) if !oks.is_empty() => Some((oks, rc::SLAVE_NOT_AVAILABLE)),
        PutError::FlushSlaveTimeout(oks) if !oks.is_empty() => Some((oks, rc::FLUSH_SLAVE_TIMEOUT)),
        _ => None,
    }
}

//! Controller mode on the control shard (RocketMQ's ReplicasManager): gets this broker an id from
//! the controllers, registers, asks for an election when its group has no master, heartbeats every
//! controller, follows role changes (NOTIFY_BROKER_ROLE_CHANGED, and GET_REPLICA_INFO every
//! `syncBrokerMetadataPeriod` in case a notice was missed) and, as master, reports its SyncStateSet.
//!
//! The whole process is one replica of its group (its `brokerName`): every shard changes role at
//! once, and shard-broker `i` of a slave follows shard-broker `i` of the master.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};

use crate::replication::replica_state::{replicas, ReplicaState};
use crate::role::namesrv::registrar;
use crate::shard::mesh::join_all;
use crate::shard::Shard;

/// Pause between tries of a step that failed (no controller leader, no answer).
const RETRY: Duration = Duration::from_millis(500);

/// A replica caught up within this many milliseconds joins the SyncStateSet once it holds the log
/// end of the moment it was chosen, waited for as long (sends wait for it meanwhile; a fixed bound,
/// whatever `checkSyncStateSetPeriod` is).
const JOIN_MS: u64 = 1000;

/// What a controller answered about a group's master (REGISTER_BROKER, ELECT_MASTER,
/// GET_REPLICA_INFO, NOTIFY_BROKER_ROLE_CHANGED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterInfo {
    pub master_broker_id: Option<u64>,
    pub master_addr: Option<String>,
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<u64>,
    pub sync_state_set_epoch: i32,
}

impl MasterInfo {
    /// Reads the header fields and the SyncStateSet body; missing or bad fields read as absent.
    pub fn from_command(cmd: &RemotingCommand) -> MasterInfo {
        let number = |key: &str| cmd.ext(key).and_then(|v| v.trim().parse::<i64>().ok());
        let body: serde_json::Value = serde_json::from_slice(&cmd.body).unwrap_or_default();
        let sync_state_set = body
            .get("syncStateSet")
            .and_then(|v| v.as_array())
            .map(|ids| ids.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default();
        let body_epoch = body
            .get("syncStateSetEpoch")
            .and_then(serde_json::Value::as_i64);
        MasterInfo {
            master_broker_id: number("masterBrokerId").and_then(|id| u64::try_from(id).ok()),
            master_addr: cmd
                .ext("masterAddress")
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned),
            master_epoch: number("masterEpoch")
                .and_then(|e| i32::try_from(e).ok())
                .unwrap_or(0),
            sync_state_set,
            sync_state_set_epoch: number("syncStateSetEpoch")
                .or(body_epoch)
                .and_then(|e| i32::try_from(e).ok())
                .unwrap_or(0),
        }
    }

    fn has_master(&self) -> bool {
        self.master_broker_id.is_some() && self.master_addr.is_some()
    }
}

fn failed(what: &str, resp: &RemotingCommand) -> String {
    format!(
        "{what}: code {} {}",
        resp.code,
        resp.remark.clone().unwrap_or_default()
    )
}

/// Starts controller mode on the control shard (after every shard serves).
pub fn start(shard: &Rc<Shard>) {
    let Some(r) = replicas(shard) else { return };
    r.client
        .set_addrs(shard.cfg.controller.controller_addr.clone());
    let shard = shard.clone();
    glommio::spawn_local(async move { run(shard).await }).detach();
}

async fn run(shard: Rc<Shard>) {
    let broker_id = loop {
        match crate::replication::broker_identity::obtain(&shard).await {
            Ok(id) => break id,
            Err(e) => tracing::warn!("controller mode: no brokerId yet: {e}"),
        }
        if !sleep_unless_stopping(&shard, RETRY).await {
            return;
        }
    };
    if let Some(r) = replicas(&shard) {
        r.state.borrow_mut().broker_id = Some(broker_id);
    }
    for s in shard.every_shard() {
        s.set_controller_id(broker_id).await;
    }
    tracing::info!(
        "controller mode: brokerId {broker_id} in group {}",
        shard.cfg.broker_name
    );
    let s = shard.clone();
    glommio::spawn_local(async move { heartbeat_loop(s).await }).detach();
    loop {
        match register_and_elect(&shard).await {
            Ok(()) => break,
            Err(e) => tracing::warn!("controller mode: not registered yet: {e}"),
        }
        if !sleep_unless_stopping(&shard, RETRY).await {
            return;
        }
    }
    let s = shard.clone();
    glommio::spawn_local(async move { sync_state_set_loop(s).await }).detach();
    metadata_loop(shard).await;
}

/// Sleeps; false when the broker is shutting down.
async fn sleep_unless_stopping(shard: &Shard, pause: Duration) -> bool {
    glommio::timer::sleep(pause).await;
    !shard.shutting_down.get()
}

/// CONTROLLER_REGISTER_BROKER; then, when the group has no live master, CONTROLLER_ELECT_MASTER
/// (the controllers pick from the SyncStateSet, or this broker for a new group).
async fn register_and_elect(shard: &Rc<Shard>) -> Result<(), String> {
    let Some(r) = replicas(shard) else {
        return Ok(());
    };
    let Some(broker_id) = r.state.borrow().broker_id else {
        return Err("no brokerId".into());
    };
    let cfg = &shard.cfg;
    let resp = r
        .client
        .invoke_leader(|| {
            RemotingCommand::request(request_code::CONTROLLER_REGISTER_BROKER)
                .with_ext("clusterName", &cfg.broker_cluster_name)
                .with_ext("brokerName", &cfg.broker_name)
                .with_ext("brokerId", &broker_id.to_string())
                .with_ext("brokerAddress", &cfg.broker_addr())
        })
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(failed("CONTROLLER_REGISTER_BROKER", &resp));
    }
    let info = MasterInfo::from_command(&resp);
    if info.has_master() {
        apply(shard, info).await;
        return Ok(());
    }
    elect(shard).await
}

/// Asks for an election (the group has no master): the controllers' answer is applied.
async fn elect(shard: &Rc<Shard>) -> Result<(), String> {
    let Some(r) = replicas(shard) else {
        return Ok(());
    };
    let Some(broker_id) = r.state.borrow().broker_id else {
        return Err("no brokerId".into());
    };
    let cfg = &shard.cfg;
    let resp = r
        .client
        .invoke_leader(|| {
            RemotingCommand::request(request_code::CONTROLLER_ELECT_MASTER)
                .with_ext("clusterName", &cfg.broker_cluster_name)
                .with_ext("brokerName", &cfg.broker_name)
                .with_ext("brokerId", &broker_id.to_string())
                .with_ext("designateElect", "false")
        })
        .await?;
    match resp.code {
        response_code::SUCCESS | response_code::CONTROLLER_MASTER_STILL_EXIST => {
            apply(shard, MasterInfo::from_command(&resp)).await;
            Ok(())
        }
        _ => Err(failed("CONTROLLER_ELECT_MASTER", &resp)),
    }
}

/// A notice or an answer about the group's master: a newer epoch changes this broker's role; the
/// same epoch may bring a newer SyncStateSet.
pub async fn apply(shard: &Rc<Shard>, info: MasterInfo) {
    let Some(r) = replicas(shard) else { return };
    let Ok(_permit) = r.changing.acquire_permit(1).await else {
        return;
    };
    let current = r.state.borrow().clone();
    let Some(me) = current.broker_id else { return };
    let first = shard.chosen_role.get().is_none();
    if !info.has_master() || (info.master_epoch <= current.master_epoch && !first) {
        if info.master_epoch == current.master_epoch
            && current.is_master()
            && info.sync_state_set_epoch > current.sync_state_set_epoch
        {
            set_sync_state_set(shard, info.sync_state_set, info.sync_state_set_epoch).await;
        }
        return;
    }
    let (Some(master_id), Some(master_addr)) = (info.master_broker_id, info.master_addr.clone())
    else {
        return;
    };
    *r.state.borrow_mut() = ReplicaState {
        broker_id: Some(me),
        master_epoch: info.master_epoch,
        master_broker_id: Some(master_id),
        master_addr: Some(master_addr.clone()),
        sync_state_set: info.sync_state_set.clone(),
        sync_state_set_epoch: info.sync_state_set_epoch,
    };
    r.role_changes.set(r.role_changes.get() + 1);
    let started = Instant::now();
    if master_id == me {
        let (epoch, set) = (info.master_epoch, info.sync_state_set);
        join_all(shard.every_shard().map(|s| {
            let set = set.clone();
            s.become_master(epoch, set)
        }))
        .await;
        if let Some(registrar) = registrar(shard) {
            registrar.masters.borrow_mut().clear();
        }
        tracing::info!(
            "controller mode: master of {} at epoch {epoch} (SyncStateSet {:?}), switched in {:?}",
            shard.cfg.broker_name,
            r.state.borrow().sync_state_set,
            started.elapsed()
        );
    } else {
        let shards = shard.shards;
        let addrs: Vec<String> = (0..shards)
            .map(|i| shard_broker_addr(&shard.cfg, &master_addr, i, shards))
            .collect();
        join_all(shard.every_shard().map(|s| {
            let addr = addrs
                .get(s.id())
                .cloned()
                .unwrap_or_else(|| master_addr.clone());
            s.become_slave(me, addr)
        }))
        .await;
        if let Some(registrar) = registrar(shard) {
            *registrar.masters.borrow_mut() = addrs
                .iter()
                .enumerate()
                .map(|(i, a)| (i, (None, Some(a.clone()))))
                .collect();
        }
        tracing::info!(
            "controller mode: slave (brokerId {me}) of {master_addr} (brokerId {master_id}) at epoch {}",
            info.master_epoch
        );
        let s = shard.clone();
        let epoch = info.master_epoch;
        glommio::spawn_local(async move { learn_master_ha_addr(s, master_addr, epoch).await })
            .detach();
    }
    crate::role::control::register_soon(shard);
}

/// Shard-broker `i` of the master at `master_addr` (its shard 0's address): the same port layout
/// as this broker's (replicas of a group run the same shard count).
fn shard_broker_addr(
    cfg: &crate::config::BrokerConfig,
    master_addr: &str,
    i: usize,
    shards: usize,
) -> String {
    if !cfg.shards_are_brokers(shards) {
        return master_addr.to_owned();
    }
    let Some((host, port)) = master_addr.rsplit_once(':') else {
        return master_addr.to_owned();
    };
    let step = usize::from(crate::config::SHARD_PORT_STEP).saturating_mul(i);
    match port.parse::<usize>() {
        Ok(p) => format!("{host}:{}", p.saturating_add(step)),
        Err(_) => master_addr.to_owned(),
    }
}

/// Asks the new master for its HA address (EXCHANGE_BROKER_HA_INFO) until it answers as master or
/// another role change supersedes this one, then every shard replicates from it.
async fn learn_master_ha_addr(shard: Rc<Shard>, master_addr: String, epoch: i32) {
    let mut logged = false;
    loop {
        let current = replicas(&shard).map(|r| r.state.borrow().master_epoch);
        if current != Some(epoch) || shard.shutting_down.get() {
            return;
        }
        match exchange_ha_info(&shard.cfg.auth, &master_addr).await {
            Ok(ha_addr) => {
                // A newer epoch may have been applied during the exchange (or while the shards
                // below are told): its own task names the new master, and this answer, from a
                // deposed one, must not replace it (chaos seed 5, split_master, 2026-12-07: a
                // replica followed the old master and never rejoined the SyncStateSet).
                let still = || {
                    replicas(&shard).map(|r| r.state.borrow().master_epoch) == Some(epoch)
                        && !shard.shutting_down.get()
                };
                if !still() {
                    return;
                }
                tracing::info!("controller mode: replicating from {master_addr} through {ha_addr}");
                if let Some(registrar) = registrar(&shard) {
                    for (_, (ha, _)) in registrar.masters.borrow_mut().iter_mut() {
                        *ha = Some(ha_addr.clone());
                    }
                }
                for s in shard.every_shard() {
                    if !still() {
                        return;
                    }
                    let ha_addr = ha_addr.clone();
                    s.master_ha_known(ha_addr).await;
                }
                return;
            }
            Err(e) if !logged => {
                tracing::info!(
                    "controller mode: master {master_addr} not ready for replication yet: {e}"
                );
                logged = true;
            }
            Err(_) => {}
        }
        glommio::timer::sleep(Duration::from_millis(200)).await;
    }
}

async fn exchange_ha_info(
    auth: &crate::config::auth::AuthConfig,
    master_addr: &str,
) -> Result<String, String> {
    let client = remoting::Client::connect_str(master_addr, Duration::from_secs(2))
        .await
        .map_err(|e| e.to_string())?;
    let mut request = RemotingCommand::request(request_code::EXCHANGE_BROKER_HA_INFO);
    auth.sign_inner(&mut request);
    let resp = client
        .invoke(request, Duration::from_secs(2))
        .await
        .map_err(|e| e.to_string())?;
    client.close();
    if resp.code != response_code::SUCCESS {
        return Err(failed("EXCHANGE_BROKER_HA_INFO", &resp));
    }
    resp.ext("masterHaAddress")
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| "no masterHaAddress in the answer".to_owned())
}

/// Heartbeats to every controller, each on its own loop: a controller that does not answer (paused,
/// partitioned) holds back only its own heartbeats. One round waiting for every answer reached the
/// live leader only every call timeout (3 s) plus the period, past the heartbeat timeout, and the
/// leader deposed a healthy master while one follower was paused (chaos seed 2022551485).
async fn heartbeat_loop(shard: Rc<Shard>) {
    let Some(addrs) = replicas(&shard).map(|r| r.client.addrs()) else {
        return;
    };
    let answered = Rc::new(Cell::new(Instant::now()));
    let warned = Rc::new(Cell::new(Instant::now()));
    join_all(
        addrs
            .into_iter()
            .map(|addr| heartbeat_to(shard.clone(), addr, answered.clone(), warned.clone())),
    )
    .await;
}

/// One controller's loop: every `brokerHeartbeatInterval`, BROKER_HEARTBEAT with this broker's epoch
/// and log end (the sum over shards of each CommitLog's local end, durable end after a failed sync),
/// which elections compare.
/// `answered` is when any controller last took a heartbeat, `warned` when the broker last said that
/// none had for 10 s.
async fn heartbeat_to(
    shard: Rc<Shard>,
    addr: String,
    answered: Rc<Cell<Instant>>,
    warned: Rc<Cell<Instant>>,
) {
    let cfg = shard.cfg.clone();
    let period = Duration::from_millis(cfg.controller.broker_heartbeat_interval_ms);
    loop {
        // A shard whose sync failed counts only its durable end: elected with more, it would lose
        // the rest at its restart and make the replicas that hold it cut it (chaos seed 1531577810).
        let ends = join_all(shard.every_shard().map(|s| s.local_electable_offset())).await;
        let max_offset = ends
            .into_iter()
            .filter_map(Result::ok)
            .fold(0u64, u64::saturating_add);
        let Some(r) = replicas(&shard) else { return };
        let (broker_id, epoch) = {
            let st = r.state.borrow();
            (st.broker_id, st.master_epoch)
        };
        let Some(broker_id) = broker_id else { return };
        let heartbeat = RemotingCommand::request(request_code::BROKER_HEARTBEAT)
            .with_ext("clusterName", &cfg.broker_cluster_name)
            .with_ext("brokerName", &cfg.broker_name)
            .with_ext("brokerAddr", &cfg.broker_addr())
            .with_ext("brokerId", &broker_id.to_string())
            .with_ext("epoch", &epoch.to_string())
            .with_ext("maxOffset", &max_offset.to_string())
            .with_ext("confirmOffset", &max_offset.to_string())
            .with_ext(
                "heartbeatTimeoutMills",
                &cfg.controller.controller_heartbeat_timeout_ms.to_string(),
            )
            .with_ext(
                "electionPriority",
                &cfg.controller.broker_election_priority.to_string(),
            );
        let answer = r.client.invoke_on(&addr, heartbeat).await;
        if answer.is_err() {
            r.client.reconnect(&addr);
        }
        let taken = answer.is_ok_and(|resp| resp.code == response_code::SUCCESS);
        let quiet = Duration::from_secs(10);
        if taken {
            answered.set(Instant::now());
        } else if answered.get().elapsed() > quiet && warned.get().elapsed() > quiet {
            tracing::warn!(
                "controller mode: no controller of {:?} took a heartbeat for {:?}",
                cfg.controller.controller_addr,
                answered.get().elapsed()
            );
            warned.set(Instant::now());
        }
        if !sleep_unless_stopping(&shard, period).await {
            return;
        }
    }
}

/// Every `syncBrokerMetadataPeriod`: who the master is, by GET_REPLICA_INFO; an election request
/// when the group has none (its master died and nobody in the SyncStateSet was alive then).
async fn metadata_loop(shard: Rc<Shard>) {
    let period = Duration::from_millis(shard.cfg.controller.sync_broker_metadata_period_ms);
    loop {
        if !sleep_unless_stopping(&shard, period).await {
            return;
        }
        let Some(r) = replicas(&shard) else { return };
        let name = shard.cfg.broker_name.clone();
        let resp = r
            .client
            .invoke_leader(|| {
                RemotingCommand::request(request_code::CONTROLLER_GET_REPLICA_INFO)
                    .with_ext("brokerName", &name)
            })
            .await;
        match resp {
            Ok(resp) if resp.code == response_code::SUCCESS => {
                let info = MasterInfo::from_command(&resp);
                if info.has_master() {
                    apply(&shard, info).await;
                } else if let Err(e) = elect(&shard).await {
                    tracing::info!("controller mode: group {name} has no master; election: {e}");
                }
            }
            Ok(resp) => tracing::debug!("{}", failed("CONTROLLER_GET_REPLICA_INFO", &resp)),
            Err(e) => tracing::debug!("controller mode: GET_REPLICA_INFO: {e}"),
        }
    }
}

/// Master, every `checkSyncStateSetPeriod`: the replicas caught up (members within
/// `haMaxTimeSlaveNotCatchup`, newcomers as `ha::caught_up_slaves` says) make the new SyncStateSet;
/// a change is proposed to the controllers (CONTROLLER_ALTER_SYNC_STATE_SET, fenced by the epochs)
/// and applied once they accept it.
async fn sync_state_set_loop(shard: Rc<Shard>) {
    let period = Duration::from_millis(shard.cfg.controller.check_sync_state_set_period_ms);
    loop {
        if !sleep_unless_stopping(&shard, period).await {
            return;
        }
        let Some(r) = replicas(&shard) else { return };
        let current = r.state.borrow().clone();
        let Some(me) = current.broker_id.filter(|_| current.is_master()) else {
            continue;
        };
        let limit = shard.cfg.controller.ha_max_time_slave_not_catchup_ms;
        let per_shard = join_all(shard.every_shard().map(|s| {
            let members = current.sync_state_set.clone();
            s.caught_up_slaves(limit, JOIN_MS, members)
        }))
        .await;
        // A replica is in sync when it is caught up on every shard.
        let mut wanted: Option<BTreeSet<u64>> = None;
        for ids in per_shard {
            let ids = ids.unwrap_or_default();
            wanted = Some(match wanted {
                None => ids,
                Some(w) => w.intersection(&ids).copied().collect(),
            });
        }
        let mut wanted = wanted.unwrap_or_default();
        wanted.insert(me);
        if wanted != current.sync_state_set {
            if let Err(e) = alter_sync_state_set(&shard, &current, wanted.clone()).await {
                tracing::warn!(
                    "controller mode: SyncStateSet {:?} -> {wanted:?} not accepted: {e}",
                    current.sync_state_set
                );
            }
        }
        // Newcomers now in the SyncStateSet are waited for as members; the others no longer.
        join_all(shard.every_shard().map(|s| s.end_joining())).await;
    }
}

async fn alter_sync_state_set(
    shard: &Rc<Shard>,
    current: &ReplicaState,
    wanted: BTreeSet<u64>,
) -> Result<(), String> {
    let Some(r) = replicas(shard) else {
        return Ok(());
    };
    let me = current.broker_id.unwrap_or_default();
    let body = serde_json::json!({
        "syncStateSet": wanted,
        "syncStateSetEpoch": current.sync_state_set_epoch,
    })
    .to_string();
    let name = shard.cfg.broker_name.clone();
    let resp = r
        .client
        .invoke_leader(|| {
            RemotingCommand::request(request_code::CONTROLLER_ALTER_SYNC_STATE_SET)
                .with_ext("brokerName", &name)
                .with_ext("masterBrokerId", &me.to_string())
                .with_ext("masterEpoch", &current.master_epoch.to_string())
                .with_body(body.clone().into_bytes())
        })
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(failed("CONTROLLER_ALTER_SYNC_STATE_SET", &resp));
    }
    let epoch = resp
        .ext("newSyncStateSetEpoch")
        .and_then(|e| e.trim().parse::<i32>().ok())
        .ok_or("no newSyncStateSetEpoch in the answer")?;
    let Ok(_permit) = r.changing.acquire_permit(1).await else {
        return Ok(());
    };
    if r.state.borrow().master_epoch != current.master_epoch {
        return Ok(());
    }
    tracing::info!(
        "controller mode: SyncStateSet {:?} -> {wanted:?} (epoch {epoch})",
        current.sync_state_set
    );
    set_sync_state_set(shard, wanted, epoch).await;
    Ok(())
}

async fn set_sync_state_set(shard: &Rc<Shard>, set: BTreeSet<u64>, epoch: i32) {
    if let Some(r) = replicas(shard) {
        let mut st = r.state.borrow_mut();
        st.sync_state_set = set.clone();
        st.sync_state_set_epoch = epoch;
    }
    join_all(shard.every_shard().map(|s| {
        let set = set.clone();
        s.sync_state_set_changed(set)
    }))
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_info_reads_headers_and_either_body() {
        let cmd = RemotingCommand::request(0)
            .with_ext("masterBrokerId", "2")
            .with_ext("masterAddress", "10.0.0.2:10911")
            .with_ext("masterEpoch", "7")
            .with_ext("syncStateSetEpoch", "3")
            .with_body(br#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#.to_vec());
        let info = MasterInfo::from_command(&cmd);
        assert_eq!(info.master_broker_id, Some(2));
        assert_eq!(info.master_addr.as_deref(), Some("10.0.0.2:10911"));
        assert_eq!(info.master_epoch, 7);
        assert_eq!(info.sync_state_set, BTreeSet::from([1, 2]));
        assert!(info.has_master());
        // ELECT_MASTER's body has no epoch; no master at all reads as none.
        let none = MasterInfo::from_command(
            &RemotingCommand::request(0)
                .with_ext("masterBrokerId", "-1")
                .with_body(br#"{"brokerMemberGroup":{},"syncStateSet":[]}"#.to_vec()),
        );
        assert!(!none.has_master());
        assert!(
            MasterInfo::from_command(&RemotingCommand::request(0).with_body(b"x".to_vec()))
                .sync_state_set
                .is_empty()
        );
    }

    #[test]
    fn slave_shard_i_follows_master_shard_broker_i() {
        let cfg = crate::config::BrokerConfig::default();
        assert_eq!(
            shard_broker_addr(&cfg, "10.0.0.2:10911", 1, 2),
            "10.0.0.2:10915"
        );
        assert_eq!(
            shard_broker_addr(&cfg, "10.0.0.2:10911", 0, 2),
            "10.0.0.2:10911"
        );
        assert_eq!(
            shard_broker_addr(&cfg, "10.0.0.2:10911", 0, 1),
            "10.0.0.2:10911"
        );
    }
}

//! One controller: its raft node, the replicated state, the broker heartbeats it saw, and the
//! leader's work (scanning for dead masters, electing, telling brokers). Runs on the raft thread's
//! tokio runtime; the remoting side reaches it through `Arc<Controller>`.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use openraft::error::{ClientWriteError, RaftError};
use openraft::ServerState;
use protocol::{request_code, RemotingCommand};

use crate::config::ControllerConfig;
use crate::raft::peer_client::PeerClient;
use crate::raft::store::Store;
use crate::raft::types::{NodeId, Raft};
use crate::replicas::{sync_state_set_body, BrokerGroup, Command, LiveReplica, Reply};

/// What the last heartbeat of one broker said (BROKER_HEARTBEAT's header).
#[derive(Debug, Clone)]
pub struct BrokerLive {
    pub cluster_name: String,
    pub broker_addr: String,
    pub last: Instant,
    pub timeout: Duration,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    pub election_priority: i32,
    /// This controller got the broker's heartbeats while a follower: the broker heartbeats every
    /// controller (Apache's heartbeat only the leader).
    pub heard_as_follower: bool,
    /// The connection the last heartbeat came on, when known (not for an embedded controller,
    /// whose name server does not report closes).
    pub channel: Option<Channel>,
    /// That connection closed and no heartbeat came since: the broker is gone (a killed process's
    /// connections are closed by its kernel at once), as Apache's onBrokerChannelClose.
    pub channel_closed: bool,
}

/// A connection to this controller: (local address, peer address), unique while it is open.
pub type Channel = (SocketAddr, SocketAddr);

/// Why a request needing the leader could not be served here.
#[derive(Debug)]
pub enum NotServed {
    /// This controller is not the raft leader; the leader, when known.
    NotLeader(Option<(NodeId, String)>),
    /// Raft failed (shutting down, storage error).
    Raft(String),
}

/// Counters reported by GET_METADATA_INFO's extra fields and the logs.
#[derive(Debug, Default, Clone, Copy)]
pub struct Metrics {
    pub elections: u64,
    pub failed_elections: u64,
    pub heartbeats: u64,
}

pub struct Controller {
    pub raft: Raft,
    pub store: Store,
    /// Settings; UPDATE_CONTROLLER_CONFIG changes the runtime ones.
    pub config: RwLock<ControllerConfig>,
    /// Heartbeats by (brokerName, brokerId). Kept by every controller, so a new leader has them.
    heartbeats: Mutex<HashMap<(String, u64), BrokerLive>>,
    /// When this controller last became the leader: a master it had not heard from gets a full
    /// timeout from then before it is declared dead (it may have heartbeated only the old leader).
    leader_since: Mutex<Option<Instant>>,
    /// Held while a group is checked and its election proposed: the scan and a connection close
    /// must not both elect for the same dead master.
    electing: tokio::sync::Mutex<()>,
    /// Signalled after every change this leader proposed (an election, a registration): the scan
    /// then plans its next wake-up with the new master's heartbeat deadline instead of finishing a
    /// sleep planned without it.
    rescan: tokio::sync::Notify,
    metrics: Mutex<Metrics>,
}

impl Controller {
    pub fn new(raft: Raft, store: Store, config: ControllerConfig) -> Controller {
        Controller {
            raft,
            store,
            config: RwLock::new(config),
            heartbeats: Mutex::new(HashMap::new()),
            leader_since: Mutex::new(None),
            electing: tokio::sync::Mutex::new(()),
            rescan: tokio::sync::Notify::new(),
            metrics: Mutex::new(Metrics::default()),
        }
    }

    pub fn config(&self) -> ControllerConfig {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn metrics(&self) -> Metrics {
        *self.metrics.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn peer_addr(&self, id: NodeId) -> Option<String> {
        self.config()
            .peers
            .iter()
            .find(|p| p.id == id)
            .map(|p| p.addr.to_string())
    }

    /// The raft leader as (id, address), if one is known.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        let id = self.raft.metrics().borrow().current_leader?;
        Some((id, self.peer_addr(id)?))
    }

    pub fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().state == ServerState::Leader
    }

    /// Records a heartbeat.
    pub fn on_heartbeat(&self, broker_name: &str, broker_id: u64, mut live: BrokerLive) {
        let follower = !self.is_leader();
        let mut beats = self.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
        let key = (broker_name.to_string(), broker_id);
        live.heard_as_follower = follower || beats.get(&key).is_some_and(|b| b.heard_as_follower);
        beats.insert(key, live);
        drop(beats);
        self.metrics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .heartbeats += 1;
    }

    fn default_timeout(&self) -> Duration {
        self.config().heartbeat_timeout
    }

    /// The replicas of `broker_name` whose heartbeat is fresh, with what they reported.
    pub fn live_replicas(&self, broker_name: &str) -> Vec<LiveReplica> {
        let now = Instant::now();
        let beats = self.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
        let mut live: Vec<LiveReplica> = beats
            .iter()
            .filter(|((name, _), b)| {
                name == broker_name && !b.channel_closed && now.duration_since(b.last) <= b.timeout
            })
            .map(|((_, id), b)| LiveReplica {
                broker_id: *id,
                epoch: b.epoch,
                max_offset: b.max_offset,
                election_priority: b.election_priority,
            })
            .collect();
        live.sort_by_key(|l| l.broker_id);
        live
    }

    pub fn alive_ids(&self, broker_name: &str) -> Vec<u64> {
        self.live_replicas(broker_name)
            .into_iter()
            .map(|l| l.broker_id)
            .collect()
    }

    /// Whether the master's silence is over its timeout. A master that heartbeats every
    /// controller is judged by its heartbeats; one that heartbeats only the leader (as Apache's
    /// brokers do) gets a full timeout from when this controller became leader, since its
    /// heartbeats went to the old leader until then.
    fn master_dead(&self, broker_name: &str, master: u64, now: Instant) -> bool {
        let since = self
            .leader_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or(now);
        let beats = self.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
        let (last, timeout) = match beats.get(&(broker_name.to_string(), master)) {
            Some(b) if b.channel_closed => return true,
            Some(b) => (silence_since(b, since), b.timeout),
            None => (since, self.default_timeout()),
        };
        now.duration_since(last) > timeout
    }

    /// When the first master whose heartbeat connection is still open would be past its timeout,
    /// if it stays silent (judged as `master_dead` does); None without a master to watch.
    fn next_master_deadline(&self, now: Instant) -> Option<Instant> {
        let masters: Vec<(String, u64)> = self.store.read(|s| {
            s.groups
                .values()
                .filter_map(|g| Some((g.broker_name.clone(), g.master_broker_id?)))
                .collect()
        });
        let since = self
            .leader_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or(now);
        let beats = self.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
        masters
            .into_iter()
            .filter_map(|(name, master)| {
                let (last, timeout) = match beats.get(&(name, master)) {
                    // Closed: its close already started a check; the next scan retries it.
                    Some(b) if b.channel_closed => return None,
                    Some(b) => (silence_since(b, since), b.timeout),
                    None => (since, self.default_timeout()),
                };
                last.checked_add(timeout)
            })
            .min()
    }

    /// How long the leader's scan sleeps: `interval`, or less when a master's heartbeat timeout
    /// ends sooner, so that a silent master (a partition, a hung process) is found when its
    /// timeout ends rather than up to one interval later; just past the deadline, since the check
    /// is "silent longer than the timeout". A deadline already passed when the sleep is planned
    /// means the check just made did not replace that master (no candidate, no quorum): retrying
    /// it is the interval's job, not a tight loop's.
    pub fn scan_pause(&self, interval: Duration, now: Instant) -> Duration {
        let slack = Duration::from_millis(5);
        match self.next_master_deadline(now) {
            Some(deadline) if deadline.checked_add(slack).is_some_and(|d| d > now) => deadline
                .checked_add(Duration::from_millis(1))
                .unwrap_or(deadline)
                .saturating_duration_since(now)
                .clamp(
                    Duration::from_millis(1),
                    interval.max(Duration::from_millis(1)),
                ),
            _ => interval,
        }
    }

    /// Appends `command` to the raft log and answers with what applying it said.
    pub async fn propose(&self, command: Command) -> Result<Reply, NotServed> {
        match self.raft.client_write(command).await {
            Ok(response) => {
                self.rescan.notify_one();
                Ok(response.data)
            }
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => Err(
                NotServed::NotLeader(f.leader_id.and_then(|id| Some((id, self.peer_addr(id)?)))),
            ),
            Err(e) => Err(NotServed::Raft(e.to_string())),
        }
    }

    /// Confirms leadership with a quorum and waits until the state is current, then reads it.
    pub async fn read_as_leader<T>(
        &self,
        f: impl FnOnce(&crate::replicas::ReplicasInfo) -> T,
    ) -> Result<T, NotServed> {
        match self.raft.ensure_linearizable().await {
            Ok(_) => Ok(self.store.read(f)),
            Err(RaftError::APIError(openraft::error::CheckIsLeaderError::ForwardToLeader(f))) => {
                Err(NotServed::NotLeader(
                    f.leader_id.and_then(|id| Some((id, self.peer_addr(id)?))),
                ))
            }
            // No quorum confirmed this leader (peers starting, or it lost them): not a leader to rely on.
            Err(RaftError::APIError(openraft::error::CheckIsLeaderError::QuorumNotEnough(_))) => {
                Err(NotServed::NotLeader(None))
            }
            Err(e) => Err(NotServed::Raft(e.to_string())),
        }
    }

    /// After an election: NOTIFY_BROKER_ROLE_CHANGED to every live replica of the group (oneway).
    pub fn notify_role_changed(self: &Arc<Self>, broker_name: &str) {
        if !self.config().notify_broker_role_changed {
            return;
        }
        let Some(group) = self.store.read(|s| s.groups.get(broker_name).cloned()) else {
            return;
        };
        let Some(master) = group.master_broker_id else {
            return;
        };
        for id in self.alive_ids(broker_name) {
            let Some(addr) = group.address_of(id).map(str::to_string) else {
                continue;
            };
            let request = role_changed_request(&group, master);
            tokio::spawn(async move {
                let mut client = PeerClient::new(addr.clone());
                if let Err(e) = client.send_oneway(request, Duration::from_secs(3)).await {
                    tracing::warn!("cannot tell broker {addr} of the new master: {e}");
                }
            });
        }
    }

    /// The leader's scan: elects a new master for every group whose master went silent, every
    /// `scanNotActiveBrokerInterval`, when a master's heartbeat timeout ends before that (so the
    /// interval adds nothing to a partitioned master's detection), and at once when this
    /// controller becomes the raft leader (a master whose connections closed while no leader was
    /// there to act is replaced then).
    pub async fn scan_loop(self: Arc<Self>) {
        let mut metrics = self.raft.metrics();
        loop {
            let interval = self.config().scan_not_active_broker_interval;
            let was_leader = self.is_leader();
            let became_leader = async {
                loop {
                    if metrics.changed().await.is_err() {
                        // Raft stopped: only the interval is left.
                        std::future::pending::<()>().await;
                    }
                    if metrics.borrow().state == ServerState::Leader {
                        return;
                    }
                }
            };
            if was_leader {
                tokio::select! {
                    () = tokio::time::sleep(self.scan_pause(interval, Instant::now())) => {}
                    () = self.rescan.notified() => {}
                }
            } else {
                tokio::select! {
                    () = tokio::time::sleep(interval) => {}
                    () = became_leader => {}
                }
            }
            if !self.is_leader() {
                *self.leader_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
                continue;
            }
            let now = Instant::now();
            self.leader_since
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(now);
            let names: Vec<String> = self.store.read(|s| s.groups.keys().cloned().collect());
            for name in names {
                self.check_group(&name).await;
            }
        }
    }

    /// A connection to this controller closed (Apache's BrokerHousekeepingService.onChannelClose).
    /// A broker whose last heartbeat came on it is taken for gone at once: a killed or stopped
    /// broker's connections are closed by its kernel, so waiting for the heartbeat timeout only
    /// delays the failover. When it was a master and this controller leads, its group is checked
    /// now instead of at the next scan. A broker cut off by a partition closes nothing: the
    /// heartbeat timeout still finds it. A new heartbeat, on any connection, makes it alive again.
    pub fn on_channel_close(self: &Arc<Self>, channel: Channel) {
        let mut gone: BTreeSet<String> = BTreeSet::new();
        {
            let mut beats = self.heartbeats.lock().unwrap_or_else(|p| p.into_inner());
            for ((name, id), b) in beats.iter_mut() {
                if b.channel == Some(channel) && !b.channel_closed {
                    b.channel_closed = true;
                    tracing::info!(
                        "broker {name} {id} at {}: its heartbeat connection closed",
                        b.broker_addr
                    );
                    gone.insert(name.clone());
                }
            }
        }
        if gone.is_empty() || !self.is_leader() {
            return;
        }
        let masters: Vec<String> = self.store.read(|s| {
            gone.into_iter()
                .filter(|name| {
                    s.groups
                        .get(name)
                        .and_then(|g| g.master_broker_id)
                        .is_some_and(|m| self.heartbeat_channel_closed(name, m))
                })
                .collect()
        });
        for name in masters {
            let controller = self.clone();
            tokio::spawn(async move { controller.check_group(&name).await });
        }
    }

    fn heartbeat_channel_closed(&self, broker_name: &str, broker_id: u64) -> bool {
        self.heartbeats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(broker_name.to_string(), broker_id))
            .is_some_and(|b| b.channel_closed)
    }

    /// Elects a new master for `name` when its master is dead (silent past its timeout, or its
    /// heartbeat connection closed), or when it has none and an in-sync replica is alive.
    async fn check_group(self: &Arc<Self>, name: &str) {
        let _electing = self.electing.lock().await;
        if !self.is_leader() {
            return;
        }
        let Some(group) = self.store.read(|s| s.groups.get(name).cloned()) else {
            return;
        };
        let group = &group;
        let now = Instant::now();
        let name = &group.broker_name;
        let unclean = self.config().enable_elect_unclean_master;
        let alive = self.live_replicas(name);
        match group.master_broker_id {
            Some(master) if !self.master_dead(name, master, now) => return,
            Some(master) if self.heartbeat_channel_closed(name, master) => tracing::warn!(
                "broker group {name}: master {master}'s heartbeat connection closed, electing"
            ),
            Some(master) => tracing::warn!(
                "broker group {name}: master {master} silent past its heartbeat timeout, electing"
            ),
            None => {
                // No master: try again only when someone may take over.
                let candidate = alive
                    .iter()
                    .any(|l| unclean || group.sync_state_set.contains(&l.broker_id));
                if !candidate || group.master_epoch == 0 {
                    return;
                }
            }
        }
        let alive: Vec<LiveReplica> = alive
            .into_iter()
            .filter(|l| Some(l.broker_id) != group.master_broker_id)
            .collect();
        let started = Instant::now();
        let command = Command::ElectMaster {
            broker_name: name.clone(),
            broker_id: None,
            designate_elect: false,
            alive,
            enable_elect_unclean_master: unclean,
        };
        match self.propose(command).await {
            Ok(reply) if reply.role_changed => {
                self.metrics
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .elections += 1;
                tracing::info!(
                    "broker group {name}: new master {} epoch {} (elected in {} ms)",
                    reply
                        .header
                        .get("masterBrokerId")
                        .map_or("?", String::as_str),
                    reply.header.get("masterEpoch").map_or("?", String::as_str),
                    started.elapsed().as_millis()
                );
                self.notify_role_changed(name);
            }
            Ok(reply) => {
                self.metrics
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .failed_elections += 1;
                tracing::warn!(
                    "broker group {name}: no new master: {}",
                    reply.remark.unwrap_or_default()
                );
            }
            Err(e) => tracing::warn!("broker group {name}: election not proposed: {e:?}"),
        }
    }
}

/// From when a master's silence counts, for a controller that became the raft leader at `since`.
/// Its own last heartbeat from the master when it heard that master as a follower too and that
/// heartbeat was still within the timeout when it took over (a master that went silent just
/// before a raft leader change is replaced without waiting a second timeout). Otherwise `since`:
/// a master this controller never heard (it heartbeats only the leader, as Apache's), or one
/// whose record was already stale when this controller took over. The latter is what a
/// controller cut off by a partition holds when it returns and wins the raft election (its term
/// grew while it campaigned alone): it heard nobody across the partition, and judging the
/// master by those records deposed a healthy master at once (chaos, `partition_minority`,
/// 2026-12-07). A master that really is gone still closes its connection (found at once) or
/// stays silent for one more timeout.
fn silence_since(b: &BrokerLive, since: Instant) -> Instant {
    if b.heard_as_follower && since.saturating_duration_since(b.last) <= b.timeout {
        b.last
    } else {
        b.last.max(since)
    }
}

/// NOTIFY_BROKER_ROLE_CHANGED as Apache's controller sends it.
fn role_changed_request(group: &BrokerGroup, master: u64) -> RemotingCommand {
    let mut request = RemotingCommand::request(request_code::NOTIFY_BROKER_ROLE_CHANGED).with_body(
        sync_state_set_body(&group.sync_state_set, group.sync_state_set_epoch),
    );
    request.set_ext(
        "masterAddress",
        group.address_of(master).unwrap_or_default(),
    );
    request.set_ext("masterBrokerId", &master.to_string());
    request.set_ext("masterEpoch", &group.master_epoch.to_string());
    request.set_ext("syncStateSetEpoch", &group.sync_state_set_epoch.to_string());
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(last: Instant, heard_as_follower: bool) -> BrokerLive {
        BrokerLive {
            cluster_name: "c".into(),
            broker_addr: "127.0.0.1:1".into(),
            last,
            timeout: Duration::from_millis(1500),
            epoch: 1,
            max_offset: 0,
            confirm_offset: 0,
            election_priority: 0,
            heard_as_follower,
            channel: None,
            channel_closed: false,
        }
    }

    #[test]
    fn a_master_heard_recently_as_a_follower_is_judged_by_its_last_heartbeat() {
        let since = Instant::now();
        let last = since
            .checked_sub(Duration::from_millis(700))
            .unwrap_or(since);
        assert_eq!(silence_since(&live(last, true), since), last);
    }

    #[test]
    fn a_record_stale_when_this_controller_took_over_counts_from_the_takeover() {
        // A controller back from a partition: it last heard the master 10 s before it led.
        let since = Instant::now();
        let last = since.checked_sub(Duration::from_secs(10)).unwrap_or(since);
        assert_eq!(silence_since(&live(last, true), since), since);
    }

    #[test]
    fn a_master_heard_only_as_leader_counts_from_the_takeover_at_the_earliest() {
        let since = Instant::now();
        let before = since
            .checked_sub(Duration::from_millis(200))
            .unwrap_or(since);
        assert_eq!(silence_since(&live(before, false), since), since);
        let after = since + Duration::from_millis(300);
        assert_eq!(silence_since(&live(after, false), since), after);
        assert_eq!(silence_since(&live(after, true), since), after);
    }
}

//! The replicated state: per broker group (brokerName) its replicas, master, epochs and SyncStateSet,
//! and the commands that change it. Applying a command is deterministic, so every controller that
//! applies the same raft log holds the same state; facts only the leader knows (which brokers are
//! alive, their epochs and offsets) travel inside the command.

use std::collections::{BTreeMap, BTreeSet};

use protocol::response_code;
use serde::{Deserialize, Serialize};

/// Apache's `MixAll.FIRST_BROKER_CONTROLLER_ID`: the id the first broker of a group applies for.
pub const FIRST_BROKER_CONTROLLER_ID: u64 = 1;

/// One replica of a broker group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    pub address: String,
    /// `address;timestamp` the broker applied its id with; the same code may apply again.
    pub register_check_code: String,
}

/// One broker group: Apache's `BrokerReplicaInfo` and `SyncStateInfo` together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerGroup {
    pub cluster_name: String,
    pub broker_name: String,
    pub replicas: BTreeMap<u64, Replica>,
    pub master_broker_id: Option<u64>,
    /// Bumped by every election, also by one that found no master (as Apache's).
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<u64>,
    pub sync_state_set_epoch: i32,
}

impl BrokerGroup {
    pub fn address_of(&self, id: u64) -> Option<&str> {
        self.replicas.get(&id).map(|r| r.address.as_str())
    }

    pub fn master_address(&self) -> Option<&str> {
        self.master_broker_id.and_then(|id| self.address_of(id))
    }

    pub fn next_broker_id(&self) -> u64 {
        self.replicas
            .keys()
            .next_back()
            .map_or(FIRST_BROKER_CONTROLLER_ID, |max| max + 1)
    }
}

/// What the leader knew about a live replica when it proposed an election (from heartbeats).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveReplica {
    pub broker_id: u64,
    pub epoch: i32,
    pub max_offset: i64,
    pub election_priority: i32,
}

/// A change to the state, as appended to the raft log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// CONTROLLER_APPLY_BROKER_ID.
    ApplyBrokerId {
        cluster_name: String,
        broker_name: String,
        broker_id: u64,
        register_check_code: String,
    },
    /// CONTROLLER_REGISTER_BROKER; `alive` are the replicas with a fresh heartbeat.
    RegisterBroker {
        cluster_name: String,
        broker_name: String,
        broker_id: u64,
        broker_address: String,
        alive: Vec<u64>,
    },
    /// CONTROLLER_ALTER_SYNC_STATE_SET from the master.
    AlterSyncStateSet {
        broker_name: String,
        master_broker_id: u64,
        master_epoch: i32,
        sync_state_set: BTreeSet<u64>,
        sync_state_set_epoch: i32,
        alive: Vec<u64>,
    },
    /// CONTROLLER_ELECT_MASTER from a broker or an admin (`broker_id` set), or from the leader's
    /// scan after the master went silent (`broker_id` None).
    ElectMaster {
        broker_name: String,
        broker_id: Option<u64>,
        designate_elect: bool,
        alive: Vec<LiveReplica>,
        enable_elect_unclean_master: bool,
    },
    /// CLEAN_BROKER_DATA: forget replicas (or the whole group when `broker_ids` is None).
    CleanBrokerData {
        broker_name: String,
        broker_ids: Option<Vec<u64>>,
    },
}

/// The answer to a command: a response code, header fields and a body, the same on every controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub code: i32,
    pub remark: Option<String>,
    pub header: BTreeMap<String, String>,
    pub body: Option<String>,
    /// An election changed the master: the leader tells the group's brokers.
    pub role_changed: bool,
}

impl Reply {
    fn ok() -> Reply {
        Reply::default()
    }

    fn error(code: i32, remark: impl Into<String>) -> Reply {
        Reply {
            code,
            remark: Some(remark.into()),
            ..Reply::default()
        }
    }

    fn with(mut self, key: &str, value: impl ToString) -> Reply {
        self.header.insert(key.to_string(), value.to_string());
        self
    }
}

/// Apache's `SyncStateSet` body.
pub fn sync_state_set_body(set: &BTreeSet<u64>, epoch: i32) -> String {
    serde_json::json!({ "syncStateSet": set, "syncStateSetEpoch": epoch }).to_string()
}

/// Apache's `BrokerMemberGroup` JSON.
pub fn member_group_json(group: &BrokerGroup) -> serde_json::Value {
    let addrs: BTreeMap<String, &str> = group
        .replicas
        .iter()
        .map(|(id, r)| (id.to_string(), r.address.as_str()))
        .collect();
    serde_json::json!({
        "cluster": group.cluster_name,
        "brokerName": group.broker_name,
        "brokerAddrs": addrs,
    })
}

/// Every broker group, by brokerName.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicasInfo {
    pub groups: BTreeMap<String, BrokerGroup>,
}

impl ReplicasInfo {
    /// Applies one command (only ever called in raft log order).
    pub fn apply(&mut self, command: &Command) -> Reply {
        match command {
            Command::ApplyBrokerId {
                cluster_name,
                broker_name,
                broker_id,
                register_check_code,
            } => self.apply_broker_id(cluster_name, broker_name, *broker_id, register_check_code),
            Command::RegisterBroker {
                broker_name,
                broker_id,
                broker_address,
                alive,
                ..
            } => self.register_broker(broker_name, *broker_id, broker_address, alive),
            Command::AlterSyncStateSet {
                broker_name,
                master_broker_id,
                master_epoch,
                sync_state_set,
                sync_state_set_epoch,
                alive,
            } => self.alter_sync_state_set(
                broker_name,
                *master_broker_id,
                *master_epoch,
                sync_state_set,
                *sync_state_set_epoch,
                alive,
            ),
            Command::ElectMaster {
                broker_name,
                broker_id,
                designate_elect,
                alive,
                enable_elect_unclean_master,
            } => self.elect_master(
                broker_name,
                *broker_id,
                *designate_elect,
                alive,
                *enable_elect_unclean_master,
            ),
            Command::CleanBrokerData {
                broker_name,
                broker_ids,
            } => self.clean(broker_name, broker_ids.as_deref()),
        }
    }

    fn apply_broker_id(
        &mut self,
        cluster_name: &str,
        broker_name: &str,
        broker_id: u64,
        check_code: &str,
    ) -> Reply {
        let address = check_code.split(';').next().unwrap_or_default().to_string();
        let replica = Replica {
            address,
            register_check_code: check_code.to_string(),
        };
        let reply = Reply::ok()
            .with("clusterName", cluster_name)
            .with("brokerName", broker_name);
        match self.groups.get_mut(broker_name) {
            None if broker_id == FIRST_BROKER_CONTROLLER_ID => {
                let mut replicas = BTreeMap::new();
                replicas.insert(broker_id, replica);
                self.groups.insert(
                    broker_name.to_string(),
                    BrokerGroup {
                        cluster_name: cluster_name.to_string(),
                        broker_name: broker_name.to_string(),
                        replicas,
                        master_broker_id: None,
                        master_epoch: 0,
                        sync_state_set: BTreeSet::new(),
                        sync_state_set_epoch: 0,
                    },
                );
                reply
            }
            None => Reply::error(
                response_code::CONTROLLER_BROKER_ID_INVALID,
                format!("Broker-set: {broker_name} hasn't been registered in controller, but broker try to apply brokerId: {broker_id}"),
            ),
            Some(group) => match group.replicas.get(&broker_id) {
                Some(old) if old.register_check_code != check_code => Reply::error(
                    response_code::CONTROLLER_BROKER_ID_INVALID,
                    format!("Fail to apply brokerId: {broker_id} in broker-set: {broker_name}"),
                ),
                _ => {
                    group.replicas.insert(broker_id, replica);
                    reply
                }
            },
        }
    }

    fn register_broker(
        &mut self,
        broker_name: &str,
        broker_id: u64,
        broker_address: &str,
        alive: &[u64],
    ) -> Reply {
        let Some(group) = self.groups.get_mut(broker_name) else {
            return Reply::error(
                response_code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                format!("Broker-set: {broker_name} hasn't been registered in controller"),
            );
        };
        let Some(replica) = group.replicas.get_mut(&broker_id) else {
            return Reply::error(
                response_code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                format!(
                    "BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}"
                ),
            );
        };
        if replica.address != broker_address {
            replica.address = broker_address.to_string();
        }
        let mut reply = Reply::ok()
            .with("clusterName", &group.cluster_name)
            .with("brokerName", broker_name);
        if let Some(master) = group.master_broker_id.filter(|m| alive.contains(m)) {
            reply = reply
                .with("masterBrokerId", master)
                .with(
                    "masterAddress",
                    group.address_of(master).unwrap_or_default(),
                )
                .with("masterEpoch", group.master_epoch)
                .with("syncStateSetEpoch", group.sync_state_set_epoch);
        }
        reply.body = Some(sync_state_set_body(
            &group.sync_state_set,
            group.sync_state_set_epoch,
        ));
        reply
    }

    fn alter_sync_state_set(
        &mut self,
        broker_name: &str,
        master_broker_id: u64,
        master_epoch: i32,
        new_set: &BTreeSet<u64>,
        set_epoch: i32,
        alive: &[u64],
    ) -> Reply {
        use response_code::*;
        let Some(group) = self.groups.get_mut(broker_name) else {
            return Reply::error(
                CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "Broker metadata is not existed",
            );
        };
        if group.sync_state_set == *new_set {
            return Reply::error(
                CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet",
            );
        }
        if group.master_broker_id != Some(master_broker_id) {
            return Reply::error(
                CONTROLLER_INVALID_MASTER,
                format!(
                    "Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{master_broker_id}}}",
                    group.master_broker_id.map_or("null".into(), |m| m.to_string())
                ),
            );
        }
        if master_epoch != group.master_epoch {
            return Reply::error(
                CONTROLLER_FENCED_MASTER_EPOCH,
                format!("Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{master_epoch}}}", group.master_epoch),
            );
        }
        if set_epoch != group.sync_state_set_epoch {
            return Reply::error(
                CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                format!("Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{set_epoch}}}", group.sync_state_set_epoch),
            );
        }
        for id in new_set {
            if !group.replicas.contains_key(id) {
                return Reply::error(
                    CONTROLLER_INVALID_REPLICAS,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't exist"),
                );
            }
            if !alive.contains(id) {
                return Reply::error(
                    CONTROLLER_BROKER_NOT_ALIVE,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't alive"),
                );
            }
        }
        if !new_set.contains(&master_broker_id) {
            return Reply::error(
                CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                format!("Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{master_broker_id}}}"),
            );
        }
        group.sync_state_set = new_set.clone();
        group.sync_state_set_epoch += 1;
        let mut reply = Reply::ok().with("newSyncStateSetEpoch", group.sync_state_set_epoch);
        reply.body = Some(sync_state_set_body(new_set, group.sync_state_set_epoch));
        reply
    }

    fn elect_master(
        &mut self,
        broker_name: &str,
        broker_id: Option<u64>,
        designate_elect: bool,
        alive: &[LiveReplica],
        unclean: bool,
    ) -> Reply {
        let Some(group) = self.groups.get_mut(broker_name) else {
            return Reply::error(
                response_code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                "Broker hasn't been registered",
            );
        };
        let old_master = group.master_broker_id;
        // The very first election of a group takes the broker that asks (Apache's isFirstTimeForElect).
        let mut new_master =
            broker_id.filter(|id| group.master_epoch == 0 && group.replicas.contains_key(id));
        if new_master.is_none() {
            let prefer = if designate_elect { broker_id } else { None };
            new_master = elect_policy(&group.sync_state_set, alive, old_master, prefer);
            if new_master.is_none() && unclean {
                let all: BTreeSet<u64> = group.replicas.keys().copied().collect();
                new_master = elect_policy(&all, alive, old_master, prefer);
            }
        }
        match new_master {
            Some(m) if Some(m) == old_master => {
                let mut reply = Reply::error(
                    response_code::CONTROLLER_MASTER_STILL_EXIST,
                    format!("The old master {m} is still alive, not need to elect new master for broker {broker_name}"),
                )
                .with("masterBrokerId", m)
                .with("masterAddress", group.address_of(m).unwrap_or_default())
                .with("masterEpoch", group.master_epoch)
                .with("syncStateSetEpoch", group.sync_state_set_epoch);
                reply.body =
                    Some(serde_json::json!({ "syncStateSet": group.sync_state_set }).to_string());
                reply
            }
            Some(m) => {
                group.master_broker_id = Some(m);
                group.master_epoch += 1;
                group.sync_state_set = BTreeSet::from([m]);
                group.sync_state_set_epoch += 1;
                let mut reply = Reply::ok()
                    .with("masterBrokerId", m)
                    .with("masterAddress", group.address_of(m).unwrap_or_default())
                    .with("masterEpoch", group.master_epoch)
                    .with("syncStateSetEpoch", group.sync_state_set_epoch);
                reply.body = Some(
                    serde_json::json!({
                        "brokerMemberGroup": member_group_json(group),
                        "syncStateSet": group.sync_state_set,
                    })
                    .to_string(),
                );
                reply.role_changed = true;
                reply
            }
            None if broker_id.is_none() => {
                // The master is gone and nobody may take over: record that there is no master.
                group.master_broker_id = None;
                group.master_epoch += 1;
                Reply::error(
                    response_code::CONTROLLER_MASTER_NOT_AVAILABLE,
                    "Old master has down and failed to elect a new broker master",
                )
            }
            None => Reply::error(
                response_code::CONTROLLER_ELECT_MASTER_FAILED,
                "Failed to elect a new master",
            ),
        }
    }

    fn clean(&mut self, broker_name: &str, ids: Option<&[u64]>) -> Reply {
        let Some(group) = self.groups.get_mut(broker_name) else {
            return Reply::error(
                response_code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                format!("Broker {broker_name} is not existed, clean broker data failed"),
            );
        };
        match ids {
            None => {
                self.groups.remove(broker_name);
            }
            Some(ids) => {
                for id in ids {
                    group.replicas.remove(id);
                    group.sync_state_set.remove(id);
                    if group.master_broker_id == Some(*id) {
                        group.master_broker_id = None;
                    }
                }
                if group.replicas.is_empty() {
                    self.groups.remove(broker_name);
                }
            }
        }
        Reply::ok()
    }
}

/// Apache's DefaultElectPolicy: among `candidates` that are alive, keep the old master if it is
/// there (and no other was asked for), take the preferred one if asked, else the one with the
/// highest epoch, then the highest max offset, then the lowest election priority, then the lowest id.
pub fn elect_policy(
    candidates: &BTreeSet<u64>,
    alive: &[LiveReplica],
    old_master: Option<u64>,
    prefer: Option<u64>,
) -> Option<u64> {
    let live: Vec<&LiveReplica> = alive
        .iter()
        .filter(|l| candidates.contains(&l.broker_id))
        .collect();
    if live.is_empty() {
        return None;
    }
    let contains = |id: u64| live.iter().any(|l| l.broker_id == id);
    if let Some(old) = old_master.filter(|o| contains(*o)) {
        if prefer.is_none() || prefer == Some(old) {
            return Some(old);
        }
    }
    if let Some(p) = prefer {
        return contains(p).then_some(p);
    }
    live.iter()
        .min_by(|a, b| {
            b.epoch
                .cmp(&a.epoch)
                .then(b.max_offset.cmp(&a.max_offset))
                .then(a.election_priority.cmp(&b.election_priority))
                .then(a.broker_id.cmp(&b.broker_id))
        })
        .map(|l| l.broker_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(id: u64, epoch: i32, offset: i64) -> LiveReplica {
        LiveReplica {
            broker_id: id,
            epoch,
            max_offset: offset,
            election_priority: 0,
        }
    }

    fn group_of_three() -> ReplicasInfo {
        let mut s = ReplicasInfo::default();
        for id in 1..=3 {
            let r = s.apply(&Command::ApplyBrokerId {
                cluster_name: "c".into(),
                broker_name: "b".into(),
                broker_id: id,
                register_check_code: format!("127.0.0.1:{id};1"),
            });
            assert_eq!(r.code, 0, "{r:?}");
        }
        let r = s.apply(&Command::ElectMaster {
            broker_name: "b".into(),
            broker_id: Some(1),
            designate_elect: false,
            alive: vec![live(1, 0, 0)],
            enable_elect_unclean_master: false,
        });
        assert_eq!(r.code, 0, "{r:?}");
        s
    }

    #[test]
    fn first_election_takes_the_asking_broker_then_only_the_sync_state_set() {
        let mut s = group_of_three();
        let g = &s.groups["b"];
        assert_eq!(
            (g.master_broker_id, g.master_epoch, g.sync_state_set_epoch),
            (Some(1), 1, 1)
        );
        let r = s.apply(&Command::AlterSyncStateSet {
            broker_name: "b".into(),
            master_broker_id: 1,
            master_epoch: 1,
            sync_state_set: BTreeSet::from([1, 2]),
            sync_state_set_epoch: 1,
            alive: vec![1, 2, 3],
        });
        assert_eq!(
            (r.code, r.header["newSyncStateSetEpoch"].as_str()),
            (0, "2")
        );
        // A stale SyncStateSet epoch is fenced.
        let r = s.apply(&Command::AlterSyncStateSet {
            broker_name: "b".into(),
            master_broker_id: 1,
            master_epoch: 1,
            sync_state_set: BTreeSet::from([1, 2, 3]),
            sync_state_set_epoch: 1,
            alive: vec![1, 2, 3],
        });
        assert_eq!(
            r.code,
            response_code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
        );
        // Master 1 dies; 3 is out of sync and has the higher offset, 2 is in sync: 2 wins.
        let r = s.apply(&Command::ElectMaster {
            broker_name: "b".into(),
            broker_id: None,
            designate_elect: false,
            alive: vec![live(2, 1, 10), live(3, 1, 99)],
            enable_elect_unclean_master: false,
        });
        assert_eq!(r.code, 0);
        let g = &s.groups["b"];
        assert_eq!((g.master_broker_id, g.master_epoch), (Some(2), 2));
        assert_eq!(g.sync_state_set, BTreeSet::from([2]));
        // 2 dies too: 3 is not in the SyncStateSet, so no master...
        let mut without_unclean = s.clone();
        let r = without_unclean.apply(&Command::ElectMaster {
            broker_name: "b".into(),
            broker_id: None,
            designate_elect: false,
            alive: vec![live(3, 1, 99)],
            enable_elect_unclean_master: false,
        });
        assert_eq!(r.code, response_code::CONTROLLER_MASTER_NOT_AVAILABLE);
        assert_eq!(without_unclean.groups["b"].master_broker_id, None);
        assert_eq!(without_unclean.groups["b"].master_epoch, 3);
        // ...unless unclean elections are allowed.
        let r = s.apply(&Command::ElectMaster {
            broker_name: "b".into(),
            broker_id: None,
            designate_elect: false,
            alive: vec![live(3, 1, 99)],
            enable_elect_unclean_master: true,
        });
        assert_eq!((r.code, s.groups["b"].master_broker_id), (0, Some(3)));
    }

    #[test]
    fn a_broker_id_taken_by_another_broker_is_refused() {
        let mut s = group_of_three();
        let r = s.apply(&Command::ApplyBrokerId {
            cluster_name: "c".into(),
            broker_name: "b".into(),
            broker_id: 2,
            register_check_code: "10.0.0.9:1;5".into(),
        });
        assert_eq!(r.code, response_code::CONTROLLER_BROKER_ID_INVALID);
        assert_eq!(s.groups["b"].next_broker_id(), 4);
    }
}

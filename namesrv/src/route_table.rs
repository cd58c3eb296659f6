//! The name server's route table: topics' queues per broker, broker groups, clusters and live brokers.
//!
//! Plain data with no I/O and no clock: callers pass the current time in milliseconds, so every
//! rule (registration, removal, expiry) is testable directly.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use protocol::body::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfigSerializeWrapper, TopicList,
    TopicRouteData, MASTER_ID,
};

/// What the name server knows about one live broker address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    /// Last registration or unchanged data-version query, in the caller's clock.
    pub last_update_ms: u64,
    pub data_version: DataVersion,
    pub ha_server_addr: String,
    /// The connection the broker last registered on; closing it removes the broker.
    pub connection_id: u64,
    /// The broker's own silence limit (`heartbeatTimeoutMillis`), if it sent one.
    pub expire_after_ms: Option<u64>,
}

/// One REGISTER_BROKER request, already parsed.
#[derive(Debug, Clone)]
pub struct Registration<'a> {
    pub cluster_name: &'a str,
    pub broker_name: &'a str,
    pub broker_addr: &'a str,
    pub broker_id: i64,
    pub ha_server_addr: &'a str,
    pub topics: &'a TopicConfigSerializeWrapper,
    pub filter_server_list: &'a [String],
    pub connection_id: u64,
    pub expire_after_ms: Option<u64>,
}

/// What a registering broker is told: for a slave, its master's HA address and address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterOutcome {
    pub ha_server_addr: Option<String>,
    pub master_addr: Option<String>,
    /// True when this address was not live before (for logging).
    pub new_broker: bool,
    /// The registration was ignored: another address holds its brokerId with a higher
    /// `stateVersion` (that address and its `stateVersion`, for logging).
    pub conflict: Option<(String, i64)>,
}

/// The whole route table of one name server.
#[derive(Debug, Default)]
pub struct RouteTable {
    /// topic -> brokerName -> its queues.
    topic_queues: BTreeMap<String, BTreeMap<String, QueueData>>,
    /// brokerName -> the group's addresses by brokerId.
    brokers: BTreeMap<String, BrokerData>,
    /// clusterName -> brokerNames.
    clusters: BTreeMap<String, BTreeSet<String>>,
    /// brokerAddr -> liveness.
    live: HashMap<String, LiveBroker>,
    /// brokerAddr -> filter-server addresses (legacy, usually empty).
    filter_servers: HashMap<String, Vec<String>>,
}

impl RouteTable {
    pub fn new() -> Self {
        RouteTable::default()
    }

    /// Records a broker's registration. Only a master (brokerId 0) writes queue data, and only
    /// when its topic table's data version changed or the broker is new to its group.
    ///
    /// A registration for a brokerId another live address holds with a higher `stateVersion`
    /// (controller mode: the master epoch the broker last learnt) is ignored and the registering
    /// address forgotten, as Apache's `RouteInfoManager.registerBroker` does: a deposed master that
    /// registers as brokerId 0 before it learnt of its successor does not replace it.
    pub fn register(&mut self, reg: &Registration<'_>, now_ms: u64) -> RegisterOutcome {
        if let Some(conflict) = self.stale_registration(reg) {
            self.remove_broker_addr(reg.broker_addr);
            return RegisterOutcome {
                conflict: Some(conflict),
                ..RegisterOutcome::default()
            };
        }
        self.clusters
            .entry(reg.cluster_name.to_owned())
            .or_default()
            .insert(reg.broker_name.to_owned());

        let mut first_registration = false;
        let group = self
            .brokers
            .entry(reg.broker_name.to_owned())
            .or_insert_with(|| {
                first_registration = true;
                BrokerData {
                    cluster: reg.cluster_name.to_owned(),
                    broker_name: reg.broker_name.to_owned(),
                    ..BrokerData::default()
                }
            });
        // One address holds one id: a slave promoted to master (or the reverse) drops its old entry.
        group
            .broker_addrs
            .retain(|id, addr| !(addr == reg.broker_addr && *id != reg.broker_id));
        let previous = group
            .broker_addrs
            .insert(reg.broker_id, reg.broker_addr.to_owned());
        first_registration |= previous.as_deref() != Some(reg.broker_addr);

        if reg.broker_id == MASTER_ID
            && (first_registration
                || self.data_version_changed(reg.broker_addr, &reg.topics.data_version))
        {
            for (name, config) in &reg.topics.topic_config_table {
                // The table key is the topic name; the config's own name may be left empty.
                let topic = if config.topic_name.is_empty() {
                    name
                } else {
                    &config.topic_name
                };
                let queue = QueueData {
                    broker_name: reg.broker_name.to_owned(),
                    read_queue_nums: config.read_queue_nums,
                    write_queue_nums: config.write_queue_nums,
                    perm: config.perm,
                    topic_sys_flag: config.topic_sys_flag,
                };
                self.topic_queues
                    .entry(topic.clone())
                    .or_default()
                    .insert(reg.broker_name.to_owned(), queue);
            }
        }

        let was_live = self
            .live
            .insert(
                reg.broker_addr.to_owned(),
                LiveBroker {
                    cluster_name: reg.cluster_name.to_owned(),
                    broker_name: reg.broker_name.to_owned(),
                    broker_id: reg.broker_id,
                    last_update_ms: now_ms,
                    data_version: reg.topics.data_version,
                    ha_server_addr: reg.ha_server_addr.to_owned(),
                    connection_id: reg.connection_id,
                    expire_after_ms: reg.expire_after_ms,
                },
            )
            .is_some();

        if reg.filter_server_list.is_empty() {
            self.filter_servers.remove(reg.broker_addr);
        } else {
            self.filter_servers
                .insert(reg.broker_addr.to_owned(), reg.filter_server_list.to_vec());
        }

        let mut outcome = RegisterOutcome {
            new_broker: !was_live,
            ..RegisterOutcome::default()
        };
        if reg.broker_id != MASTER_ID {
            let master_addr = self
                .brokers
                .get(reg.broker_name)
                .and_then(|group| group.master_addr());
            if let Some(master_addr) = master_addr {
                if let Some(master) = self.live.get(master_addr) {
                    outcome.ha_server_addr = Some(master.ha_server_addr.clone());
                    outcome.master_addr = Some(master_addr.to_owned());
                }
            }
        }
        outcome
    }

    /// The live address that holds `reg`'s brokerId with a higher `stateVersion` than `reg`
    /// carries, with that `stateVersion`; `None` when the registration may take the slot (the slot
    /// is free, held by the same address or by one no longer live, or the versions allow it).
    fn stale_registration(&self, reg: &Registration<'_>) -> Option<(String, i64)> {
        let holder = self
            .brokers
            .get(reg.broker_name)?
            .broker_addrs
            .get(&reg.broker_id)
            .filter(|addr| addr.as_str() != reg.broker_addr)?;
        let held = self.live.get(holder)?.data_version.state_version;
        (held > reg.topics.data_version.state_version).then(|| (holder.clone(), held))
    }

    /// UNREGISTER_BROKER: removes the address (only if it still holds `broker_id`) and whatever
    /// becomes empty. Returns whether the address was live.
    pub fn unregister(
        &mut self,
        cluster_name: &str,
        broker_name: &str,
        broker_addr: &str,
        broker_id: i64,
    ) -> bool {
        let was_live = self.live.remove(broker_addr).is_some();
        self.filter_servers.remove(broker_addr);
        let mut group_gone = false;
        if let Some(group) = self.brokers.get_mut(broker_name) {
            if group.broker_addrs.get(&broker_id).map(String::as_str) == Some(broker_addr) {
                group.broker_addrs.remove(&broker_id);
            }
            group_gone = group.broker_addrs.is_empty();
        }
        if group_gone {
            self.brokers.remove(broker_name);
            if let Some(names) = self.clusters.get_mut(cluster_name) {
                names.remove(broker_name);
                if names.is_empty() {
                    self.clusters.remove(cluster_name);
                }
            }
            self.remove_queues_of(broker_name);
        }
        was_live
    }

    /// Whether `version` differs from what `broker_addr` last registered (or it is unknown).
    pub fn data_version_changed(&self, broker_addr: &str, version: &DataVersion) -> bool {
        match self.live.get(broker_addr) {
            Some(live) => live.data_version != *version,
            None => true,
        }
    }

    /// The data version `broker_addr` last registered.
    pub fn data_version(&self, broker_addr: &str) -> Option<DataVersion> {
        self.live.get(broker_addr).map(|live| live.data_version)
    }

    /// Marks the broker as heard from now.
    pub fn touch(&mut self, broker_addr: &str, now_ms: u64) {
        if let Some(live) = self.live.get_mut(broker_addr) {
            live.last_update_ms = now_ms;
        }
    }

    /// The live broker at `broker_addr`, if any.
    pub fn live_broker(&self, broker_addr: &str) -> Option<&LiveBroker> {
        self.live.get(broker_addr)
    }

    /// A topic's route: its queues and the groups that serve them; `None` when unknown.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let queues = self.topic_queues.get(topic)?;
        let mut route = TopicRouteData::default();
        for (broker_name, queue) in queues {
            route.queue_datas.push(queue.clone());
            if let Some(group) = self.brokers.get(broker_name) {
                let mut group = group.clone();
                group.enable_acting_master = false;
                for addr in group.broker_addrs.values() {
                    if let Some(servers) = self.filter_servers.get(addr) {
                        route
                            .filter_server_table
                            .insert(addr.clone(), servers.clone());
                    }
                }
                route.broker_datas.push(group);
            }
        }
        // A route with queues but no reachable broker is no route (Java's rule too).
        if route.queue_datas.is_empty() || route.broker_datas.is_empty() {
            return None;
        }
        Some(route)
    }

    /// Every broker group and which cluster holds which broker names.
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self.brokers.clone(),
            cluster_addr_table: self.clusters.clone(),
        }
    }

    /// Every topic with a route.
    pub fn topic_list(&self) -> TopicList {
        TopicList {
            topic_list: self.topic_queues.keys().cloned().collect(),
            broker_addr: None,
        }
    }

    /// Topics served by at least one broker group of `cluster_name`.
    pub fn topics_by_cluster(&self, cluster_name: &str) -> TopicList {
        let names = self.clusters.get(cluster_name);
        let topic_list = self
            .topic_queues
            .iter()
            .filter(|(_, queues)| {
                names.is_some_and(|names| queues.keys().any(|broker| names.contains(broker)))
            })
            .map(|(topic, _)| topic.clone())
            .collect();
        TopicList {
            topic_list,
            broker_addr: None,
        }
    }

    /// Forgets a topic's route (only the queues of `cluster_name`'s brokers when given).
    /// Returns whether anything was removed.
    pub fn delete_topic(&mut self, topic: &str, cluster_name: Option<&str>) -> bool {
        let Some(cluster_name) = cluster_name.filter(|name| !name.is_empty()) else {
            return self.topic_queues.remove(topic).is_some();
        };
        let Some(names) = self.clusters.get(cluster_name) else {
            return false;
        };
        let Some(queues) = self.topic_queues.get_mut(topic) else {
            return false;
        };
        let before = queues.len();
        queues.retain(|broker, _| !names.contains(broker));
        let removed = queues.len() != before;
        if queues.is_empty() {
            self.topic_queues.remove(topic);
        }
        removed
    }

    /// WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER: clears the write bit of every queue
    /// data of `broker_name` (`wipe`), or sets it to read + write. Answers how many topics it
    /// touched. The change lasts until the broker registers a changed topic table.
    pub fn change_write_perm(&mut self, broker_name: &str, wipe: bool) -> i32 {
        let mut touched = 0i32;
        for queues in self.topic_queues.values_mut() {
            if let Some(qd) = queues.get_mut(broker_name) {
                qd.perm = if wipe {
                    qd.perm & !protocol::body::perm::WRITE
                } else {
                    protocol::body::perm::READ | protocol::body::perm::WRITE
                };
                touched = touched.saturating_add(1);
            }
        }
        touched
    }

    /// The broker names a write-perm change for `name` acts on: `name` itself when a broker is
    /// registered under it; otherwise the shard-brokers of the one process configured as `name`
    /// (`name-0` .. `name-N`, a decimal shard id after the last dash, whose addresses registered on
    /// one connection: a process registers all its shard-brokers on one). Names of that shape from
    /// more than one process are refused with their names; none at all is an empty list.
    pub fn write_perm_targets(&self, name: &str) -> Result<Vec<String>, String> {
        if self.brokers.contains_key(name) {
            return Ok(vec![name.to_owned()]);
        }
        let prefix = format!("{name}-");
        // connection of the process -> its shard-broker names
        let mut processes: BTreeMap<Option<u64>, Vec<String>> = BTreeMap::new();
        for (broker, group) in &self.brokers {
            let Some(shard) = broker.strip_prefix(&prefix) else {
                continue;
            };
            if shard.is_empty() || !shard.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            // The master's registration connection, else the lowest live id's.
            let connection = group
                .broker_addrs
                .values()
                .find_map(|addr| self.live.get(addr))
                .map(|live| live.connection_id);
            let connection = group
                .broker_addrs
                .get(&MASTER_ID)
                .and_then(|addr| self.live.get(addr))
                .map(|live| live.connection_id)
                .or(connection);
            processes
                .entry(connection)
                .or_default()
                .push(broker.clone());
        }
        let mut groups = processes.into_values();
        match (groups.next(), groups.next()) {
            (None, _) => Ok(Vec::new()),
            (Some(one), None) => Ok(one),
            (Some(first), Some(second)) => {
                let mut names: Vec<String> = first.into_iter().chain(second).collect();
                names.extend(groups.flatten());
                Err(format!(
                    "no broker is named {name} and the brokers {} are not the shard-brokers of one \
                     process: name one of them",
                    names.join(", ")
                ))
            }
        }
    }

    /// The connection `connection_id` closed: drops every broker address registered on it.
    pub fn remove_connection(&mut self, connection_id: u64) -> Vec<String> {
        let gone: Vec<String> = self
            .live
            .iter()
            .filter(|(_, live)| live.connection_id == connection_id)
            .map(|(addr, _)| addr.clone())
            .collect();
        for addr in &gone {
            self.remove_broker_addr(addr);
        }
        gone
    }

    /// The connection live broker `broker_addr` last registered on.
    pub fn live_connection(&self, broker_addr: &str) -> Option<u64> {
        self.live.get(broker_addr).map(|live| live.connection_id)
    }

    /// Whether a live broker registered on connection `connection_id` last.
    pub fn connection_in_use(&self, connection_id: u64) -> bool {
        self.live
            .values()
            .any(|live| live.connection_id == connection_id)
    }

    /// Drops every broker silent for longer than its limit (its own, else `default_expire_ms`).
    /// Removes brokers silent for longer than their limit; returns `(address, connection id)` of each.
    pub fn expire(&mut self, now_ms: u64, default_expire_ms: u64) -> Vec<(String, u64)> {
        let gone: Vec<(String, u64)> = self
            .live
            .iter()
            .filter(|(_, live)| {
                let limit = live.expire_after_ms.unwrap_or(default_expire_ms);
                now_ms.saturating_sub(live.last_update_ms) > limit
            })
            .map(|(addr, live)| (addr.clone(), live.connection_id))
            .collect();
        for (addr, _) in &gone {
            self.remove_broker_addr(addr);
        }
        gone
    }

    /// Removes one broker address everywhere; groups left without an address go, with their
    /// cluster membership and queue data.
    fn remove_broker_addr(&mut self, broker_addr: &str) {
        self.live.remove(broker_addr);
        self.filter_servers.remove(broker_addr);
        let mut emptied = Vec::new();
        for (name, group) in &mut self.brokers {
            group.broker_addrs.retain(|_, addr| addr != broker_addr);
            if group.broker_addrs.is_empty() {
                emptied.push(name.clone());
            }
        }
        for name in &emptied {
            self.brokers.remove(name);
            for names in self.clusters.values_mut() {
                names.remove(name);
            }
            self.remove_queues_of(name);
        }
        self.clusters.retain(|_, names| !names.is_empty());
    }

    fn remove_queues_of(&mut self, broker_name: &str) {
        for queues in self.topic_queues.values_mut() {
            queues.remove(broker_name);
        }
        self.topic_queues.retain(|_, queues| !queues.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::TopicConfig;

    fn topics(names: &[(&str, i32)], counter: i64) -> TopicConfigSerializeWrapper {
        let mut wrapper = TopicConfigSerializeWrapper::default();
        for (name, queues) in names {
            wrapper
                .topic_config_table
                .insert((*name).to_owned(), TopicConfig::new(*name, *queues));
        }
        wrapper.data_version.counter = counter;
        wrapper
    }

    fn reg<'a>(
        name: &'a str,
        addr: &'a str,
        id: i64,
        ha: &'a str,
        topics: &'a TopicConfigSerializeWrapper,
        conn: u64,
    ) -> Registration<'a> {
        Registration {
            cluster_name: "DefaultCluster",
            broker_name: name,
            broker_addr: addr,
            broker_id: id,
            ha_server_addr: ha,
            topics,
            filter_server_list: &[],
            connection_id: conn,
            expire_after_ms: None,
        }
    }

    #[test]
    fn master_registration_creates_routes_and_slave_learns_master() {
        let mut table = RouteTable::new();
        let master_topics = topics(&[("T1", 4), ("T2", 8)], 1);
        let out = table.register(
            &reg(
                "broker-a",
                "10.0.0.1:10911",
                0,
                "10.0.0.1:10912",
                &master_topics,
                1,
            ),
            0,
        );
        assert!(out.new_broker);
        assert_eq!(out.master_addr, None);

        let slave_topics = topics(&[("ONLY_ON_SLAVE", 2)], 1);
        let out = table.register(
            &reg(
                "broker-a",
                "10.0.0.2:10911",
                1,
                "10.0.0.2:10912",
                &slave_topics,
                2,
            ),
            0,
        );
        assert_eq!(out.master_addr.as_deref(), Some("10.0.0.1:10911"));
        assert_eq!(out.ha_server_addr.as_deref(), Some("10.0.0.1:10912"));
        assert!(
            table.route("ONLY_ON_SLAVE").is_none(),
            "a slave must not add queue data"
        );

        let route = table.route("T2").expect("route");
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].write_queue_nums, 8);
        assert_eq!(route.broker_datas[0].broker_addrs.len(), 2);
        assert_eq!(table.topic_list().topic_list.len(), 2);
    }

    #[test]
    fn unchanged_data_version_keeps_queue_data_and_changed_one_updates_it() {
        let mut table = RouteTable::new();
        let v1 = topics(&[("T", 4)], 1);
        table.register(&reg("b", "a:1", 0, "a:2", &v1, 1), 0);
        // Same version, different content: ignored, like Java (the version says nothing changed).
        let same = topics(&[("T", 16)], 1);
        table.register(&reg("b", "a:1", 0, "a:2", &same, 1), 10);
        assert_eq!(
            table.route("T").map(|r| r.queue_datas[0].read_queue_nums),
            Some(4)
        );
        let v2 = topics(&[("T", 16)], 2);
        table.register(&reg("b", "a:1", 0, "a:2", &v2, 1), 20);
        assert_eq!(
            table.route("T").map(|r| r.queue_datas[0].read_queue_nums),
            Some(16)
        );
    }

    fn with_state_version(counter: i64, state_version: i64) -> TopicConfigSerializeWrapper {
        let mut wrapper = topics(&[("T", 4)], counter);
        wrapper.data_version.state_version = state_version;
        wrapper
    }

    fn master_of(table: &RouteTable, broker_name: &str) -> Option<String> {
        table
            .cluster_info()
            .broker_addr_table
            .get(broker_name)
            .and_then(|group| group.broker_addrs.get(&MASTER_ID).cloned())
    }

    #[test]
    fn a_lower_state_version_does_not_replace_the_master() {
        let mut table = RouteTable::new();
        // b1 master at epoch 2, b2 its slave (controller brokerId 2).
        let old_master = with_state_version(5, 2);
        table.register(&reg("g", "b1:1", 0, "b1:2", &old_master, 1), 0);
        let slave = with_state_version(5, 2);
        table.register(&reg("g", "b2:1", 2, "b2:2", &slave, 2), 0);
        // b2 elected at epoch 3 takes brokerId 0 (its id-2 entry goes).
        let new_master = with_state_version(6, 3);
        let out = table.register(&reg("g", "b2:1", 0, "b2:2", &new_master, 2), 10);
        assert_eq!(out.conflict, None);
        assert_eq!(master_of(&table, "g").as_deref(), Some("b2:1"));
        // b1, deposed but not told yet, registers as brokerId 0 at epoch 2: ignored, forgotten.
        let out = table.register(&reg("g", "b1:1", 0, "b1:2", &old_master, 1), 20);
        assert_eq!(out.conflict, Some(("b2:1".to_owned(), 3)));
        assert_eq!(out.master_addr, None);
        assert_eq!(master_of(&table, "g").as_deref(), Some("b2:1"));
        assert!(table.live_broker("b1:1").is_none());
        let group = table.cluster_info().broker_addr_table["g"].clone();
        assert_eq!(group.broker_addrs.len(), 1, "{group:?}");
        assert_eq!(table.data_version("b2:1"), Some(new_master.data_version));
        // Once it learnt epoch 3 it registers as a slave and is told its master.
        let follower = with_state_version(6, 3);
        let out = table.register(&reg("g", "b1:1", 1, "b1:2", &follower, 1), 30);
        assert_eq!(out.conflict, None);
        assert_eq!(out.master_addr.as_deref(), Some("b2:1"));
        assert_eq!(master_of(&table, "g").as_deref(), Some("b2:1"));
    }

    #[test]
    fn an_equal_or_higher_state_version_replaces_the_holder() {
        let mut table = RouteTable::new();
        let epoch3 = with_state_version(1, 3);
        table.register(&reg("g", "b1:1", 0, "b1:2", &epoch3, 1), 0);
        let same = with_state_version(1, 3);
        let out = table.register(&reg("g", "b2:1", 0, "b2:2", &same, 2), 10);
        assert_eq!(out.conflict, None, "an equal stateVersion takes the slot");
        assert_eq!(master_of(&table, "g").as_deref(), Some("b2:1"));
        let higher = with_state_version(1, 4);
        let out = table.register(&reg("g", "b3:1", 0, "b3:2", &higher, 3), 20);
        assert_eq!(out.conflict, None);
        assert_eq!(master_of(&table, "g").as_deref(), Some("b3:1"));
        // The holder re-registering itself at a lower stateVersion is not a conflict.
        let lower = with_state_version(2, 1);
        let out = table.register(&reg("g", "b3:1", 0, "b3:2", &lower, 3), 30);
        assert_eq!(out.conflict, None);
        assert_eq!(master_of(&table, "g").as_deref(), Some("b3:1"));
    }

    #[test]
    fn classic_mode_restart_on_a_new_address_takes_the_slot() {
        let mut table = RouteTable::new();
        // stateVersion 0 throughout (no controllers), as Apache's classic brokers send it.
        let before = topics(&[("T", 4)], 9);
        table.register(&reg("g", "old:1", 0, "old:2", &before, 1), 0);
        let fresh = topics(&[("T", 8)], 1);
        let out = table.register(&reg("g", "new:1", 0, "new:2", &fresh, 2), 10);
        assert_eq!(out.conflict, None);
        assert_eq!(master_of(&table, "g").as_deref(), Some("new:1"));
        assert_eq!(
            table.route("T").map(|r| r.queue_datas[0].read_queue_nums),
            Some(8)
        );
        // A holder that is no longer live does not block a lower stateVersion either.
        let epoch5 = with_state_version(1, 5);
        table.register(&reg("h", "x:1", 0, "x:2", &epoch5, 3), 0);
        assert_eq!(table.expire(1000, 100).len(), 3);
        let zero = topics(&[("T", 4)], 1);
        let out = table.register(&reg("h", "y:1", 0, "y:2", &zero, 4), 1000);
        assert_eq!(out.conflict, None);
        assert_eq!(master_of(&table, "h").as_deref(), Some("y:1"));
    }

    #[test]
    fn write_perm_is_wiped_and_added_per_broker_name() {
        let mut table = RouteTable::new();
        let a = topics(&[("T1", 4), ("T2", 4)], 1);
        let b = topics(&[("T1", 4)], 1);
        table.register(&reg("broker-a", "a:1", 0, "a:2", &a, 1), 0);
        table.register(&reg("broker-b", "b:1", 0, "b:2", &b, 2), 0);
        let perm_of = |table: &RouteTable, topic: &str, broker: &str| {
            table.route(topic).and_then(|r| {
                r.queue_datas
                    .iter()
                    .find(|q| q.broker_name == broker)
                    .map(|q| q.perm)
            })
        };
        assert_eq!(perm_of(&table, "T1", "broker-a"), Some(6));
        assert_eq!(table.change_write_perm("broker-a", true), 2);
        assert_eq!(perm_of(&table, "T1", "broker-a"), Some(4));
        assert_eq!(perm_of(&table, "T2", "broker-a"), Some(4));
        assert_eq!(perm_of(&table, "T1", "broker-b"), Some(6));
        assert_eq!(table.change_write_perm("nobody", true), 0);
        // An unchanged registration keeps the wiped perm (Apache's behaviour too).
        table.register(&reg("broker-a", "a:1", 0, "a:2", &a, 1), 10);
        assert_eq!(perm_of(&table, "T1", "broker-a"), Some(4));
        assert_eq!(table.change_write_perm("broker-a", false), 2);
        assert_eq!(perm_of(&table, "T2", "broker-a"), Some(6));
    }

    #[test]
    fn write_perm_targets_are_the_shard_brokers_of_one_process() {
        let mut table = RouteTable::new();
        let t = topics(&[("T", 4)], 1);
        // Process broker-a (connection 1): two shard-brokers; its slave on connection 3.
        table.register(&reg("broker-a-0", "h:10911", 0, "h:10912", &t, 1), 0);
        table.register(&reg("broker-a-1", "h:10915", 0, "h:10912", &t, 1), 0);
        table.register(&reg("broker-a-0", "s:10911", 1, "s:10912", &t, 3), 0);
        // Another process whose name starts the same: broker-ab (connection 2).
        table.register(&reg("broker-ab-0", "h:20911", 0, "h:20912", &t, 2), 0);
        table.register(&reg("broker-ab-1", "h:20915", 0, "h:20912", &t, 2), 0);
        let a = table.write_perm_targets("broker-a").unwrap();
        assert_eq!(a, vec!["broker-a-0".to_owned(), "broker-a-1".to_owned()]);
        assert_eq!(
            table.write_perm_targets("broker-a-1").unwrap(),
            vec!["broker-a-1".to_owned()]
        );
        assert!(table.write_perm_targets("broker").unwrap().is_empty());
        assert!(table.write_perm_targets("broker-").unwrap().is_empty());
        assert!(table.write_perm_targets("nobody").unwrap().is_empty());
        // A single-shard process named broker-a-2 makes "broker-a" ambiguous.
        table.register(&reg("broker-a-2", "k:10911", 0, "k:10912", &t, 4), 0);
        let err = table.write_perm_targets("broker-a").unwrap_err();
        assert!(
            err.contains("broker-a-0") && err.contains("broker-a-2"),
            "{err}"
        );
        // A process's shard-broker names with a further dash are not its shard ids.
        table.register(&reg("broker-c-0-0", "m:10911", 0, "m:10912", &t, 5), 0);
        assert!(table.write_perm_targets("broker-c").unwrap().is_empty());
    }

    #[test]
    fn closing_a_connection_or_silence_removes_the_broker() {
        let mut table = RouteTable::new();
        let t = topics(&[("T", 4)], 1);
        table.register(&reg("a", "a:1", 0, "a:2", &t, 7), 0);
        table.register(&reg("b", "b:1", 0, "b:2", &t, 8), 0);
        assert_eq!(table.route("T").map(|r| r.queue_datas.len()), Some(2));

        assert_eq!(table.remove_connection(7), vec!["a:1".to_owned()]);
        let route = table.route("T").expect("b still serves T");
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].broker_name, "b");
        assert!(!table.cluster_info().broker_addr_table.contains_key("a"));

        assert!(table.expire(100, 100).is_empty(), "not silent long enough");
        assert_eq!(
            table
                .expire(101, 100)
                .into_iter()
                .map(|(a, _)| a)
                .collect::<Vec<_>>(),
            vec!["b:1".to_owned()]
        );
        assert!(table.route("T").is_none());
        assert!(table.cluster_info().cluster_addr_table.is_empty());
    }

    #[test]
    fn a_stale_connection_does_not_remove_a_reregistered_broker() {
        let mut table = RouteTable::new();
        let t = topics(&[("T", 4)], 1);
        table.register(&reg("a", "a:1", 0, "a:2", &t, 1), 0);
        table.register(&reg("a", "a:1", 0, "a:2", &t, 2), 5);
        assert!(table.remove_connection(1).is_empty());
        assert!(table.route("T").is_some());
    }

    #[test]
    fn unregister_and_delete_topic() {
        let mut table = RouteTable::new();
        let t = topics(&[("T", 4), ("U", 1)], 1);
        table.register(&reg("a", "a:1", 0, "a:2", &t, 1), 0);
        assert!(table.delete_topic("U", None));
        assert!(table.route("U").is_none());
        assert!(!table.delete_topic("T", Some("OtherCluster")));
        assert_eq!(
            table.topics_by_cluster("DefaultCluster").topic_list.len(),
            1
        );
        assert!(table.unregister("DefaultCluster", "a", "a:1", 0));
        assert!(table.route("T").is_none());
        assert!(table.cluster_info().broker_addr_table.is_empty());
    }
}

//! One shard's state: its store, its read-only copies of the topic table, the subscription groups and
//! the consumers' subscriptions, the consumer offsets of the queues it owns, parked pulls, its
//! connections and the calls to their clients, and (shard 0) the control role.

pub(crate) mod events;
pub(crate) mod latch;
pub(crate) mod lifecycle;
pub(crate) mod mesh;
pub(crate) mod ownership;
pub(crate) mod put;
pub(crate) mod requests;
pub(crate) mod stats;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use protocol::body::SubscriptionData;
use protocol::RemotingCommand;
use remoting::ResponseSink;
use storage::MessageStore;

use crate::config::{BrokerConfig, ShardBroker};
use crate::feature::long_poll::PullWaiters;
use crate::feature::pop::PopState;
use crate::feature::pull_filter::{Registered, SqlCache};
use crate::net::client_calls::ClientCalls;
use crate::shard::latch::Latch;
use crate::shard::mesh::Mesh;
use crate::shard::ownership::owner_shard;
use crate::shard::stats::{ShardCounters, ShardStats};
use crate::state::consumer_offsets::ConsumerOffsets;
use crate::state::control::Control;
use crate::state::subscription_groups::SubscriptionGroupTable;
use crate::state::topics::TopicTable;

pub struct Shard {
    pub id: usize,
    pub shards: usize,
    pub cfg: Rc<BrokerConfig>,
    /// The broker this shard is to clients: its own shard-broker (`shardRouting = direct`), or the
    /// process's one broker.
    pub broker: ShardBroker,
    /// Whether this shard is a broker of its own: it owns every queue a request to it names.
    pub is_broker: bool,
    /// `brokerIP1:` this broker's listen port, written into records and offsetMsgIds.
    pub store_host: SocketAddr,
    pub store: MessageStore,
    pub mesh: Rc<Mesh<Shard>>,
    /// Shard 0: the master table; others: a copy kept current by broadcasts.
    pub topics: RefCell<TopicTable>,
    /// Shard 0: the master subscription groups; others: a copy kept current by broadcasts, so a pull
    /// on a queue's owner reads its group's settings without a hop.
    pub groups: RefCell<SubscriptionGroupTable>,
    /// group -> topic -> filter, from consumers' heartbeats (broadcast by shard 0).
    pub subscriptions: RefCell<HashMap<String, HashMap<String, Registered>>>,
    /// SQL92 filters compiled on this shard, for registered subscriptions and for pulls.
    pub sql_filters: RefCell<SqlCache>,
    /// Groups whose online consumers consume by broadcast (from heartbeats, broadcast by shard 0).
    pub broadcasting: RefCell<HashSet<String>>,
    pub offsets: RefCell<ConsumerOffsets>,
    pub waiters: PullWaiters,
    /// POP check points, ordered batches and pop locks of the queues this shard owns.
    pub pop: PopState,
    /// Connections on this shard whose clients registered (heartbeat), for server-initiated commands.
    pub connections: RefCell<HashMap<u64, ResponseSink>>,
    /// Requests sent to those clients that wait for the client's answer.
    pub client_calls: ClientCalls,
    /// Only on shard 0.
    pub control: Option<Control>,
    pub counters: ShardCounters,
    /// Replication state of this shard (`ha_role`).
    pub ha: crate::role::ha_state::HaShard,
    /// Delay-level delivery state (issue 7).
    pub schedule: crate::feature::schedule::state::Schedule,
    /// Requests of this shard's connections being handled.
    pub in_flight: Cell<usize>,
    pub shutting_down: Cell<bool>,
    /// Fired when listeners must stop accepting.
    pub stop_accepting: Latch,
    /// Fired when the executor may end.
    pub exit: Latch,
    pub boot_ms: i64,
    next_opaque: Cell<i32>,
    rng: Cell<u64>,
    offsets_persist: glommio::sync::Semaphore,
}

pub struct ShardParts {
    pub id: usize,
    pub shards: usize,
    pub cfg: Rc<BrokerConfig>,
    pub broker: ShardBroker,
    pub store_host: SocketAddr,
    pub store: MessageStore,
    pub mesh: Rc<Mesh<Shard>>,
    pub topics: TopicTable,
    pub groups: SubscriptionGroupTable,
    pub offsets: ConsumerOffsets,
    pub control: Option<Control>,
}

impl Shard {
    pub fn new(p: ShardParts) -> Shard {
        let boot_ms = crate::state::topics::now_ms();
        Shard {
            id: p.id,
            shards: p.shards,
            is_broker: p.cfg.shards_are_brokers(p.shards),
            cfg: p.cfg,
            broker: p.broker,
            store_host: p.store_host,
            store: p.store,
            mesh: p.mesh,
            topics: RefCell::new(p.topics),
            groups: RefCell::new(p.groups),
            subscriptions: RefCell::new(HashMap::new()),
            broadcasting: RefCell::new(HashSet::new()),
            sql_filters: RefCell::new(SqlCache::default()),
            offsets: RefCell::new(p.offsets),
            waiters: PullWaiters::default(),
            pop: PopState::default(),
            connections: RefCell::new(HashMap::new()),
            client_calls: ClientCalls::default(),
            control: p.control,
            counters: ShardCounters::default(),
            ha: Default::default(),
            schedule: crate::feature::schedule::state::Schedule::default(),
            in_flight: Cell::new(0),
            shutting_down: Cell::new(false),
            stop_accepting: Latch::default(),
            exit: Latch::default(),
            boot_ms,
            next_opaque: Cell::new(1),
            offsets_persist: glommio::sync::Semaphore::new(1),
            rng: Cell::new((boot_ms as u64) ^ ((p.id as u64 + 1) << 32) | 1),
        }
    }

    /// The role this broker plays now: the configured one, or the controllers' choice in controller
    /// mode.
    pub fn role(&self) -> crate::config::BrokerRole {
        self.ha
            .role
            .get()
            .map_or(self.cfg.broker_role, |(role, _)| role)
    }

    /// The brokerId this broker registers with now (0 for a master).
    pub fn broker_id(&self) -> u64 {
        self.ha.role.get().map_or(self.cfg.broker_id, |(_, id)| id)
    }

    /// The config with the role and brokerId in force (what registration and GET_BROKER_CONFIG use).
    pub fn effective_cfg(&self) -> BrokerConfig {
        let mut cfg = crate::config::live::effective(&self.cfg);
        cfg.broker_role = self.role();
        cfg.broker_id = self.broker_id();
        cfg
    }

    /// The shard owning a queue of the broker this shard is: itself when it is a broker of its own.
    pub fn owner_of(&self, topic: &str, queue_id: i32) -> usize {
        self.queue_owner(self.id, topic, queue_id)
    }

    /// The shard owning a queue of the broker a client reached through shard `receiver` (for work the
    /// control shard does on behalf of another shard's client).
    pub fn queue_owner(&self, receiver: usize, topic: &str, queue_id: i32) -> usize {
        if self.is_broker {
            return receiver;
        }
        owner_shard(topic, queue_id, self.shards)
    }

    /// The brokerName a client reached through shard `receiver` knows.
    pub fn broker_name_of(&self, receiver: usize) -> String {
        self.cfg
            .shard_broker(receiver, self.shards)
            .map_or_else(|| self.cfg.broker_name.clone(), |b| b.broker_name)
    }

    /// A fresh opaque for a server-initiated request.
    pub fn next_opaque(&self) -> i32 {
        let v = self.next_opaque.get();
        self.next_opaque.set(v.wrapping_add(1).max(1));
        v
    }

    /// A cheap pseudo-random number (xorshift), for queue selection.
    pub fn random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// The filter a consumer group registered for a topic, if any.
    pub fn registered_filter(&self, group: &str, topic: &str) -> Option<Registered> {
        self.subscriptions
            .borrow()
            .get(group)
            .and_then(|t| t.get(topic))
            .cloned()
    }

    /// Applies a group's subscription broadcast.
    pub fn set_group_subscriptions(&self, group: String, subs: Vec<SubscriptionData>) {
        let mut all = self.subscriptions.borrow_mut();
        if subs.is_empty() {
            all.remove(&group);
        } else {
            let mut cache = self.sql_filters.borrow_mut();
            let map = subs
                .iter()
                .map(|s| (s.topic.clone(), cache.registered(&group, s)))
                .collect();
            all.insert(group, map);
        }
    }

    /// Records whether a group's online consumers consume by broadcast.
    pub fn set_group_broadcasting(&self, group: &str, broadcasting: bool) {
        let mut all = self.broadcasting.borrow_mut();
        if broadcasting {
            all.insert(group.to_owned());
        } else {
            all.remove(group);
        }
    }

    /// Sends a request to the client of one of this shard's registered connections and waits for the
    /// client's answer (RocketMQ's `Broker2Client.callClient`).
    pub async fn call_client(
        &self,
        conn_id: u64,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        let sink = self.connections.borrow().get(&conn_id).cloned();
        let Some(sink) = sink else {
            return Err(format!("connection {conn_id} is gone"));
        };
        cmd.opaque = self.next_opaque();
        self.client_calls.call(conn_id, &sink, cmd, timeout).await
    }

    /// Sends a server-initiated command to one of this shard's registered connections.
    pub fn notify_connection(&self, conn_id: u64, mut cmd: RemotingCommand) {
        let sink = self.connections.borrow().get(&conn_id).cloned();
        if let Some(sink) = sink {
            cmd.opaque = self.next_opaque();
            if sink.try_send(cmd).is_err() {
                tracing::debug!(
                    "shard {}: connection {conn_id} gone or full; notification dropped",
                    self.id
                );
            }
        }
    }

    pub fn stats(&self) -> ShardStats {
        let c = &self.counters;
        ShardStats {
            shard: self.id,
            msgs_put: c.msgs_put.get(),
            bytes_put: c.bytes_put.get(),
            msgs_got: c.msgs_got.get(),
            bytes_got: c.bytes_got.get(),
            send_errors: c.send_errors.get(),
            commit_log_min_offset: self.store.min_physical_offset(),
            commit_log_max_offset: self.store.max_physical_offset(),
            commit_log_flushed_offset: self.store.flushed_physical_offset(),
            queues: self.store.queues().len(),
            store: self.store.stats(),
            read_only: self.store.read_only_reason(),
            ha: self.ha.stats(self.store.max_physical_offset()),
        }
    }

    /// Records where the POP revive log's replay starts (the revive group's offset), so it is
    /// persisted with the pop positions it matches.
    fn note_revive_offset(&self) {
        use crate::feature::pop::{revive_topic, REVIVE_GROUP, REVIVE_QUEUE};
        let topic = revive_topic(&self.cfg.broker_cluster_name);
        let end = self.store.max_offset(&topic, REVIVE_QUEUE);
        let offset = self.pop.settled_offset(end);
        let mut offsets = self.offsets.borrow_mut();
        let known = offsets.query(REVIVE_GROUP, &topic, REVIVE_QUEUE);
        // A broker that never served a pop keeps no revive offset.
        if known != Some(offset) && (known.is_some() || offset > 0) {
            offsets.commit(REVIVE_GROUP, &topic, REVIVE_QUEUE, offset);
        }
    }

    /// Persists this shard's consumer offsets if they changed.
    pub async fn persist_offsets(&self) {
        // One write at a time: two writers would share the temp file.
        let Ok(_permit) = self.offsets_persist.acquire_permit(1).await else {
            return;
        };
        self.note_revive_offset();
        let json = self.offsets.borrow_mut().take_dirty_json();
        if let Some(json) = json {
            let path = crate::state::consumer_offsets::offsets_path(
                &self.cfg.store_path_root_dir,
                self.id,
            );
            if let Err(e) = crate::state::persist::write_atomic_off_thread(path.clone(), json).await
            {
                tracing::error!("shard {}: cannot persist {}: {e}", self.id, path.display());
                self.offsets.borrow_mut().mark_dirty();
            }
        }
    }
}

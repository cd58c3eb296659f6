//! One shard's state: its store, its copies of the topic table and the subscription groups, the
//! consumer offsets of the queues it owns, its counters, its shutdown latches and (shard 0) the
//! control state. What the layers above keep per shard is in `extensions`, by type.

pub(crate) mod events;
pub(crate) mod extensions;
pub(crate) mod latch;
pub(crate) mod mesh;
pub(crate) mod ownership;
pub(crate) mod put;
pub(crate) mod requests;
pub(crate) mod stats;
pub(crate) mod target;

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;

use storage::MessageStore;

use crate::config::{BrokerConfig, BrokerRole, ShardBroker};
use crate::shard::extensions::Extensions;
use crate::shard::latch::Latch;
use crate::shard::mesh::Mesh;
use crate::shard::ownership::owner_shard;
use crate::shard::stats::{ShardCounters, ShardStats};
use crate::state::auth_metadata::AuthMetadata;
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
    pub offsets: RefCell<ConsumerOffsets>,
    /// ACL 2.0 users and ACLs. Shard 0: the master (`config/auth.json`); others: a copy kept current
    /// by broadcasts, so every shard authenticates and authorizes its own connections' requests.
    pub auth: RefCell<AuthMetadata>,
    /// Only on shard 0.
    pub control: Option<Control>,
    pub counters: ShardCounters,
    /// The role and brokerId in force when the controllers chose them (controller mode); `None`: the
    /// configured ones.
    pub chosen_role: Cell<Option<(BrokerRole, u64)>>,
    /// What the layers above keep per shard (POP, long polling, replication, ...).
    pub extensions: Extensions,
    /// Requests of this shard's connections being handled.
    pub in_flight: Cell<usize>,
    pub shutting_down: Cell<bool>,
    /// Fired when listeners must stop accepting.
    pub stop_accepting: Latch,
    /// Fired when the executor may end.
    pub exit: Latch,
    pub boot_ms: i64,
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
    pub auth: AuthMetadata,
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
            offsets: RefCell::new(p.offsets),
            auth: RefCell::new(p.auth),
            control: p.control,
            counters: ShardCounters::default(),
            chosen_role: Cell::new(None),
            extensions: Extensions::default(),
            in_flight: Cell::new(0),
            shutting_down: Cell::new(false),
            stop_accepting: Latch::default(),
            exit: Latch::default(),
            boot_ms,
            offsets_persist: glommio::sync::Semaphore::new(1),
            rng: Cell::new((boot_ms as u64) ^ ((p.id as u64 + 1) << 32) | 1),
        }
    }

    /// The role this broker plays now: the configured one, or the controllers' choice in controller
    /// mode.
    pub fn role(&self) -> BrokerRole {
        self.chosen_role
            .get()
            .map_or(self.cfg.broker_role, |(role, _)| role)
    }

    /// The brokerId this broker registers with now (0 for a master).
    pub fn broker_id(&self) -> u64 {
        self.chosen_role
            .get()
            .map_or(self.cfg.broker_id, |(_, id)| id)
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

    /// A cheap pseudo-random number (xorshift), for queue selection.
    pub fn random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
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
            // Filled in by replication (`replication::ha_state::figures`), which owns those figures.
            ha: Default::default(),
            requests_sent: self.mesh.sent(),
        }
    }

    /// Persists this shard's consumer offsets if they changed.
    pub async fn persist_offsets(&self) {
        // One write at a time: two writers would share the temp file.
        let Ok(_permit) = self.offsets_persist.acquire_permit(1).await else {
            return;
        };
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

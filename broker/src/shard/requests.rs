//! Typed requests from one shard to another. `shard.owner(topic, queue)`, `shard.on(n)` and
//! `shard.control_shard()` name the target; each method sends one closure that calls one named
//! function on the target (over the mesh, or inline when the target is this shard) and returns that
//! function's typed answer, so "go to definition" leads from a processor into the target's code.
//! Broadcasts from the control shard are in `events`; the shutdown phases in `lifecycle`.

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use protocol::body::TopicConfig;
use protocol::message::record::MessageRecord;
use protocol::RemotingCommand;

use crate::shard::mesh::MeshError;
use crate::shard::put::{PutError, PutOutcome};
use crate::shard::stats::ShardStats;
use crate::shard::Shard;
use crate::state::clients::ConnRef;
use crate::state::subscription_groups::SubscriptionGroupConfig;

/// The control shard: the master topic table, the client registry, name-server registration.
pub const CONTROL_SHARD: usize = 0;

/// Another shard (or this one) as the target of requests.
#[derive(Clone, Copy)]
pub struct ShardRef<'a> {
    from: &'a Shard,
    to: usize,
}

impl Shard {
    /// Requests to shard `to`.
    pub fn on(&self, to: usize) -> ShardRef<'_> {
        ShardRef { from: self, to }
    }

    /// Requests to the owner of a queue.
    pub fn owner(&self, topic: &str, queue_id: i32) -> ShardRef<'_> {
        self.on(self.owner_of(topic, queue_id))
    }

    /// Every shard, this one included, in id order.
    pub fn every_shard(&self) -> impl Iterator<Item = ShardRef<'_>> {
        (0..self.shards).map(|to| self.on(to))
    }

    /// The shards that make up the broker a client reached through shard `receiver`: that shard
    /// alone when shards are brokers of their own, else all of them. Statistics, lookups and offset
    /// tables that a client asks of "the broker" gather over these.
    pub fn broker_shards(&self, receiver: usize) -> impl Iterator<Item = ShardRef<'_>> {
        let ids = if self.is_broker {
            receiver..receiver + 1
        } else {
            0..self.shards
        };
        ids.map(|to| self.on(to))
    }

    /// Requests to the control shard.
    pub fn control_shard(&self) -> ShardRef<'_> {
        self.on(CONTROL_SHARD)
    }
}

impl<'a> ShardRef<'a> {
    /// The target's shard id.
    pub fn id(self) -> usize {
        self.to
    }

    /// Runs `job` on the target and answers its result.
    pub async fn run<T, F, Fut>(self, job: F) -> Result<T, MeshError>
    where
        T: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = T> + 'static,
    {
        self.from.mesh.call(self.to, job).await
    }

    /// Runs `job` on the target without waiting for it to finish there.
    pub async fn tell<F, Fut>(self, job: F)
    where
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        self.from.mesh.tell(self.to, job).await
    }

    /// Stores records of one queue in the owner's store (validated by the caller).
    pub async fn put(self, records: Vec<MessageRecord>) -> Result<PutOutcome, PutError> {
        self.run(move |s| async move { crate::shard::put::put_here(&s, records).await })
            .await?
    }

    /// The stored record at a physical offset of the target's CommitLog.
    pub async fn read_record(self, physical_offset: i64) -> Result<Option<Bytes>, String> {
        self.run(move |s| async move {
            s.store
                .read_record(physical_offset)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Messages of `topic` with `key` in the target's index.
    pub async fn query_by_key(
        self,
        topic: String,
        key: String,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Bytes>, String> {
        self.run(move |s| async move {
            s.store
                .query_by_key(&topic, &key, max, begin_ms, end_ms)
                .await
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// The target's counters and store figures.
    pub async fn stats(self) -> Result<ShardStats, MeshError> {
        self.run(|s| async move { s.stats() }).await
    }

    /// The consumer offsets the target holds: (topic@group key, queue id, offset).
    pub async fn consumer_offsets(self) -> Result<Vec<(String, i32, i64)>, MeshError> {
        self.run(|s| async move { s.offsets.borrow().entries() })
            .await
    }

    /// Drops a deleted topic's data and offsets on the target.
    pub async fn delete_topic(self, topic: String) -> Result<(), MeshError> {
        self.run(move |s| async move {
            s.store.delete_topic(&topic).await;
            s.offsets.borrow_mut().remove_topic(&topic);
        })
        .await
    }

    /// Control shard: creates a topic unless it exists; answers the config in force.
    pub async fn create_topic(self, tc: TopicConfig) -> Result<TopicConfig, String> {
        self.run(move |s| async move {
            if s.control.is_none() {
                return Err(format!("shard {} is not the control shard", s.id));
            }
            Ok(crate::role::control::create_topic(&s, tc).await)
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Control shard: a subscription group's settings, created with defaults when the broker may
    /// (`autoCreateSubscriptionGroup`); `None` when it does not exist.
    pub async fn ensure_group(
        self,
        group: String,
    ) -> Result<Option<SubscriptionGroupConfig>, MeshError> {
        self.run(move |s| async move { crate::role::control::ensure_group(&s, &group).await })
            .await
    }

    /// Control shard: the connection a producer client (by client id) sent its latest heartbeat on.
    pub async fn producer_conn(self, client_id: String) -> Result<Option<ConnRef>, MeshError> {
        self.run(move |s| async move {
            s.control
                .as_ref()
                .and_then(|ctl| ctl.clients.borrow().producer_conn_by_client_id(&client_id))
        })
        .await
    }

    /// Control shard: a connection of shard `shard` that had registered clients closed.
    pub async fn connection_closed(self, shard: usize, conn_id: u64) {
        self.tell(move |s| async move {
            crate::role::control::connection_closed(&s, shard, conn_id).await
        })
        .await
    }

    /// Sends a request to the client of one of the target's connections and answers the client's
    /// response (or why there is none within `timeout`).
    pub async fn call_client(
        self,
        conn_id: u64,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        self.run(move |s| async move { s.call_client(conn_id, cmd, timeout).await })
            .await
            .map_err(|e| e.to_string())?
    }

    /// Sends a server-initiated command to one of the target's connections.
    pub async fn notify(self, conn_id: u64, cmd: RemotingCommand) {
        self.tell(move |s| async move { s.notify_connection(conn_id, cmd) })
            .await
    }
}

//! Naming the shard a request goes to: `shard.on(n)`, `shard.owner(topic, queue)`,
//! `shard.control_shard()`, and the sets of shards a broker-wide question visits. What can be asked of
//! a target is listed in `requests`.

use crate::shard::Shard;

/// The control shard: the master topic table, the client registry, name-server registration.
pub const CONTROL_SHARD: usize = 0;

/// Another shard (or this one) as the target of requests.
#[derive(Clone, Copy)]
pub struct ShardRef<'a> {
    pub(super) from: &'a Shard,
    pub(super) to: usize,
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

    /// Every shard but this one.
    pub fn other_shards(&self) -> impl Iterator<Item = ShardRef<'_>> {
        (0..self.shards)
            .filter(|to| *to != self.id)
            .map(|to| self.on(to))
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

    /// Whether this is the control shard.
    pub fn is_control(&self) -> bool {
        self.id == CONTROL_SHARD
    }
}

impl ShardRef<'_> {
    /// The target's shard id.
    pub fn id(self) -> usize {
        self.to
    }
}

//! Broker metadata: the topic table, consumer offsets, subscription groups, the client registry,
//! orderly consumers' queue locks, ACL 2.0's users and ACLs, and the atomic file writes that persist
//! them.

pub(crate) mod auth_metadata;
pub(crate) mod clients;
pub(crate) mod consumer_offsets;
pub(crate) mod control;
pub(crate) mod persist;
pub(crate) mod rebalance_locks;
pub(crate) mod subscription_groups;
pub(crate) mod topics;

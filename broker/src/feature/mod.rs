//! Features beside the plain send/pull path: delayed messages (`schedule`), timer messages (`timer`),
//! transactional messages
//! (`transaction`), plain ACL (`acl`), ACL 2.0 (`acl2`), Prometheus metrics (`metrics`), the admin statistics of
//! RocketMQ's tools (`broker_stats`), long polling of pulls
//! (`long_poll`), and the filters of pulls: by tag (`tag_filter`), by SQL92 over properties
//! (`sql_filter`), and which of them a subscription uses (`pull_filter`); compaction topics and
//! `reserve.time` as the store's topic policies (`topic_policy`).

pub(crate) mod acl;
pub(crate) mod acl2;
pub(crate) mod broker_stats;
pub(crate) mod long_poll;
pub(crate) mod metrics;
pub(crate) mod pop;
pub(crate) mod pull_filter;
pub(crate) mod schedule;
pub(crate) mod sql_filter;
pub(crate) mod tag_filter;
pub(crate) mod timer;
pub(crate) mod topic_policy;
pub(crate) mod transaction;

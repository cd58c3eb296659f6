//! Features beside the plain send/pull path: delayed messages (`schedule`), timer messages (`timer`),
//! transactional messages
//! (`transaction`), plain ACL (`acl`), Prometheus metrics (`metrics`), long polling of pulls
//! (`long_poll`) and tag filtering (`tag_filter`).

pub(crate) mod acl;
pub(crate) mod long_poll;
pub(crate) mod metrics;
pub(crate) mod schedule;
pub(crate) mod tag_filter;
pub(crate) mod timer;
pub(crate) mod transaction;

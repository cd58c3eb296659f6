//! What the request processors and the features share: building replies (`reply`), a subscription
//! group's settings as pulls, pops and send-backs meet them (`group_settings`), and creating a topic on
//! its first use (`topic_create`).

// Early returns carry the error response itself; it is built once per request, so its size is moot.
#![allow(clippy::result_large_err)]

pub(crate) mod group_settings;
pub(crate) mod reply;
pub(crate) mod topic_create;

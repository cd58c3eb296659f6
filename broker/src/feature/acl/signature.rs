//! Request signatures: RocketMQ's AclUtils rule lives in `protocol::signature`, shared with the
//! clients that sign (the console, `client::acl`).

#[cfg(test)]
pub use protocol::signature::sign;
pub use protocol::signature::{signed_content, verify, ACCESS_KEY, SIGNATURE};

//! What ACL 2.0 keeps between requests: its settings and the caches of users and ACLs.

use std::sync::atomic::AtomicUsize;

use auth::{Acl, User};

use super::cache::Cache;
use super::config::AuthConfig;

pub struct Acl2 {
    pub cfg: AuthConfig,
    pub users: Cache<User>,
    pub acls: Cache<Acl>,
    /// Where the next broker lookup starts.
    pub next_broker: AtomicUsize,
}

impl Acl2 {
    pub fn new(cfg: AuthConfig) -> Acl2 {
        Acl2 {
            users: Cache::new(cfg.user_cache),
            acls: Cache::new(cfg.acl_cache),
            cfg,
            next_broker: AtomicUsize::new(0),
        }
    }
}


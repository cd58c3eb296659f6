//! What every gRPC call shares: config, the remoting pool, routes, topics' message types, consumer groups' settings, telemetry
//! sessions, brokers' timer settings, ACL accounts and metrics. Nothing here is durable: the proxy is a stateless front.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::acl::Acl;
use crate::acl2::store::Acl2;
use crate::config::ProxyConfig;
use crate::metrics::Metrics;
use crate::remoting::group::Groups;
use crate::remoting::route::Routes;
use crate::remoting::topic_type::TopicTypes;
use crate::remoting::Pool;
use crate::session::Sessions;

pub struct Proxy {
    pub cfg: ProxyConfig,
    pub pool: Pool,
    pub routes: Routes,
    /// Topics' message types (`message.type`), for the type check and the routes' accepted types.
    pub topic_types: TopicTypes,
    pub groups: Groups,
    pub sessions: Sessions,
    pub acl: Option<Acl>,
    /// ACL 2.0: users and ACLs from the brokers (off unless configured).
    pub acl2: Acl2,
    pub metrics: Metrics,
    /// The clientID the proxy registers transactional producer groups under (HEART_BEAT).
    pub client_id: String,
    /// Broker address -> brokerName, learnt from routes; check-back requests arrive by address.
    pub broker_names: Mutex<HashMap<String, String>>,
    /// Broker address -> (timerWheelEnable, timerMaxDelaySec) as GET_BROKER_CONFIG reported it.
    pub timer_settings: Mutex<HashMap<String, (std::time::Instant, bool, u64)>>,
    /// Round-robin position for sends without a message group.
    pub next_queue: AtomicUsize,
    /// Wakes the producer registration when a session starts publishing.
    pub producers_changed: Arc<Notify>,
}

impl Proxy {
    pub fn new(cfg: ProxyConfig, pool: Pool, acl: Option<Acl>) -> Proxy {
        let routes = Routes::new(cfg.namesrv_addr.clone());
        let topic_types = TopicTypes::new(
            cfg.topic_config_cache_refresh,
            cfg.topic_config_cache_expired,
            cfg.topic_config_cache_max,
        );
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "proxy".into());
        Proxy {
            acl2: Acl2::new(cfg.auth.clone()),
            cfg,
            pool,
            routes,
            topic_types,
            groups: Groups::default(),
            sessions: Sessions::default(),
            acl,
            metrics: Metrics::default(),
            client_id: format!("{host}@proxy@{}", std::process::id()),
            broker_names: Mutex::default(),
            timer_settings: Mutex::default(),
            next_queue: AtomicUsize::new(0),
            producers_changed: Arc::default(),
        }
    }

    /// The account the proxy signs its own requests with: plain ACL's first account, else ACL 2.0's
    /// `innerClientAuthenticationCredentials`.
    pub fn own_creds(&self) -> Option<&protocol::signature::Credentials> {
        self.acl
            .as_ref()
            .and_then(|a| a.any_account())
            .or(self.acl2.cfg.inner_credentials.as_ref())
    }

    pub fn learn_broker(&self, addr: &str, name: &str) {
        let mut names = self.broker_names.lock().unwrap_or_else(|e| e.into_inner());
        // Every send passes here: no allocation when nothing changed.
        if names.get(addr).map(String::as_str) != Some(name) {
            names.insert(addr.to_string(), name.to_string());
        }
    }

    pub fn broker_name_of(&self, addr: &str) -> Option<String> {
        self.broker_names
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(addr)
            .cloned()
    }
}

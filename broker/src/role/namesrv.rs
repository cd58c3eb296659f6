//! Registration with the name servers (shard 0): REGISTER_BROKER with the topic table to every name
//! server at start, every `registerNameServerPeriod` and after topic changes; UNREGISTER_BROKER at
//! shutdown. When shards are brokers of their own, each shard-broker is registered (same topics, its
//! own brokerName and address).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use protocol::body::{RegisterBrokerBody, TopicConfigSerializeWrapper};
use protocol::header::{
    CommandHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
};
use protocol::message::record::body_crc;
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use crate::config::{BrokerConfig, ShardBroker};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a slave's master is, as a registration answer says: (haServerAddr, masterAddr).
pub type MasterAddrs = (Option<String>, Option<String>);

/// Connections to the name servers, reused between registrations (the control shard's).
pub struct Registrar {
    clients: RefCell<HashMap<String, Client>>,
    /// Per name server, the connection a failed request took out of use, still open (`invoke`).
    replaced: RefCell<HashMap<String, Client>>,
    /// Per shard-broker (shard id; 0 alone when shards are not brokers): (haServerAddr, masterAddr)
    /// of its master, from the last registration answer (slaves).
    pub masters: RefCell<BTreeMap<usize, MasterAddrs>>,
    /// A background registration is waiting to run.
    pub(crate) queued: Cell<bool>,
    /// One registration round at a time, so the newest table is sent last.
    pub(crate) round: glommio::sync::Semaphore,
}

impl Default for Registrar {
    fn default() -> Self {
        Registrar {
            clients: RefCell::new(HashMap::new()),
            replaced: RefCell::new(HashMap::new()),
            masters: RefCell::new(BTreeMap::new()),
            queued: Cell::new(false),
            round: glommio::sync::Semaphore::new(1),
        }
    }
}

/// The control shard's registrar; `None` on other shards.
pub fn registrar(shard: &Shard) -> Option<Rc<Registrar>> {
    shard.is_control().then(|| shard.extensions.get())
}

/// Unregisters every broker of this process from every name server (shutdown, control shard).
pub async fn unregister_all(shard: &Shard) {
    if let Some(registrar) = registrar(shard) {
        registrar
            .unregister_all(&shard.effective_cfg(), shard.shards)
            .await;
    }
}

fn parse_addr(addr: &str) -> Result<SocketAddr, String> {
    match addr.parse() {
        Ok(a) => Ok(a),
        Err(_) => remoting::resolve(addr).map_err(|e| e.to_string()),
    }
}

/// The registration body: the topic table with each topic's perm limited by `brokerPermission`.
pub fn register_body(cfg: &BrokerConfig, mut wrapper: TopicConfigSerializeWrapper) -> Vec<u8> {
    let broker_perm = crate::config::live::broker_permission(cfg) as i32;
    for tc in wrapper.topic_config_table.values_mut() {
        // Read/write bits follow the broker's; the inherit bit stays as configured.
        tc.perm &= broker_perm | protocol::body::perm::INHERIT;
    }
    // Java-shaped: the RocketMQ 5 mapping fields are always written (strict name servers need them).
    protocol::body::to_json(&RegisterBrokerBody::new(wrapper, Vec::new()))
}

/// The topics shard-broker `own` registers: all of them but those named after the other brokers of
/// this process (each one's own-name topic routes to it alone).
pub fn own_topics(
    wrapper: &TopicConfigSerializeWrapper,
    own: &str,
    brokers: &[(usize, ShardBroker)],
) -> TopicConfigSerializeWrapper {
    let mut mine = wrapper.clone();
    mine.topic_config_table
        .retain(|topic, _| topic == own || !brokers.iter().any(|(_, b)| &b.broker_name == topic));
    mine
}

impl Registrar {
    async fn client(&self, addr: &str) -> Result<Client, String> {
        let existing = self.clients.borrow().get(addr).cloned();
        if let Some(c) = existing.filter(|c| !c.is_closed()) {
            return Ok(c);
        }
        let sock = parse_addr(addr)?;
        let client = Client::connect(sock, CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        self.clients
            .borrow_mut()
            .insert(addr.to_owned(), client.clone());
        Ok(client)
    }

    /// Sends `cmd` to name server `addr`. A connection whose request failed or timed out is not
    /// used again, as RocketMQ's client closes it (clientCloseSocketIfTimeout defaults to true). It
    /// is closed only once a whole round got through on a newer connection (`retire_replaced`): a
    /// name server drops the brokers last registered on a connection that closes, so closing it at
    /// once would take their routes away until the next round succeeds.
    async fn invoke(
        &self,
        addr: &str,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, String> {
        let client = self.client(addr).await?;
        let result = client.invoke(cmd, timeout).await.map_err(|e| e.to_string());
        if let Err(e) = &result {
            tracing::warn!(
                "request to name server {addr} failed ({e}): its connection is replaced, and \
                 closed once a round of registrations gets through on a new one"
            );
            self.clients.borrow_mut().remove(addr);
            // One failed connection is kept open: the one before it failed a round ago.
            if let Some(older) = self.replaced.borrow_mut().insert(addr.to_owned(), client) {
                older.close();
            }
        }
        result
    }

    /// Closes the connection to `addr` that a failed request replaced: every broker of this
    /// process has registered on a newer one since.
    fn retire_replaced(&self, addr: &str) {
        if let Some(old) = self.replaced.borrow_mut().remove(addr) {
            old.close();
        }
    }

    /// The brokers this process is to clients: one per shard, or one for all.
    fn brokers(cfg: &BrokerConfig, shards: usize) -> Vec<(usize, ShardBroker)> {
        let count = if cfg.shards_are_brokers(shards) {
            shards
        } else {
            1
        };
        (0..count)
            .filter_map(|i| cfg.shard_broker(i, shards).map(|b| (i, b)))
            .collect()
    }

    /// Registers every broker of this process with every name server; logs failures. Returns how
    /// many name servers accepted every registration.
    pub async fn register_all(
        &self,
        cfg: &BrokerConfig,
        shards: usize,
        wrapper: TopicConfigSerializeWrapper,
    ) -> usize {
        if cfg.namesrv_addr.is_empty() {
            return 0;
        }
        let brokers = Self::brokers(cfg, shards);
        let mut requests = Vec::new();
        for (shard, broker) in &brokers {
            let (shard, own) = (*shard, &broker.broker_name);
            let body = bytes::Bytes::from(register_body(cfg, own_topics(&wrapper, own, &brokers)));
            let header = RegisterBrokerRequestHeader {
                broker_name: broker.broker_name.clone(),
                broker_addr: broker.broker_addr.clone(),
                cluster_name: cfg.broker_cluster_name.clone(),
                ha_server_addr: cfg.ha_server_addr(),
                broker_id: cfg.broker_id as i64,
                heartbeat_timeout_millis: None,
                enable_acting_master: None,
                compressed: Some(false),
                body_crc32: Some(body_crc(&body)),
            };
            let cmd = RemotingCommand::request(request_code::REGISTER_BROKER)
                .with_ext_fields(header.to_ext_fields())
                .with_body(body);
            requests.push((shard, cmd));
        }
        let mut refused: Vec<&String> = Vec::new();
        for (shard, addr, result) in self.to_every_name_server(cfg, requests).await {
            match result {
                Ok(resp) if resp.code == response_code::SUCCESS => {
                    tracing::debug!("registered shard-broker {shard} with name server {addr}");
                    if let Ok(h) = RegisterBrokerResponseHeader::from_ext_fields(&resp.ext_fields) {
                        // In controller mode the controllers name the master, not these answers.
                        if h.master_addr.is_some() && !cfg.controller.enabled {
                            self.masters
                                .borrow_mut()
                                .insert(shard, (h.ha_server_addr, h.master_addr));
                        }
                    }
                    continue;
                }
                Ok(resp) => tracing::warn!(
                    "name server {addr} refused the registration: code {} {}",
                    resp.code,
                    resp.remark.unwrap_or_default()
                ),
                Err(e) => tracing::warn!("cannot register with name server {addr}: {e}"),
            }
            refused.push(addr);
        }
        cfg.namesrv_addr
            .iter()
            .filter(|addr| !refused.contains(addr))
            .count()
    }

    /// Sends each request to every name server: the name servers at once, the requests one after
    /// another on each (one connection per name server; a name server drops a broker whose
    /// registration connection closes, so two connections must not race to be the cached one).
    async fn to_every_name_server<'a>(
        &self,
        cfg: &'a BrokerConfig,
        requests: Vec<(usize, RemotingCommand)>,
    ) -> Vec<(usize, &'a String, Result<RemotingCommand, String>)> {
        let timeout = Duration::from_millis(cfg.register_broker_timeout_mills.max(1));
        let per_name_server = join_all(cfg.namesrv_addr.iter().map(|addr| {
            let requests = requests.clone();
            async move {
                let mut answers = Vec::with_capacity(requests.len());
                for (shard, cmd) in requests {
                    answers.push((shard, addr, self.invoke(addr, cmd, timeout).await));
                }
                if answers.iter().all(|(_, _, answer)| answer.is_ok()) {
                    self.retire_replaced(addr);
                }
                answers
            }
        }))
        .await;
        per_name_server.into_iter().flatten().collect()
    }

    /// Unregisters every broker of this process from every name server (shutdown).
    pub async fn unregister_all(&self, cfg: &BrokerConfig, shards: usize) {
        let mut requests = Vec::new();
        for (shard, broker) in Self::brokers(cfg, shards) {
            let header = UnregisterBrokerRequestHeader {
                broker_name: broker.broker_name.clone(),
                broker_addr: broker.broker_addr.clone(),
                cluster_name: cfg.broker_cluster_name.clone(),
                broker_id: cfg.broker_id as i64,
            };
            let cmd = RemotingCommand::request(request_code::UNREGISTER_BROKER)
                .with_ext_fields(header.to_ext_fields());
            requests.push((shard, cmd));
        }
        for (_, addr, result) in self.to_every_name_server(cfg, requests).await {
            match result {
                Ok(resp) if resp.code == response_code::SUCCESS => {
                    tracing::info!("unregistered from name server {addr}")
                }
                Ok(resp) => tracing::warn!(
                    "name server {addr} refused the unregistration: code {}",
                    resp.code
                ),
                Err(e) => tracing::warn!("cannot unregister from name server {addr}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::TopicConfig;

    #[test]
    fn a_shard_broker_registers_its_own_name_topic_only() {
        let cfg = BrokerConfig {
            shard_count: 3,
            ..BrokerConfig::default()
        };
        let brokers = Registrar::brokers(&cfg, 3);
        let mut wrapper = TopicConfigSerializeWrapper::default();
        for t in ["T", "broker-a", "broker-a-0", "broker-a-1", "broker-a-2"] {
            wrapper
                .topic_config_table
                .insert(t.into(), TopicConfig::new(t, 1));
        }
        let mine = own_topics(&wrapper, "broker-a-1", &brokers);
        let names: Vec<&String> = mine.topic_config_table.keys().collect();
        assert_eq!(names, ["T", "broker-a", "broker-a-1"]);
    }

    #[test]
    fn body_masks_perm_with_broker_permission() {
        let cfg = BrokerConfig {
            broker_permission: 4, // read only
            ..BrokerConfig::default()
        };
        let mut wrapper = TopicConfigSerializeWrapper::default();
        let mut tc = TopicConfig::new("T", 4);
        tc.perm = 7;
        wrapper.topic_config_table.insert("T".into(), tc);
        let body: RegisterBrokerBody =
            protocol::body::from_json(&register_body(&cfg, wrapper)).unwrap();
        assert_eq!(
            body.topic_config_serialize_wrapper.topic_config_table["T"].perm,
            5
        );
    }

    #[test]
    fn body_is_what_a_rocketmq_5_broker_sends() {
        // fastjson's output for a Java 5 broker with one topic; rocketmq-rust's name server refuses
        // a body without the mapping fields.
        let mut wrapper = TopicConfigSerializeWrapper::default();
        wrapper
            .topic_config_table
            .insert("T".into(), TopicConfig::new("T", 4));
        wrapper.data_version.counter = 2;
        wrapper.data_version.timestamp = 1_700_000_000_000;
        let body = register_body(&BrokerConfig::default(), wrapper);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            concat!(
                r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"#,
                r#""dataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000000},"#,
                r#""mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"#,
                r#""topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"#,
                r#""readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","#,
                r#""topicSysFlag":0,"writeQueueNums":4}},"#,
                r#""topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#
            )
        );
    }
}

//! The client registry (shard 0): producer and consumer groups, their clients' connections, the
//! consumers' subscriptions, and expiry of clients silent for too long.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, SubscriptionData};

/// A client connection, wherever (which shard) it was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnRef {
    pub shard: usize,
    pub conn_id: u64,
    pub peer: SocketAddr,
}

#[derive(Debug, Clone)]
struct ClientChannel {
    conn: ConnRef,
    last_update: Instant,
    /// The language and version of the client's heartbeat (GET_CONSUMER_CONNECTION_LIST).
    language: String,
    version: i32,
}

/// One consumer group as its clients described it in their heartbeats.
#[derive(Debug, Clone)]
pub struct ConsumerGroupInfo {
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub subscriptions: BTreeMap<String, SubscriptionData>,
    clients: BTreeMap<String, ClientChannel>,
}

/// One client of a group, as GET_CONSUMER_CONNECTION_LIST and GET_PRODUCER_CONNECTION_LIST report it.
#[derive(Debug, Clone)]
pub struct ConsumerClient {
    pub client_id: String,
    pub conn: ConnRef,
    /// Empty until a heartbeat told it.
    pub language: String,
    pub version: i32,
}

impl ConsumerClient {
    /// The client as GET_CONSUMER_CONNECTION_LIST and GET_PRODUCER_CONNECTION_LIST list it (a client
    /// whose heartbeat did not say its language is listed as JAVA, as Apache does).
    pub fn into_connection(self) -> protocol::body::Connection {
        protocol::body::Connection {
            client_addr: self.conn.peer.to_string(),
            client_id: self.client_id,
            language: if self.language.is_empty() {
                protocol::language::LanguageCode::Java.name().to_owned()
            } else {
                self.language
            },
            version: self.version,
        }
    }
}

/// What a consumer registration changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerChange {
    /// A client joined (new client id).
    pub members: bool,
    /// The group's subscription set changed.
    pub subscriptions: bool,
    /// The group's message model (clustering or broadcasting) changed.
    pub model: bool,
}

#[derive(Debug, Default)]
pub struct ClientRegistry {
    producers: HashMap<String, BTreeMap<String, ClientChannel>>,
    consumers: HashMap<String, ConsumerGroupInfo>,
}

impl ClientRegistry {
    pub fn register_producer(&mut self, group: &str, client_id: &str, conn: ConnRef, now: Instant) {
        self.producers.entry(group.to_owned()).or_default().insert(
            client_id.to_owned(),
            ClientChannel {
                conn,
                last_update: now,
                language: String::new(),
                version: 0,
            },
        );
    }

    /// Registers a consumer. `without_sub`: the heartbeat left subscriptions out (HeartbeatV2's short
    /// form), so the group's known subscriptions stay.
    pub fn register_consumer(
        &mut self,
        data: &ConsumerData,
        client_id: &str,
        conn: ConnRef,
        now: Instant,
        without_sub: bool,
    ) -> ConsumerChange {
        let info = self
            .consumers
            .entry(data.group_name.clone())
            .or_insert_with(|| ConsumerGroupInfo {
                consume_type: data.consume_type.clone(),
                message_model: data.message_model.clone(),
                consume_from_where: data.consume_from_where.clone(),
                subscriptions: BTreeMap::new(),
                clients: BTreeMap::new(),
            });
        info.consume_type = data.consume_type.clone();
        let model = info.message_model != data.message_model;
        info.message_model = data.message_model.clone();
        info.consume_from_where = data.consume_from_where.clone();
        let members = info
            .clients
            .insert(
                client_id.to_owned(),
                ClientChannel {
                    conn,
                    last_update: now,
                    language: String::new(),
                    version: 0,
                },
            )
            .is_none();
        if without_sub && data.subscription_data_set.is_empty() {
            return ConsumerChange {
                members,
                subscriptions: false,
                model,
            };
        }
        let new_subs: BTreeMap<String, SubscriptionData> = data
            .subscription_data_set
            .iter()
            .map(|s| (s.topic.clone(), s.clone()))
            .collect();
        let subscriptions = new_subs != info.subscriptions;
        if subscriptions {
            info.subscriptions = new_subs;
        }
        ConsumerChange {
            members,
            subscriptions,
            model,
        }
    }

    pub fn unregister_producer(&mut self, group: &str, client_id: &str) {
        if let Some(clients) = self.producers.get_mut(group) {
            clients.remove(client_id);
            if clients.is_empty() {
                self.producers.remove(group);
            }
        }
    }

    /// Removes a consumer; true when it was a member. An emptied group is dropped.
    pub fn unregister_consumer(&mut self, group: &str, client_id: &str) -> bool {
        let Some(info) = self.consumers.get_mut(group) else {
            return false;
        };
        let removed = info.clients.remove(client_id).is_some();
        if info.clients.is_empty() {
            self.consumers.remove(group);
        }
        removed
    }

    /// Removes every client registered on a closed connection; returns the consumer groups that lost
    /// members.
    pub fn connection_closed(&mut self, shard: usize, conn_id: u64) -> Vec<String> {
        self.remove_where(|c| c.conn.shard == shard && c.conn.conn_id == conn_id)
    }

    /// Removes clients silent for longer than `max_idle`; returns the consumer groups that lost members.
    pub fn expire(&mut self, now: Instant, max_idle: Duration) -> Vec<String> {
        self.remove_where(|c| now.saturating_duration_since(c.last_update) > max_idle)
    }

    fn remove_where(&mut self, gone: impl Fn(&ClientChannel) -> bool) -> Vec<String> {
        for clients in self.producers.values_mut() {
            clients.retain(|_, c| !gone(c));
        }
        self.producers.retain(|_, clients| !clients.is_empty());
        let mut changed = Vec::new();
        for (group, info) in self.consumers.iter_mut() {
            let before = info.clients.len();
            info.clients.retain(|_, c| !gone(c));
            if info.clients.len() != before {
                changed.push(group.clone());
            }
        }
        self.consumers.retain(|_, info| !info.clients.is_empty());
        changed
    }

    /// Records the language and version a consumer client's heartbeat carried.
    pub fn set_consumer_client_info(
        &mut self,
        group: &str,
        client_id: &str,
        language: &str,
        version: i32,
    ) {
        if let Some(c) = self
            .consumers
            .get_mut(group)
            .and_then(|info| info.clients.get_mut(client_id))
        {
            language.clone_into(&mut c.language);
            c.version = version;
        }
    }

    /// Records the language and version a producer client's heartbeat carried.
    pub fn set_producer_client_info(
        &mut self,
        group: &str,
        client_id: &str,
        language: &str,
        version: i32,
    ) {
        if let Some(c) = self
            .producers
            .get_mut(group)
            .and_then(|clients| clients.get_mut(client_id))
        {
            language.clone_into(&mut c.language);
            c.version = version;
        }
    }

    /// The clients of a producer group (GET_PRODUCER_CONNECTION_LIST), by client id.
    pub fn producer_clients(&self, group: &str) -> Vec<ConsumerClient> {
        self.producers
            .get(group)
            .map(|clients| {
                clients
                    .iter()
                    .map(|(id, c)| ConsumerClient {
                        client_id: id.clone(),
                        conn: c.conn,
                        language: c.language.clone(),
                        version: c.version,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Names of the producer groups with clients (for the metrics of connections).
    pub fn producer_groups(&self) -> Vec<String> {
        self.producers.keys().cloned().collect()
    }

    /// Names of the consumer groups with clients (for the metrics of connections).
    pub fn consumer_groups(&self) -> Vec<String> {
        self.consumers.keys().cloned().collect()
    }

    /// Online consumer groups that subscribe to `topic`.
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.consumers
            .iter()
            .filter(|(_, info)| info.subscriptions.contains_key(topic))
            .map(|(group, _)| group.clone())
            .collect()
    }

    /// A consumer group and its clients.
    pub fn consumer_group(&self, group: &str) -> Option<(&ConsumerGroupInfo, Vec<ConsumerClient>)> {
        self.consumers.get(group).map(|info| {
            let clients = info
                .clients
                .iter()
                .map(|(id, c)| ConsumerClient {
                    client_id: id.clone(),
                    conn: c.conn,
                    language: c.language.clone(),
                    version: c.version,
                })
                .collect();
            (info, clients)
        })
    }

    /// Client ids of a consumer group (sorted).
    pub fn consumer_ids(&self, group: &str) -> Option<Vec<String>> {
        self.consumers
            .get(group)
            .map(|info| info.clients.keys().cloned().collect())
    }

    /// Connections of a consumer group's clients.
    pub fn consumer_conns(&self, group: &str) -> Vec<ConnRef> {
        self.consumers
            .get(group)
            .map(|info| info.clients.values().map(|c| c.conn).collect())
            .unwrap_or_default()
    }

    /// Connections of a producer group's clients (for transaction check-backs).
    pub fn producer_conns(&self, group: &str) -> Vec<ConnRef> {
        self.producers
            .get(group)
            .map(|clients| clients.values().map(|c| c.conn).collect())
            .unwrap_or_default()
    }

    /// The connection of a producer client by its client id (RocketMQ's `ProducerManager.findChannel`):
    /// the one it sent its latest heartbeat on.
    pub fn producer_conn_by_client_id(&self, client_id: &str) -> Option<ConnRef> {
        self.producers
            .values()
            .filter_map(|clients| clients.get(client_id))
            .max_by_key(|c| c.last_update)
            .map(|c| c.conn)
    }

    /// Whether a group's online consumers consume by broadcast.
    pub fn is_broadcasting(&self, group: &str) -> bool {
        self.consumers
            .get(group)
            .is_some_and(|info| info.message_model == MessageModel::Broadcasting)
    }

    /// A group's current subscriptions (empty when the group is gone).
    pub fn subscriptions(&self, group: &str) -> Vec<SubscriptionData> {
        self.consumers
            .get(group)
            .map(|info| info.subscriptions.values().cloned().collect())
            .unwrap_or_default()
    }

    pub fn consumer_group_count(&self) -> usize {
        self.consumers.len()
    }

    pub fn producer_group_count(&self) -> usize {
        self.producers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(shard: usize, id: u64) -> ConnRef {
        ConnRef {
            shard,
            conn_id: id,
            peer: "127.0.0.1:1".parse().unwrap(),
        }
    }

    fn consumer(group: &str, topics: &[&str]) -> ConsumerData {
        ConsumerData {
            group_name: group.into(),
            subscription_data_set: topics
                .iter()
                .map(|t| SubscriptionData {
                    topic: (*t).into(),
                    ..SubscriptionData::default()
                })
                .collect(),
            ..ConsumerData::default()
        }
    }

    #[test]
    fn membership_changes_are_reported() {
        let mut reg = ClientRegistry::default();
        let now = Instant::now();
        let c = reg.register_consumer(&consumer("g", &["T"]), "c1", conn(0, 1), now, false);
        assert_eq!(
            c,
            ConsumerChange {
                members: true,
                subscriptions: true,
                model: false,
            }
        );
        let c = reg.register_consumer(&consumer("g", &["T"]), "c1", conn(0, 1), now, false);
        assert_eq!(c, ConsumerChange::default());
        let c = reg.register_consumer(&consumer("g", &["T", "U"]), "c2", conn(1, 5), now, false);
        assert_eq!(
            c,
            ConsumerChange {
                members: true,
                subscriptions: true,
                model: false,
            }
        );
        assert_eq!(reg.consumer_ids("g").unwrap(), vec!["c1", "c2"]);
        assert_eq!(reg.subscriptions("g").len(), 2);
        let short = reg.register_consumer(&consumer("g", &[]), "c2", conn(1, 5), now, true);
        assert_eq!(short, ConsumerChange::default());
        assert_eq!(
            reg.subscriptions("g").len(),
            2,
            "a heartbeat without subscriptions keeps them"
        );
        assert_eq!(reg.connection_closed(1, 5), vec!["g".to_owned()]);
        assert_eq!(reg.consumer_ids("g").unwrap(), vec!["c1"]);
        assert!(reg.connection_closed(1, 5).is_empty());
        reg.register_producer("pg", "c1", conn(0, 1), now);
        assert_eq!(reg.producer_group_count(), 1);
        // A client's latest heartbeat names its connection, whatever the group.
        reg.register_producer("pg2", "c1", conn(1, 7), now + Duration::from_secs(1));
        assert_eq!(reg.producer_conn_by_client_id("c1"), Some(conn(1, 7)));
        assert_eq!(reg.producer_conn_by_client_id("nobody"), None);
        reg.unregister_producer("pg2", "c1");
        assert_eq!(reg.producer_conn_by_client_id("c1"), Some(conn(0, 1)));
        let later = now + Duration::from_secs(121);
        assert_eq!(
            reg.expire(later, Duration::from_secs(120)),
            vec!["g".to_owned()]
        );
        assert!(reg.consumer_ids("g").is_none());
        assert_eq!(reg.producer_group_count(), 0);
        reg.register_consumer(&consumer("h", &["T"]), "c9", conn(0, 2), now, false);
        assert!(reg.unregister_consumer("h", "c9"));
        assert!(!reg.unregister_consumer("h", "c9"));
    }

    #[test]
    fn a_change_of_message_model_is_reported() {
        let mut reg = ClientRegistry::default();
        let now = Instant::now();
        let clustering = consumer("g", &["T"]);
        reg.register_consumer(&clustering, "c1", conn(0, 1), now, false);
        assert!(!reg.is_broadcasting("g"));
        let broadcasting = ConsumerData {
            message_model: MessageModel::Broadcasting,
            ..clustering
        };
        let c = reg.register_consumer(&broadcasting, "c1", conn(0, 1), now, true);
        assert!(c.model && !c.subscriptions && !c.members);
        assert!(reg.is_broadcasting("g"));
        assert!(!reg.is_broadcasting("other"));
    }
}

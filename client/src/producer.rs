//! The producer: round-robin queue selection over a topic's write queues, SEND_MESSAGE_V2 (sync or
//! oneway), SEND_BATCH_MESSAGE, and an async sender that keeps at most N sends in flight. It
//! heartbeats its producer group to the masters it sends to (`producer_heartbeat`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use glommio::sync::Semaphore;
use protocol::body::MessageQueue;
use protocol::header::{CommandHeader, SendMessageResponseHeader};
use protocol::message::{batch, properties};
use protocol::{request_code, response_code, ExtFields, RemotingCommand};

use crate::connections::BrokerConnections;
use crate::error::ClientError;
use crate::message::Message;
use crate::namesrv::NameServer;
use crate::producer_heartbeat::ProducerHeartbeat;
use crate::request::{expect_success, request};
use crate::route::TopicRoute;
use crate::uniq_key::{now_millis, UniqKeyGenerator};

pub use crate::broker_api::DEFAULT_TOPIC;

#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub group: String,
    /// How long one send waits for its response.
    pub send_timeout: Duration,
    pub connect_timeout: Duration,
    /// Connections kept to each broker, used round robin.
    pub connections_per_broker: usize,
    /// Queues of a topic the broker auto-creates on first send.
    pub default_topic_queue_nums: i32,
    /// Makes UNIQ_KEYs of several producers in one process differ (e.g. the executor index).
    pub instance: u32,
    /// IPv4 address written into UNIQ_KEYs.
    pub client_ip: Ipv4Addr,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            group: "DEFAULT_PRODUCER".into(),
            send_timeout: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(3),
            connections_per_broker: 1,
            default_topic_queue_nums: 4,
            instance: 0,
            client_ip: Ipv4Addr::LOCALHOST,
        }
    }
}

/// What the broker answered to a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// The UNIQ_KEY (comma-separated ones for a batch): the msgId users see.
    pub msg_id: String,
    /// The broker's offsetMsgId (store host + physical offset), as answered.
    pub offset_msg_id: String,
    pub queue: MessageQueue,
    pub queue_offset: i64,
}

/// Sends messages to the brokers of a topic's route.
pub struct Producer {
    config: ProducerConfig,
    namesrv: NameServer,
    connections: Rc<BrokerConnections>,
    routes: RefCell<HashMap<String, Rc<TopicRoute>>>,
    uniq: RefCell<UniqKeyGenerator>,
    next_queue: Cell<usize>,
    heartbeat: Rc<ProducerHeartbeat>,
}

impl Producer {
    pub fn new(namesrv: NameServer, config: ProducerConfig) -> Producer {
        let uniq = UniqKeyGenerator::new(config.client_ip, config.instance);
        let connections = Rc::new(BrokerConnections::new(
            config.connections_per_broker,
            config.connect_timeout,
        ));
        // The Java client's clientId: IP@instance.
        let client_id = format!(
            "{}@{}#{}",
            config.client_ip,
            std::process::id(),
            config.instance
        );
        let heartbeat = ProducerHeartbeat::new(
            client_id,
            &config.group,
            connections.clone(),
            config.send_timeout,
        );
        Producer {
            // Spread producers of one process over different queues from the start.
            next_queue: Cell::new(config.instance as usize),
            config,
            namesrv,
            connections,
            routes: RefCell::new(HashMap::new()),
            uniq: RefCell::new(uniq),
            heartbeat,
        }
    }

    /// The client id its heartbeats register (`producerConnection` lists it).
    pub fn client_id(&self) -> &str {
        self.heartbeat.client_id()
    }

    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    pub fn connections(&self) -> &BrokerConnections {
        &self.connections
    }

    /// The topic's route, from the cache or the name server.
    pub async fn route(&self, topic: &str) -> Result<Rc<TopicRoute>, ClientError> {
        let cached = self.routes.borrow().get(topic).cloned();
        match cached {
            Some(route) => Ok(route),
            None => self.refresh_route(topic).await,
        }
    }

    /// Asks the name server again and replaces the cached route. A topic the name server does not
    /// know is sent through the brokers of the default topic (TBW102), which create it on first send
    /// when `autoCreateTopicEnable` is on, like the Java producer.
    pub async fn refresh_route(&self, topic: &str) -> Result<Rc<TopicRoute>, ClientError> {
        let data = match self.namesrv.topic_route(topic).await {
            Ok(data) => data,
            Err(ClientError::Response {
                code: response_code::TOPIC_NOT_EXIST,
                ..
            }) => {
                let mut data = self.namesrv.topic_route(DEFAULT_TOPIC).await.map_err(|e| {
                    ClientError::NoRoute(format!(
                        "{topic} (and default topic {DEFAULT_TOPIC}: {e})"
                    ))
                })?;
                let queues = self.config.default_topic_queue_nums;
                for queue in &mut data.queue_datas {
                    queue.read_queue_nums = queue.read_queue_nums.min(queues);
                    queue.write_queue_nums = queue.write_queue_nums.min(queues);
                }
                data
            }
            Err(e) => return Err(e),
        };
        let route = Rc::new(TopicRoute::new(topic, data));
        self.heartbeat.note_masters(route.master_addrs());
        self.routes
            .borrow_mut()
            .insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// Opens every connection to every master of the topic now.
    pub async fn connect(&self, topic: &str) -> Result<(), ClientError> {
        let route = self.route(topic).await?;
        for addr in route.master_addrs() {
            self.connections.connect_all(addr).await?;
        }
        Ok(())
    }

    /// The next write queue of `topic`, round robin.
    pub async fn select_queue(&self, topic: &str) -> Result<MessageQueue, ClientError> {
        let route = self.route(topic).await?;
        let n = self.next_queue.get();
        self.next_queue.set(n.wrapping_add(1));
        route.select_write_queue(n).cloned()
    }

    fn next_uniq_key(&self) -> String {
        self.uniq.borrow_mut().next_key()
    }

    /// The properties to send: the message's, plus a fresh UNIQ_KEY unless it has one.
    fn properties_with_uniq_key(&self, msg: &Message) -> (String, String) {
        if let Some(existing) = msg.uniq_key() {
            return (msg.properties().to_owned(), existing.to_owned());
        }
        let key = self.next_uniq_key();
        let mut props = String::with_capacity(msg.properties().len() + key.len() + 10);
        props.push_str(msg.properties());
        properties::push(&mut props, properties::UNIQ_KEY, &key);
        (props, key)
    }

    /// SendMessageRequestHeaderV2 fields as the Java client writes them.
    fn send_header(&self, queue: &MessageQueue, flag: i32, props: &str, batch: bool) -> ExtFields {
        let group = &self.config.group;
        let mut f = ExtFields::with_capacity(
            14,
            group.len() + queue.topic.len() + queue.broker_name.len() + props.len() + 64,
        );
        f.insert("a", group);
        f.insert("b", &queue.topic);
        f.insert("c", DEFAULT_TOPIC);
        f.insert_display("d", self.config.default_topic_queue_nums);
        f.insert_display("e", queue.queue_id);
        f.insert_display("f", 0);
        f.insert_display("g", now_millis());
        f.insert_display("h", flag);
        f.insert("i", props);
        f.insert_display("j", 0);
        f.insert("k", "false");
        f.insert("m", if batch { "true" } else { "false" });
        f.insert("n", &queue.broker_name);
        f
    }

    /// The SEND_MESSAGE_V2 command for `msg` to `queue`, and the msgId (UNIQ_KEY) it carries.
    pub fn send_command(&self, msg: &Message, queue: &MessageQueue) -> (RemotingCommand, String) {
        let (props, msg_id) = self.properties_with_uniq_key(msg);
        let fields = self.send_header(queue, msg.flag, &props, false);
        let cmd = request(request_code::SEND_MESSAGE_V2, fields).with_body(msg.body.clone());
        (cmd, msg_id)
    }

    /// The SEND_BATCH_MESSAGE command for `msgs` (all of `queue.topic`), and their msgIds joined by ','.
    pub fn batch_command(
        &self,
        msgs: &[Message],
        queue: &MessageQueue,
    ) -> Result<(RemotingCommand, String), ClientError> {
        if msgs.is_empty() {
            return Err(ClientError::Invalid("empty batch".into()));
        }
        if let Some(other) = msgs.iter().find(|m| m.topic != queue.topic) {
            return Err(ClientError::Invalid(format!(
                "batch mixes topics {} and {}",
                queue.topic, other.topic
            )));
        }
        let body_len: usize = msgs
            .iter()
            .map(|m| batch::entry_len(m.body.len(), m.properties().len() + 48))
            .fold(0usize, usize::saturating_add);
        let mut body = BytesMut::with_capacity(body_len);
        let mut ids = String::with_capacity(msgs.len() * 33);
        for msg in msgs {
            let (props, id) = self.properties_with_uniq_key(msg);
            batch::encode_entry(msg.flag, &msg.body, &props, &mut body)?;
            if !ids.is_empty() {
                ids.push(',');
            }
            ids.push_str(&id);
        }
        let mut batch_props = String::new();
        properties::push(&mut batch_props, properties::WAIT, "true");
        let fields = self.send_header(queue, 0, &batch_props, true);
        let cmd = request(request_code::SEND_BATCH_MESSAGE, fields).with_body(body.freeze());
        Ok((cmd, ids))
    }

    async fn invoke(
        &self,
        queue: &MessageQueue,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        let route = self.route(&queue.topic).await?;
        let addr = route.master_addr(&queue.broker_name)?;
        let client = self.connections.get(addr).await?;
        Ok(client.invoke(cmd, self.config.send_timeout).await?)
    }

    pub(crate) fn send_result(
        resp: RemotingCommand,
        msg_id: String,
        queue: &MessageQueue,
    ) -> Result<SendResult, ClientError> {
        let resp = expect_success(resp)?;
        let header = SendMessageResponseHeader::from_ext_fields(&resp.ext_fields)?;
        Ok(SendResult {
            msg_id,
            offset_msg_id: header.msg_id,
            queue: MessageQueue {
                topic: queue.topic.clone(),
                broker_name: queue.broker_name.clone(),
                queue_id: header.queue_id,
            },
            queue_offset: header.queue_offset,
        })
    }

    /// Sends to the next queue and waits for the broker's answer. Only SUCCESS is a success: the
    /// Java client's FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE statuses come back
    /// as `ClientError::Response` so callers count them.
    pub async fn send(&self, msg: &Message) -> Result<SendResult, ClientError> {
        // One route lookup per send: the queue is borrowed from it, not cloned.
        let route = self.route(&msg.topic).await?;
        let n = self.next_queue.get();
        self.next_queue.set(n.wrapping_add(1));
        let queue = route.select_write_queue(n)?;
        let (cmd, msg_id) = self.send_command(msg, queue);
        let client = self
            .connections
            .get(route.master_addr(&queue.broker_name)?)
            .await?;
        let resp = client.invoke(cmd, self.config.send_timeout).await?;
        Producer::send_result(resp, msg_id, queue)
    }

    /// Sends to a chosen queue.
    pub async fn send_to_queue(
        &self,
        msg: &Message,
        queue: &MessageQueue,
    ) -> Result<SendResult, ClientError> {
        let (cmd, msg_id) = self.send_command(msg, queue);
        let resp = self.invoke(queue, cmd).await?;
        Producer::send_result(resp, msg_id, queue)
    }

    /// Sends without waiting for an answer; returns the msgId.
    pub async fn send_oneway(&self, msg: &Message) -> Result<String, ClientError> {
        let queue = self.select_queue(&msg.topic).await?;
        let (cmd, msg_id) = self.send_command(msg, &queue);
        let route = self.route(&queue.topic).await?;
        let client = self
            .connections
            .get(route.master_addr(&queue.broker_name)?)
            .await?;
        client.invoke_oneway(cmd).await?;
        Ok(msg_id)
    }

    /// Sends messages of one topic as one SEND_BATCH_MESSAGE to the next queue.
    pub async fn send_batch(&self, msgs: &[Message]) -> Result<SendResult, ClientError> {
        let topic = msgs
            .first()
            .map(|m| m.topic.clone())
            .ok_or_else(|| ClientError::Invalid("empty batch".into()))?;
        let queue = self.select_queue(&topic).await?;
        let (cmd, ids) = self.batch_command(msgs, &queue)?;
        let resp = self.invoke(&queue, cmd).await?;
        Producer::send_result(resp, ids, &queue)
    }
}

/// Asynchronous sends with at most `max_in_flight` outstanding (the Java client's async semaphore):
/// `send` returns once the send is under way; `done` runs with its result.
pub struct AsyncSender {
    producer: Rc<Producer>,
    permits: Rc<Semaphore>,
    max_in_flight: u64,
}

impl AsyncSender {
    pub fn new(producer: Rc<Producer>, max_in_flight: usize) -> AsyncSender {
        let max_in_flight = max_in_flight.max(1) as u64;
        AsyncSender {
            producer,
            permits: Rc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
        }
    }

    /// Waits for a free slot, then starts sending `msg`; `done` gets the result and when the send
    /// left (after the slot wait), so callers can time the send itself.
    pub async fn send(
        &self,
        msg: Message,
        done: impl FnOnce(Result<SendResult, ClientError>, Instant) + 'static,
    ) -> Result<(), ClientError> {
        let permit = self.permit().await?;
        let producer = self.producer.clone();
        glommio::spawn_local(async move {
            let started = Instant::now();
            let result = producer.send(&msg).await;
            drop(permit);
            done(result, started);
        })
        .detach();
        Ok(())
    }

    /// As [`AsyncSender::send`] for a batch of one topic.
    pub async fn send_batch(
        &self,
        msgs: Vec<Message>,
        done: impl FnOnce(Result<SendResult, ClientError>, Instant) + 'static,
    ) -> Result<(), ClientError> {
        let permit = self.permit().await?;
        let producer = self.producer.clone();
        glommio::spawn_local(async move {
            let started = Instant::now();
            let result = producer.send_batch(&msgs).await;
            drop(permit);
            done(result, started);
        })
        .detach();
        Ok(())
    }

    async fn permit(&self) -> Result<glommio::sync::StaticPermit, ClientError> {
        self.permits
            .acquire_static_permit(1)
            .await
            .map_err(|e| ClientError::Invalid(format!("async sender closed: {e}")))
    }

    /// Sends currently in flight.
    pub fn in_flight(&self) -> u64 {
        self.max_in_flight.saturating_sub(self.permits.available())
    }

    /// Waits until every started send has finished.
    pub async fn flush(&self) {
        if let Ok(all) = self.permits.acquire_permit(self.max_in_flight).await {
            drop(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::header::SendMessageRequestHeader;

    fn producer() -> Producer {
        let ns = NameServer::new(
            vec!["127.0.0.1:1".parse().unwrap()],
            Duration::from_millis(10),
        );
        Producer::new(
            ns,
            ProducerConfig {
                group: "pg".into(),
                ..ProducerConfig::default()
            },
        )
    }

    fn queue() -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            queue_id: 3,
        }
    }

    #[test]
    fn send_command_is_a_v2_header_the_broker_can_parse() {
        let p = producer();
        let msg = Message::new("T", &b"body"[..])
            .with_tags("TagA")
            .with_keys("k1");
        let (cmd, id) = p.send_command(&msg, &queue());
        assert_eq!(cmd.code, request_code::SEND_MESSAGE_V2);
        assert_eq!(&cmd.body[..], b"body");
        let h = SendMessageRequestHeader::parse(cmd.code, &cmd.ext_fields).unwrap();
        assert_eq!(h.producer_group, "pg");
        assert_eq!(h.topic, "T");
        assert_eq!(h.default_topic, "TBW102");
        assert_eq!(h.queue_id, 3);
        assert_eq!(h.batch, Some(false));
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        let props = h.properties.unwrap();
        assert_eq!(properties::get(&props, properties::TAGS), Some("TagA"));
        assert_eq!(properties::get(&props, properties::KEYS), Some("k1"));
        assert_eq!(
            properties::get(&props, properties::UNIQ_KEY),
            Some(id.as_str())
        );
        assert_eq!(id.len(), 32);
        let (_, id2) = p.send_command(&msg, &queue());
        assert_ne!(id, id2);
        // A message that already has a UNIQ_KEY keeps it.
        let fixed = msg.with_property(properties::UNIQ_KEY, "ABC");
        assert_eq!(p.send_command(&fixed, &queue()).1, "ABC");
    }

    #[test]
    fn batch_command_encodes_every_message_with_its_own_uniq_key() {
        let p = producer();
        let msgs: Vec<Message> = (0..3)
            .map(|i| Message::new("T", vec![b'x'; i + 1]).with_tags("A"))
            .collect();
        let (cmd, ids) = p.batch_command(&msgs, &queue()).unwrap();
        assert_eq!(cmd.code, request_code::SEND_BATCH_MESSAGE);
        let h = SendMessageRequestHeader::parse(cmd.code, &cmd.ext_fields).unwrap();
        assert!(h.is_batch(cmd.code));
        let entries = batch::decode(&cmd.body).unwrap();
        assert_eq!(entries.len(), 3);
        let ids: Vec<&str> = ids.split(',').collect();
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(e.body.len(), i + 1);
            assert_eq!(
                properties::get(e.properties, properties::UNIQ_KEY),
                Some(ids[i])
            );
            assert_eq!(properties::get(e.properties, properties::TAGS), Some("A"));
        }
        assert!(p.batch_command(&[], &queue()).is_err());
        assert!(p
            .batch_command(&[Message::new("Other", &b"x"[..])], &queue())
            .is_err());
    }
}

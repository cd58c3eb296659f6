//! The pull consumer primitive: PULL_MESSAGE on one queue (optionally long-polling), the response's
//! stored records decoded in place, plus the group's offsets on the queue's broker.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use protocol::body::{ConsumeFromWhere, ConsumeType, MessageModel, ProducerData};
use protocol::body::{ConsumerData, HeartbeatData, MessageQueue, SubscriptionData, SUB_ALL};
use protocol::header::{
    pull_sys_flag, CommandHeader, PullMessageRequestHeader, PullMessageResponseHeader,
};
use protocol::message::record::{decode_view, peek_head, RecordError, RecordHead, RecordView};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

use crate::broker_api;
use crate::connections::BrokerConnections;
use crate::error::ClientError;
use crate::namesrv::NameServer;
use crate::request::{expect_code, request};
use crate::route::TopicRoute;
use crate::uniq_key::now_millis;

/// How a pull ended (the Java client's `PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    Found,
    NoNewMessage,
    NoMatchedMessage,
    OffsetIllegal,
}

/// The answer to one pull. `body` holds stored CommitLog records, decoded lazily by [`PullResult::records`].
#[derive(Debug, Clone)]
pub struct PullResult {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub suggest_which_broker_id: i64,
    pub body: Bytes,
}

/// Iterates the records of a pull body without copying; stops at the first bad record (yielding its
/// error) and skips blank (end-of-segment) records.
pub struct Records<'a> {
    rest: &'a [u8],
    check_crc: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RecordView<'a>, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let head = match peek_head(self.rest) {
                Ok(Some(head)) => head,
                Ok(None) => {
                    let available = self.rest.len();
                    self.rest = &[];
                    return Some(Err(RecordError::Truncated {
                        needed: 8,
                        available,
                    }));
                }
                Err(e) => {
                    self.rest = &[];
                    return Some(Err(e));
                }
            };
            let size = head.total_size();
            let Some((record, rest)) = self.rest.split_at_checked(size) else {
                let available = self.rest.len();
                self.rest = &[];
                return Some(Err(RecordError::Truncated {
                    needed: size,
                    available,
                }));
            };
            self.rest = rest;
            if let RecordHead::Blank { .. } = head {
                continue;
            }
            return Some(decode_view(record, self.check_crc).inspect_err(|_| self.rest = &[]));
        }
    }
}

impl PullResult {
    /// The messages of the body, decoded in place (no body CRC check: the broker checked on write).
    pub fn records(&self) -> Records<'_> {
        self.records_checked(false)
    }

    /// As [`PullResult::records`], optionally verifying each body's CRC.
    pub fn records_checked(&self, check_crc: bool) -> Records<'_> {
        Records {
            rest: &self.body,
            check_crc,
        }
    }

    /// Reads a PULL_MESSAGE response.
    pub fn from_response(resp: RemotingCommand) -> Result<PullResult, ClientError> {
        let resp = expect_code(
            resp,
            &[
                response_code::SUCCESS,
                response_code::PULL_NOT_FOUND,
                response_code::PULL_RETRY_IMMEDIATELY,
                response_code::PULL_OFFSET_MOVED,
            ],
        )?;
        let status = match resp.code {
            response_code::SUCCESS => PullStatus::Found,
            response_code::PULL_NOT_FOUND => PullStatus::NoNewMessage,
            response_code::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMessage,
            _ => PullStatus::OffsetIllegal,
        };
        let header = PullMessageResponseHeader::from_ext_fields(&resp.ext_fields)?;
        Ok(PullResult {
            status,
            next_begin_offset: header.next_begin_offset,
            min_offset: header.min_offset,
            max_offset: header.max_offset,
            suggest_which_broker_id: header.suggest_which_broker_id,
            body: resp.body,
        })
    }
}

/// Options of one pull.
#[derive(Debug, Clone)]
pub struct PullOptions {
    pub max_msg_nums: i32,
    /// Long polling: let the broker hold the pull this long when the queue has nothing new.
    pub suspend: Option<Duration>,
    /// Piggy-back a commit of this offset (the Java push consumer's COMMIT_OFFSET flag).
    pub commit_offset: Option<i64>,
    /// Tag expression (`*` for all).
    pub subscription: String,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions {
            max_msg_nums: 32,
            suspend: None,
            commit_offset: None,
            subscription: SUB_ALL.to_owned(),
        }
    }
}

/// The PULL_MESSAGE command for a queue at `offset`.
pub fn pull_command(
    group: &str,
    queue: &MessageQueue,
    offset: i64,
    options: &PullOptions,
) -> RemotingCommand {
    let mut sys_flag = pull_sys_flag::SUBSCRIPTION;
    if options.suspend.is_some() {
        sys_flag |= pull_sys_flag::SUSPEND;
    }
    if options.commit_offset.is_some() {
        sys_flag |= pull_sys_flag::COMMIT_OFFSET;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: queue.topic.clone(),
        queue_id: queue.queue_id,
        queue_offset: offset,
        max_msg_nums: options.max_msg_nums,
        sys_flag,
        commit_offset: options.commit_offset.unwrap_or(0),
        suspend_timeout_millis: options
            .suspend
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        subscription: Some(options.subscription.clone()),
        sub_version: now_millis(),
        expression_type: Some("TAG".to_owned()),
        max_msg_bytes: None,
    };
    request(request_code::PULL_MESSAGE, header.to_ext_fields())
}

/// Pulls from a topic's queues for one consumer group.
pub struct PullConsumer {
    group: String,
    namesrv: NameServer,
    connections: BrokerConnections,
    routes: RefCell<HashMap<String, Rc<TopicRoute>>>,
    timeout: Duration,
}

impl PullConsumer {
    pub fn new(
        group: &str,
        namesrv: NameServer,
        connections: BrokerConnections,
        timeout: Duration,
    ) -> PullConsumer {
        PullConsumer {
            group: group.to_owned(),
            namesrv,
            connections,
            routes: RefCell::new(HashMap::new()),
            timeout,
        }
    }

    pub fn group(&self) -> &str {
        &self.group
    }

    pub async fn route(&self, topic: &str) -> Result<Rc<TopicRoute>, ClientError> {
        let cached = self.routes.borrow().get(topic).cloned();
        if let Some(route) = cached {
            return Ok(route);
        }
        let route = Rc::new(TopicRoute::new(
            topic,
            self.namesrv.topic_route(topic).await?,
        ));
        self.routes
            .borrow_mut()
            .insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// The readable queues of `topic`.
    pub async fn queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        Ok(self.route(topic).await?.read_queues().to_vec())
    }

    /// A connection to the master of the queue's broker group.
    pub async fn client_for(&self, queue: &MessageQueue) -> Result<Client, ClientError> {
        let route = self.route(&queue.topic).await?;
        let addr = route.master_addr(&queue.broker_name)?.to_owned();
        self.connections.get(&addr).await
    }

    /// Pulls from `queue` at `offset`. With `suspend`, the request timeout covers the broker's hold.
    pub async fn pull(
        &self,
        queue: &MessageQueue,
        offset: i64,
        options: &PullOptions,
    ) -> Result<PullResult, ClientError> {
        let client = self.client_for(queue).await?;
        let cmd = pull_command(&self.group, queue, offset, options);
        let timeout = self.timeout + options.suspend.unwrap_or(Duration::ZERO);
        PullResult::from_response(client.invoke(cmd, timeout).await?)
    }

    pub async fn committed_offset(&self, queue: &MessageQueue) -> Result<Option<i64>, ClientError> {
        let client = self.client_for(queue).await?;
        broker_api::query_consumer_offset(
            &client,
            &self.group,
            &queue.topic,
            queue.queue_id,
            self.timeout,
        )
        .await
    }

    pub async fn commit_offset(
        &self,
        queue: &MessageQueue,
        offset: i64,
        oneway: bool,
    ) -> Result<(), ClientError> {
        let client = self.client_for(queue).await?;
        broker_api::update_consumer_offset(
            &client,
            &self.group,
            &queue.topic,
            queue.queue_id,
            offset,
            oneway,
            self.timeout,
        )
        .await
    }

    pub async fn max_offset(&self, queue: &MessageQueue) -> Result<i64, ClientError> {
        let client = self.client_for(queue).await?;
        broker_api::max_offset(&client, &queue.topic, queue.queue_id, self.timeout).await
    }

    pub async fn min_offset(&self, queue: &MessageQueue) -> Result<i64, ClientError> {
        let client = self.client_for(queue).await?;
        broker_api::min_offset(&client, &queue.topic, queue.queue_id, self.timeout).await
    }

    /// Registers the group (a pull consumer subscribed to `topic` with `*`) with every master of the topic.
    pub async fn heartbeat(&self, topic: &str, client_id: &str) -> Result<(), ClientError> {
        let data = HeartbeatData {
            client_id: client_id.to_owned(),
            producer_data_set: vec![ProducerData {
                group_name: "CLIENT_INNER_PRODUCER".into(),
            }],
            consumer_data_set: vec![ConsumerData {
                group_name: self.group.clone(),
                consume_type: ConsumeType::ConsumeActively,
                message_model: MessageModel::Clustering,
                consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
                subscription_data_set: vec![SubscriptionData {
                    topic: topic.to_owned(),
                    sub_version: now_millis(),
                    ..SubscriptionData::default()
                }],
                unit_mode: false,
            }],
            ..HeartbeatData::default()
        };
        let route = self.route(topic).await?;
        for addr in route.master_addrs() {
            let client = self.connections.get(addr).await?;
            broker_api::heartbeat(&client, &data, self.timeout).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::message::record::{encode_blank, MessageRecord};

    fn record(offset: i64, body: &[u8]) -> Vec<u8> {
        MessageRecord {
            queue_id: 1,
            flag: 0,
            queue_offset: offset,
            physical_offset: offset * 100,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "127.0.0.1:5000".parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::copy_from_slice(body),
            topic: "T".into(),
            properties: "TAGS\u{1}A\u{2}".into(),
        }
        .to_vec()
        .unwrap()
    }

    fn response(code: i32, body: Vec<u8>) -> RemotingCommand {
        RemotingCommand::response(code, None)
            .with_ext("suggestWhichBrokerId", "0")
            .with_ext("nextBeginOffset", "2")
            .with_ext("minOffset", "0")
            .with_ext("maxOffset", "9")
            .with_body(body)
    }

    #[test]
    fn found_bodies_decode_into_records_skipping_blanks() {
        let mut body = record(0, b"first");
        encode_blank(16, &mut body).unwrap();
        body.extend(record(1, b"second"));
        let result = PullResult::from_response(response(response_code::SUCCESS, body)).unwrap();
        assert_eq!(result.status, PullStatus::Found);
        assert_eq!((result.next_begin_offset, result.max_offset), (2, 9));
        let records: Vec<_> = result
            .records_checked(true)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].body, b"first");
        assert_eq!(records[1].queue_offset, 1);
        assert_eq!(records[1].topic, "T");
    }

    #[test]
    fn a_torn_body_yields_an_error_then_stops() {
        let mut body = record(0, b"ok");
        let second = record(1, b"torn");
        body.extend_from_slice(&second[..second.len() - 3]);
        let result = PullResult::from_response(response(response_code::SUCCESS, body)).unwrap();
        let items: Vec<_> = result.records().collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(matches!(items[1], Err(RecordError::Truncated { .. })));
    }

    #[test]
    fn statuses_and_errors_follow_response_codes() {
        let status = |code| PullResult::from_response(response(code, Vec::new())).map(|r| r.status);
        assert_eq!(
            status(response_code::PULL_NOT_FOUND).unwrap(),
            PullStatus::NoNewMessage
        );
        assert_eq!(
            status(response_code::PULL_RETRY_IMMEDIATELY).unwrap(),
            PullStatus::NoMatchedMessage
        );
        assert_eq!(
            status(response_code::PULL_OFFSET_MOVED).unwrap(),
            PullStatus::OffsetIllegal
        );
        assert_eq!(
            status(response_code::SYSTEM_BUSY)
                .unwrap_err()
                .response_code(),
            Some(2)
        );
        let missing = PullResult::from_response(RemotingCommand::response(0, None));
        assert!(matches!(missing, Err(ClientError::Header(_))));
    }

    #[test]
    fn pull_command_sets_flags_like_the_java_consumer() {
        let q = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 2,
        };
        let opts = PullOptions {
            suspend: Some(Duration::from_secs(15)),
            commit_offset: Some(5),
            ..PullOptions::default()
        };
        let cmd = pull_command("g", &q, 7, &opts);
        let h = PullMessageRequestHeader::from_ext_fields(&cmd.ext_fields).unwrap();
        assert_eq!(
            (h.queue_id, h.queue_offset, h.max_msg_nums, h.commit_offset),
            (2, 7, 32, 5)
        );
        assert_eq!(
            h.sys_flag,
            pull_sys_flag::SUBSCRIPTION | pull_sys_flag::SUSPEND | pull_sys_flag::COMMIT_OFFSET
        );
        assert_eq!(h.suspend_timeout_millis, 15_000);
        assert_eq!(h.subscription.as_deref(), Some("*"));
    }
}

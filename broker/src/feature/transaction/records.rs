//! The records and commands of a transaction: the real message a commit makes visible, the op message
//! that marks a half message resolved, the renewed copy of a half message after a check, and the
//! CHECK_TRANSACTION_STATE request sent to a producer.

use std::net::SocketAddr;

use bytes::Bytes;
use protocol::header::{CheckTransactionStateRequestHeader, CommandHeader};
use protocol::message::msgid;
use protocol::message::properties;
use protocol::message::record::{sys_flag, MessageRecord, RecordView};
use protocol::{request_code, RemotingCommand};

use crate::state::topics::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};

/// RocketMQ's property naming the queue offset of the first half message of a transaction, carried by
/// renewed copies so every copy resolves the same transaction.
pub const PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
/// Tag of op messages (RocketMQ's TransactionalMessageUtil.REMOVETAG).
pub const OP_REMOVE_TAG: &str = "d";
/// Internal ext field naming the producer group of a check request on its way to shard 0.
pub const CHECK_GROUP_FIELD: &str = "producerGroup";

/// A half message as read from the half queue.
#[derive(Debug, Clone)]
pub struct HalfMessage {
    pub record: MessageRecord,
    /// Queue offset of the transaction's first half message (the op set key).
    pub origin: i64,
    pub check_times: u32,
    pub producer_group: Option<String>,
    pub immunity_s: Option<i64>,
}

impl HalfMessage {
    /// Reads a stored half message; None when the record is not one.
    pub fn from_view(view: &RecordView<'_>) -> Option<HalfMessage> {
        if view.topic != TRANS_HALF_TOPIC {
            return None;
        }
        let props = view.properties;
        let origin = properties::get(props, PREPARED_QUEUE_OFFSET)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(view.queue_offset);
        let check_times = properties::get(props, properties::TRANSACTION_CHECK_TIMES)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let immunity_s = properties::get(props, properties::CHECK_IMMUNITY_TIME_IN_SECONDS)
            .and_then(|v| v.trim().parse::<i64>().ok());
        Some(HalfMessage {
            record: view.to_owned_record(),
            origin,
            check_times,
            producer_group: properties::get(props, properties::PRODUCER_GROUP).map(str::to_owned),
            immunity_s,
        })
    }

    pub fn real_topic(&self) -> Option<&str> {
        properties::get(&self.record.properties, properties::REAL_TOPIC).filter(|t| !t.is_empty())
    }

    pub fn real_queue_id(&self) -> Option<i32> {
        properties::get(&self.record.properties, properties::REAL_QUEUE_ID)
            .and_then(|q| q.trim().parse::<i32>().ok())
            .filter(|q| *q >= 0)
    }

    /// The message a commit stores on its real queue: real topic and queue back, transaction type
    /// COMMIT, the half message's commit-log offset as its prepared transaction offset.
    pub fn committed(&self) -> Result<MessageRecord, String> {
        let topic = self
            .real_topic()
            .ok_or("the half message has no REAL_TOPIC property")?
            .to_owned();
        let queue_id = self
            .real_queue_id()
            .ok_or("the half message has no valid REAL_QID property")?;
        let mut props = self.record.properties.clone();
        for key in [
            properties::REAL_TOPIC,
            properties::REAL_QUEUE_ID,
            PREPARED_QUEUE_OFFSET,
            properties::TRANSACTION_CHECK_TIMES,
        ] {
            props = properties::without(&props, key);
        }
        Ok(MessageRecord {
            topic,
            queue_id,
            sys_flag: sys_flag::with_transaction_type(
                self.record.sys_flag,
                sys_flag::TRANSACTION_COMMIT,
            ),
            prepared_transaction_offset: self.record.physical_offset,
            properties: props,
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
            ..self.record.clone()
        })
    }

    /// A copy to append to the half queue after a check, counting the checks so far.
    pub fn renewed(&self, check_times: u32) -> MessageRecord {
        let mut props = properties::with(
            &self.record.properties,
            properties::TRANSACTION_CHECK_TIMES,
            &check_times.to_string(),
        );
        props = properties::with(&props, PREPARED_QUEUE_OFFSET, &self.origin.to_string());
        MessageRecord {
            properties: props,
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
            ..self.record.clone()
        }
    }

    /// CHECK_TRANSACTION_STATE for this (stored) half message: the body is the message with its real
    /// topic and queue, as the client's decoder expects; the header names its commit-log and queue
    /// offsets, which the producer's END_TRANSACTION sends back.
    pub fn check_request(&self, store_host: SocketAddr) -> Result<RemotingCommand, String> {
        let uniq =
            properties::get(&self.record.properties, properties::UNIQ_KEY).map(str::to_owned);
        let mut shown = self.record.clone();
        if let (Some(topic), Some(queue_id)) = (self.real_topic(), self.real_queue_id()) {
            shown.topic = topic.to_owned();
            shown.queue_id = queue_id;
        }
        let body = shown
            .to_vec()
            .map_err(|e| format!("cannot encode the half message: {e}"))?;
        let header = CheckTransactionStateRequestHeader {
            topic: Some(shown.topic.clone()),
            tran_state_table_offset: self.record.queue_offset,
            commit_log_offset: self.record.physical_offset,
            msg_id: uniq.clone(),
            transaction_id: uniq,
            offset_msg_id: Some(msgid::offset_msg_id(
                store_host,
                self.record.physical_offset,
            )),
        };
        let mut cmd = RemotingCommand::request(request_code::CHECK_TRANSACTION_STATE)
            .with_ext_fields(header.to_ext_fields())
            .with_body(Bytes::from(body));
        cmd.mark_oneway();
        if let Some(group) = &self.producer_group {
            cmd.set_ext(CHECK_GROUP_FIELD, group);
        }
        Ok(cmd)
    }
}

/// The op message recording that the transaction whose first half message is at `origin` is resolved.
pub fn op_record(origin: i64, store_host: SocketAddr, now_ms: i64) -> MessageRecord {
    let mut props = String::new();
    properties::push(&mut props, properties::TAGS, OP_REMOVE_TAG);
    MessageRecord {
        topic: TRANS_OP_HALF_TOPIC.to_owned(),
        queue_id: 0,
        body: Bytes::from(origin.to_string()),
        properties: props,
        born_timestamp: now_ms,
        born_host: store_host,
        store_host,
        ..MessageRecord::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::message::record::decode_view;

    fn half(props: &[(&str, &str)], queue_offset: i64) -> Vec<u8> {
        let record = MessageRecord {
            topic: TRANS_HALF_TOPIC.into(),
            queue_offset,
            physical_offset: 4096,
            body: Bytes::from_static(b"payload"),
            properties: properties::encode(props.iter().copied()),
            ..MessageRecord::default()
        };
        record.to_vec().unwrap()
    }

    #[test]
    fn commit_restores_the_real_queue_and_drops_the_bookkeeping() {
        let bytes = half(
            &[
                ("REAL_TOPIC", "Orders"),
                ("REAL_QID", "3"),
                ("PGROUP", "pg"),
                ("UNIQ_KEY", "U1"),
                ("TRAN_MSG", "true"),
            ],
            5,
        );
        let view = decode_view(&bytes, true).unwrap();
        let msg = HalfMessage::from_view(&view).unwrap();
        assert_eq!(msg.origin, 5);
        assert_eq!(msg.check_times, 0);
        assert_eq!(msg.producer_group.as_deref(), Some("pg"));
        let real = msg.committed().unwrap();
        assert_eq!(real.topic, "Orders");
        assert_eq!(real.queue_id, 3);
        assert_eq!(
            sys_flag::transaction_type(real.sys_flag),
            sys_flag::TRANSACTION_COMMIT
        );
        assert_eq!(real.prepared_transaction_offset, 4096);
        assert_eq!(properties::get(&real.properties, "REAL_TOPIC"), None);
        assert_eq!(properties::get(&real.properties, "UNIQ_KEY"), Some("U1"));
        assert_eq!(&real.body[..], b"payload");
    }

    #[test]
    fn a_renewed_copy_keeps_its_origin_and_counts_checks() {
        let bytes = half(&[("REAL_TOPIC", "T"), ("REAL_QID", "0")], 9);
        let view = decode_view(&bytes, true).unwrap();
        let msg = HalfMessage::from_view(&view).unwrap();
        let mut copy = msg.renewed(1);
        copy.queue_offset = 20;
        let copy_bytes = copy.to_vec().unwrap();
        let copy_view = decode_view(&copy_bytes, true).unwrap();
        let again = HalfMessage::from_view(&copy_view).unwrap();
        assert_eq!(again.origin, 9, "a copy resolves its first half message");
        assert_eq!(again.check_times, 1);
        assert_eq!(
            again
                .renewed(2)
                .properties
                .matches("TRANSACTION_CHECK_TIMES")
                .count(),
            1
        );
    }

    #[test]
    fn bad_half_messages_are_refused() {
        let bytes = half(&[("REAL_QID", "x")], 1);
        let view = decode_view(&bytes, true).unwrap();
        let msg = HalfMessage::from_view(&view).unwrap();
        assert!(msg.committed().is_err());
        let other = MessageRecord {
            topic: "NotHalf".into(),
            ..MessageRecord::default()
        }
        .to_vec()
        .unwrap();
        assert!(HalfMessage::from_view(&decode_view(&other, true).unwrap()).is_none());
    }

    #[test]
    fn the_check_request_shows_the_real_topic() {
        let bytes = half(
            &[
                ("REAL_TOPIC", "Orders"),
                ("REAL_QID", "1"),
                ("UNIQ_KEY", "U7"),
                ("PGROUP", "pg"),
            ],
            2,
        );
        let view = decode_view(&bytes, true).unwrap();
        let msg = HalfMessage::from_view(&view).unwrap();
        let cmd = msg
            .check_request("127.0.0.1:10911".parse().unwrap())
            .unwrap();
        assert!(cmd.is_oneway());
        assert_eq!(cmd.ext("commitLogOffset"), Some("4096"));
        assert_eq!(cmd.ext("tranStateTableOffset"), Some("2"));
        assert_eq!(cmd.ext("transactionId"), Some("U7"));
        let shown = decode_view(&cmd.body, true).unwrap();
        assert_eq!(shown.topic, "Orders");
        assert_eq!(shown.queue_id, 1);
        let op = op_record(2, "127.0.0.1:1".parse().unwrap(), 5);
        assert_eq!(super::super::op_set::parse_op_body(&op.body), Some(2));
    }
}

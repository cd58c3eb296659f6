//! RocketMQ 5's POP consumption over remoting, as Apache's Java client speaks it to a broker:
//! POP_MESSAGE (receipt handles rebuilt from the response's offset infos, as `processPopResponse`
//! does), ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use protocol::body::{BatchAck, BatchAckMessageRequestBody};
use protocol::header::extra_info::{
    info_key, info_offset_key, parse_msg_offset_info, parse_order_count_info,
    parse_start_offset_info, ExtraInfo,
};
use protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    CommandHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use protocol::{request_code, response_code, ExtFields};
use remoting::Client;

use crate::error::ClientError;
use crate::request::{expect_code, expect_success, request};
use crate::uniq_key::now_millis;

/// What a pop asks for.
#[derive(Debug, Clone)]
pub struct PopOptions {
    /// -1: any queue of the broker.
    pub queue_id: i32,
    pub max_msg_nums: i32,
    pub invisible_time: Duration,
    /// How long the broker may hold the pop when nothing is there.
    pub poll_time: Duration,
    /// `consume_init_mode::MIN` or `MAX`.
    pub init_mode: i32,
    pub order: bool,
    /// Tag expression (`*` for all).
    pub expression: String,
}

impl Default for PopOptions {
    fn default() -> Self {
        PopOptions {
            queue_id: -1,
            max_msg_nums: 32,
            invisible_time: Duration::from_secs(60),
            poll_time: Duration::ZERO,
            init_mode: protocol::header::consume_init_mode::MIN,
            order: false,
            expression: "*".to_owned(),
        }
    }
}

/// A popped message with its receipt handle.
#[derive(Debug, Clone)]
pub struct PoppedMessage {
    /// The topic the consumer asked for (also for messages of its retry topic).
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    /// Deliveries before this one.
    pub reconsume_times: i32,
    pub body: Bytes,
    pub properties: String,
    /// The receipt handle (`extraInfo`).
    pub handle: ExtraInfo,
}

impl PoppedMessage {
    pub fn property(&self, key: &str) -> Option<&str> {
        properties::get(&self.properties, key)
    }

    /// The topic the message really is in now (the pop retry topic for a retried message).
    pub fn real_topic(&self, group: &str) -> String {
        self.handle.retry.real_topic(&self.topic, group)
    }

    /// The queue of the real topic the handle names.
    pub fn real_queue_id(&self) -> i32 {
        self.handle.queue_id
    }

    /// The message's offset in its real queue.
    pub fn real_offset(&self) -> i64 {
        self.handle.queue_offset.unwrap_or(self.queue_offset)
    }
}

/// The answer to one pop.
#[derive(Debug, Clone)]
pub struct PopResult {
    /// SUCCESS or POLLING_TIMEOUT (nothing there within the poll time).
    pub code: i32,
    pub messages: Vec<PoppedMessage>,
    pub rest_num: i64,
    pub pop_time: i64,
}

/// POP_MESSAGE on one broker; `broker_name` goes into the receipt handles.
pub async fn pop(
    client: &Client,
    broker_name: &str,
    group: &str,
    topic: &str,
    options: &PopOptions,
    timeout: Duration,
) -> Result<PopResult, ClientError> {
    let header = PopMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id: options.queue_id,
        max_msg_nums: options.max_msg_nums,
        invisible_time: options.invisible_time.as_millis() as i64,
        poll_time: options.poll_time.as_millis() as i64,
        born_time: now_millis(),
        init_mode: options.init_mode,
        exp_type: Some("TAG".to_owned()),
        exp: Some(options.expression.clone()),
        order: Some(options.order),
        attempt_id: None,
    };
    let cmd = request(request_code::POP_MESSAGE, header.to_ext_fields());
    let resp = client.invoke(cmd, timeout + options.poll_time).await?;
    let resp = expect_code(
        resp,
        &[
            response_code::SUCCESS,
            response_code::POLLING_TIMEOUT,
            response_code::PULL_NOT_FOUND,
        ],
    )?;
    let rh = PopMessageResponseHeader::from_ext_fields(&resp.ext_fields)?;
    let mut result = PopResult {
        code: resp.code,
        messages: Vec::new(),
        rest_num: rh.rest_num,
        pop_time: rh.pop_time,
    };
    if resp.code != response_code::SUCCESS {
        return Ok(result);
    }
    let bad = |why: String| ClientError::Invalid(format!("pop response: {why}"));
    let starts =
        parse_start_offset_info(rh.start_offset_info.as_deref().unwrap_or("")).map_err(bad)?;
    let offsets =
        parse_msg_offset_info(rh.msg_offset_info.as_deref().unwrap_or("")).map_err(bad)?;
    let counts: HashMap<String, i32> =
        parse_order_count_info(rh.order_count_info.as_deref().unwrap_or("")).map_err(bad)?;
    let mut pos = 0;
    while pos < resp.body.len() {
        let (record, len) = MessageRecord::decode(resp.body.get(pos..).unwrap_or(&[]), false)?;
        pos += len;
        let handle = match properties::get(&record.properties, properties::POP_CK) {
            Some(ck) => ExtraInfo::parse(ck).map_err(|e| bad(e.to_string()))?,
            None => {
                let key = info_key(&record.topic, record.queue_id);
                let start = starts
                    .get(&key)
                    .copied()
                    .ok_or_else(|| bad(format!("no startOffsetInfo for {key}")))?;
                if !offsets
                    .get(&key)
                    .is_some_and(|o| o.contains(&record.queue_offset))
                {
                    return Err(bad(format!(
                        "offset {} of {key} not in msgOffsetInfo",
                        record.queue_offset
                    )));
                }
                ExtraInfo {
                    ck_queue_offset: start,
                    pop_time: rh.pop_time,
                    invisible_time: rh.invisible_time,
                    revive_qid: rh.revive_qid,
                    retry: protocol::header::extra_info::RetryMark::of_topic(&record.topic),
                    broker_name: broker_name.to_owned(),
                    queue_id: record.queue_id,
                    queue_offset: Some(record.queue_offset),
                }
            }
        };
        let mut reconsume_times = record.reconsume_times;
        if options.order {
            let count = counts
                .get(&info_offset_key(
                    &record.topic,
                    record.queue_id,
                    record.queue_offset,
                ))
                .or_else(|| counts.get(&info_key(&record.topic, record.queue_id)));
            if let Some(c) = count.filter(|c| **c > 0) {
                reconsume_times = *c;
            }
        }
        result.messages.push(PoppedMessage {
            topic: record.topic,
            queue_id: record.queue_id,
            queue_offset: record.queue_offset,
            reconsume_times,
            body: record.body,
            properties: record.properties,
            handle,
        });
    }
    Ok(result)
}

/// ACK_MESSAGE of one popped message.
pub async fn ack(
    client: &Client,
    group: &str,
    msg: &PoppedMessage,
    timeout: Duration,
) -> Result<(), ClientError> {
    let header = AckMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: msg.real_topic(group),
        queue_id: msg.real_queue_id(),
        extra_info: msg.handle.to_string(),
        offset: msg.real_offset(),
    };
    let resp = client
        .invoke(
            request(request_code::ACK_MESSAGE, header.to_ext_fields()),
            timeout,
        )
        .await?;
    expect_success(resp).map(|_| ())
}

/// BATCH_ACK_MESSAGE of popped messages (one `BatchAck` per check point).
pub async fn batch_ack(
    client: &Client,
    broker_name: &str,
    group: &str,
    msgs: &[&PoppedMessage],
    timeout: Duration,
) -> Result<(), ClientError> {
    let mut acks: Vec<BatchAck> = Vec::new();
    for m in msgs {
        let h = &m.handle;
        let bit = u32::try_from(m.real_offset() - h.ck_queue_offset)
            .map_err(|_| ClientError::Invalid("offset before its check point".into()))?;
        let same = acks.iter_mut().find(|a| {
            a.topic == m.topic
                && a.retry == h.retry.as_str()
                && a.queue_id == h.queue_id
                && a.start_offset == h.ck_queue_offset
                && a.pop_time == h.pop_time
        });
        match same {
            Some(a) => a.bit_set.push(bit),
            None => acks.push(BatchAck {
                consumer_group: group.to_owned(),
                topic: m.topic.clone(),
                retry: h.retry.as_str().to_owned(),
                start_offset: h.ck_queue_offset,
                queue_id: h.queue_id,
                revive_queue_id: h.revive_qid,
                pop_time: h.pop_time,
                invisible_time: h.invisible_time,
                bit_set: vec![bit],
            }),
        }
    }
    let body = BatchAckMessageRequestBody {
        broker_name: Some(broker_name.to_owned()),
        acks,
    };
    let json = serde_json::to_vec(&body).map_err(|e| ClientError::Invalid(e.to_string()))?;
    let cmd =
        request(request_code::BATCH_ACK_MESSAGE, ExtFields::new()).with_body(Bytes::from(json));
    expect_success(client.invoke(cmd, timeout).await?).map(|_| ())
}

/// CHANGE_MESSAGE_INVISIBLETIME: the message stays invisible `invisible_time` from now; its receipt
/// handle is updated to the new one.
pub async fn change_invisible_time(
    client: &Client,
    group: &str,
    msg: &mut PoppedMessage,
    invisible_time: Duration,
    timeout: Duration,
) -> Result<(), ClientError> {
    let header = ChangeInvisibleTimeRequestHeader {
        consumer_group: group.to_owned(),
        topic: msg.real_topic(group),
        queue_id: msg.real_queue_id(),
        extra_info: msg.handle.to_string(),
        offset: msg.real_offset(),
        invisible_time: invisible_time.as_millis() as i64,
    };
    let cmd = request(
        request_code::CHANGE_MESSAGE_INVISIBLETIME,
        header.to_ext_fields(),
    );
    let resp = expect_success(client.invoke(cmd, timeout).await?)?;
    let rh = ChangeInvisibleTimeResponseHeader::from_ext_fields(&resp.ext_fields)?;
    let offset = msg.real_offset();
    if !msg.handle.is_order() {
        // The new check point holds this message alone, starting at it.
        msg.handle.ck_queue_offset = offset;
    }
    msg.handle.pop_time = rh.pop_time;
    msg.handle.invisible_time = rh.invisible_time;
    msg.handle.revive_qid = rh.revive_qid;
    msg.handle.queue_offset = Some(offset);
    Ok(())
}

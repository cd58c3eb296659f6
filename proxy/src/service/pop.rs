//! ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue on the
//! brokers' POP: POP_MESSAGE from the assigned broker (queue -1: any of its queues), each message's
//! receipt handle rebuilt from the response header as RocketMQ's client does; acks and invisible-time
//! changes go to the broker the handle names, on the real topic (the pop retry topic for retries).
//! A group with `consumeMessageOrderly` pops in order (the broker holds a queue until its popped
//! messages are acked); an ordered message past the group's max attempts goes to `%DLQ%group` here,
//! as Apache's proxy does, since the broker keeps retrying ordered messages.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use protocol::body::{to_json, BatchAck, BatchAckMessageRequestBody};
use protocol::header::extra_info::{
    info_key, info_offset_key, parse_order_count_info, parse_start_offset_info, ExtraInfo,
    RetryMark,
};
use protocol::header::{
    consume_init_mode, AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader, CommandHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
use protocol::message::properties::{self, POP_CK};
use protocol::message::record::decode_view;
use protocol::{request_code, response_code, RemotingCommand};

use super::caller::Caller;
use super::resource::topic_name;
use super::receipt::ReceiptHandle;
use super::send::now_ms;
use crate::convert::{duration_ms, to_sdk_message};
use crate::pb::*;
use crate::state::Proxy;
use crate::status::{ok, status, ProxyError};

/// Invisible time when the SDK sets none (push consumers renew it themselves): Apache's default.
const DEFAULT_INVISIBLE_MS: i64 = 60_000;
/// Longest a POP may be held at the broker.
const MAX_POLL_MS: i64 = 30_000;

fn group_name(group: &Option<Resource>) -> Result<String, ProxyError> {
    group
        .as_ref()
        .map(|g| g.name.clone())
        .filter(|g| !g.is_empty())
        .ok_or_else(|| ProxyError::Code(Code::IllegalConsumerGroup, "group is required".into()))
}

fn check_invisible(proxy: &Proxy, ms: i64) -> Result<(), ProxyError> {
    let min = i64::try_from(proxy.cfg.min_invisible_time.as_millis()).unwrap_or(i64::MAX);
    if ms < min {
        return Err(ProxyError::Code(
            Code::IllegalInvisibleTime,
            format!("invisible duration {ms} ms is under the minimum of {min} ms"),
        ));
    }
    Ok(())
}

/// The responses of one ReceiveMessage call: a status, then the messages (Apache's order).
pub async fn receive_message(
    proxy: &Proxy,
    caller: &Caller,
    req: ReceiveMessageRequest,
) -> Result<Vec<ReceiveMessageResponse>, ProxyError> {
    let group = group_name(&req.group)?;
    let mq = req
        .message_queue
        .as_ref()
        .ok_or_else(|| ProxyError::BadRequest("message_queue is required".into()))?;
    let topic = topic_name(&mq.topic)?.to_owned();
    let broker_name = mq
        .broker
        .as_ref()
        .map(|b| b.name.clone())
        .ok_or_else(|| ProxyError::BadRequest("message_queue.broker is required".into()))?;
    let invisible_ms = req
        .invisible_duration
        .as_ref()
        .map(duration_ms)
        .unwrap_or(DEFAULT_INVISIBLE_MS);
    check_invisible(proxy, invisible_ms)?;
    let batch = req.batch_size.clamp(1, 32);
    let poll_ms = req
        .long_polling_timeout
        .as_ref()
        .map(duration_ms)
        .unwrap_or(0)
        .clamp(0, MAX_POLL_MS);
    let (exp_type, exp) = match &req.filter_expression {
        Some(f) if f.r#type == FilterType::Sql as i32 => ("SQL92", f.expression.clone()),
        Some(f) if !f.expression.is_empty() => ("TAG", f.expression.clone()),
        _ => ("TAG", "*".to_string()),
    };
    let addr = proxy
        .routes
        .master_of(&proxy.pool, &topic, &broker_name)
        .await?;
    let group_settings = proxy
        .groups
        .get(&proxy.pool, &addr, &group, caller.creds.as_ref())
        .await?;
    let fifo = group_settings.consume_message_orderly;
    let header = PopMessageRequestHeader {
        consumer_group: group.clone(),
        topic: topic.clone(),
        // Any queue of the broker, whatever queue the SDK named (the Python SDK names route queues,
        // the Java SDK the assignment's -1): one pop then serves every queue with messages.
        queue_id: -1,
        max_msg_nums: batch,
        invisible_time: invisible_ms,
        poll_time: poll_ms,
        born_time: now_ms(),
        // A new group starts at the queues' first messages, as Apache's broker does while they are in memory.
        init_mode: consume_init_mode::MIN,
        exp_type: Some(exp_type.to_string()),
        exp: Some(exp),
        order: Some(fifo),
        attempt_id: req.attempt_id.clone(),
    };
    let cmd =
        RemotingCommand::request(request_code::POP_MESSAGE).with_ext_fields(header.to_ext_fields());
    let timeout = proxy.pool.timeout + Duration::from_millis(u64::try_from(poll_ms).unwrap_or(0));
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), Some(timeout))
        .await?;
    let not_found = || {
        vec![ReceiveMessageResponse {
            content: Some(receive_message_response::Content::Status(status(
                Code::MessageNotFound,
                "no new message",
            ))),
        }]
    };
    match resp.code {
        response_code::SUCCESS => {}
        response_code::PULL_NOT_FOUND
        | response_code::POLLING_TIMEOUT
        | response_code::NO_MESSAGE => return Ok(not_found()),
        response_code::POLLING_FULL => {
            return Err(ProxyError::Code(
                Code::TooManyRequests,
                format!("broker {broker_name}: too many pops waiting"),
            ))
        }
        _ => return Err(ProxyError::from_remoting(&resp, "receive message")),
    }
    let head = PopMessageResponseHeader::from_ext_fields(&resp.ext_fields)
        .map_err(|e| ProxyError::Internal(format!("bad POP response header: {e}")))?;
    let start_info = parse_start_offset_info(head.start_offset_info.as_deref().unwrap_or(""))
        .map_err(|e| ProxyError::Internal(format!("bad startOffsetInfo: {e}")))?;
    // An ordered pop counts deliveries here, not in the stored message's reconsumeTimes.
    let order_counts = parse_order_count_info(head.order_count_info.as_deref().unwrap_or(""))
        .map_err(|e| ProxyError::Internal(format!("bad orderCountInfo: {e}")))?;

    // The status, then when the messages left the proxy (SDKs measure delivery latency from it),
    // then the messages.
    let mut out = vec![
        ReceiveMessageResponse {
            content: Some(receive_message_response::Content::Status(ok())),
        },
        ReceiveMessageResponse {
            content: Some(receive_message_response::Content::DeliveryTimestamp(
                crate::convert::ms_timestamp(now_ms()),
            )),
        },
    ];
    let mut body: &[u8] = &resp.body;
    while !body.is_empty() {
        let view = decode_view(body, false)
            .map_err(|e| ProxyError::Internal(format!("bad message in POP response: {e}")))?;
        let Some(rest) = body.get(view.total_size..) else {
            break;
        };
        body = rest;
        let extra_info = match properties::get(view.properties, POP_CK) {
            Some(ck) => ExtraInfo::parse(ck)
                .map_err(|e| ProxyError::Internal(format!("bad POP_CK from broker: {e}")))?,
            None => ExtraInfo {
                ck_queue_offset: start_info
                    .get(&info_key(view.topic, view.queue_id))
                    .copied()
                    .unwrap_or(view.queue_offset),
                pop_time: head.pop_time,
                invisible_time: head.invisible_time,
                revive_qid: head.revive_qid,
                retry: RetryMark::of_topic(view.topic),
                broker_name: broker_name.clone(),
                queue_id: view.queue_id,
                queue_offset: Some(view.queue_offset),
            },
        };
        let handle = ReceiptHandle {
            extra_info,
            commit_log_offset: view.physical_offset,
        };
        let mut reconsume_times = view.reconsume_times;
        if fifo {
            // As RocketMQ's client reads it: the message's own count, else its queue's.
            let count = order_counts
                .get(&info_offset_key(
                    view.topic,
                    view.queue_id,
                    view.queue_offset,
                ))
                .or_else(|| order_counts.get(&info_key(view.topic, view.queue_id)));
            if let Some(c) = count.filter(|c| **c > 0) {
                reconsume_times = *c;
            }
        }
        let handle_text = handle.encode();
        let mut msg = to_sdk_message(
            &view,
            Some(handle_text.clone()),
            Some(invisible_ms),
            &caller.namespace,
        )?;
        // A retried message is stored in the pop retry topic; the consumer asked for the topic itself.
        if let Some(t) = msg.topic.as_mut() {
            t.name = topic.clone();
        }
        if let Some(sp) = msg.system_properties.as_mut() {
            sp.delivery_attempt = Some(reconsume_times.saturating_add(1));
        }
        if fifo && reconsume_times >= group_settings.max_attempts() {
            // Delivered max-attempts times and never acked: dead-lettered and acked, which also lets
            // the queue's next messages out. On failure it stays unacked and comes back later.
            let id = msg
                .system_properties
                .as_ref()
                .map(|sp| sp.message_id.clone())
                .unwrap_or_default();
            let max = group_settings.max_attempts();
            match dead_letter(proxy, caller, &group, &topic, &handle_text, &id, max).await {
                Ok(()) => tracing::info!(
                    "{group}/{topic}: ordered message {id} delivered {reconsume_times} times, \
                     sent to the dead-letter queue"
                ),
                Err(e) => tracing::warn!(
                    "{group}/{topic}: ordered message {id} not sent to the dead-letter queue: {e}"
                ),
            }
            continue;
        }
        out.push(ReceiveMessageResponse {
            content: Some(receive_message_response::Content::Message(msg)),
        });
    }
    tracing::debug!(
        "POP {group}/{topic} at {broker_name}: {} messages, startOffsetInfo {:?}",
        out.len() - 2,
        head.start_offset_info
    );
    if out.len() == 2 {
        return Ok(not_found());
    }
    proxy
        .metrics
        .messages_received
        .fetch_add((out.len() - 2) as u64, Ordering::Relaxed);
    Ok(out)
}

async fn ack_one(
    proxy: &Proxy,
    caller: &Caller,
    group: &str,
    topic: &str,
    handle: &str,
) -> Result<(), ProxyError> {
    let h = ReceiptHandle::decode(handle)?;
    let real_topic = h.extra_info.retry.real_topic(topic, group);
    let addr = proxy
        .routes
        .master_of(&proxy.pool, topic, &h.extra_info.broker_name)
        .await?;
    let header = AckMessageRequestHeader {
        consumer_group: group.to_string(),
        topic: real_topic,
        queue_id: h.extra_info.queue_id,
        extra_info: h.extra_info.to_string(),
        offset: h.queue_offset(),
    };
    let cmd =
        RemotingCommand::request(request_code::ACK_MESSAGE).with_ext_fields(header.to_ext_fields());
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(&resp, "ack"));
    }
    proxy.metrics.messages_acked.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

pub async fn ack_message(
    proxy: &Proxy,
    caller: &Caller,
    req: AckMessageRequest,
) -> Result<AckMessageResponse, ProxyError> {
    let group = group_name(&req.group)?;
    let topic = topic_name(&req.topic)?.to_owned();
    let statuses = if req.entries.len() == 1 {
        let mut one = Vec::new();
        for e in &req.entries {
            one.push(
                match ack_one(proxy, caller, &group, &topic, &e.receipt_handle).await {
                    Ok(()) => ok(),
                    Err(err) => err.status(),
                },
            );
        }
        one
    } else {
        batch_ack(proxy, caller, &group, &topic, &req.entries).await
    };
    let entries: Vec<AckMessageResultEntry> = req
        .entries
        .iter()
        .zip(statuses)
        .map(|(e, status)| AckMessageResultEntry {
            message_id: e.message_id.clone(),
            receipt_handle: e.receipt_handle.clone(),
            status: Some(status),
        })
        .collect();
    let all_ok = entries
        .iter()
        .all(|e| e.status.as_ref().is_some_and(|s| s.code == Code::Ok as i32));
    let overall = if all_ok {
        ok()
    } else if entries.len() == 1 {
        entries
            .first()
            .and_then(|e| e.status.clone())
            .unwrap_or_else(ok)
    } else {
        status(Code::MultipleResults, "some acks failed")
    };
    Ok(AckMessageResponse {
        status: Some(overall),
        entries,
    })
}

/// Several acks in one BATCH_ACK_MESSAGE per broker (RocketMQ's BatchAck: per check point, the acked
/// offsets as a bit set over its start offset). The statuses are in the entries' order.
async fn batch_ack(
    proxy: &Proxy,
    caller: &Caller,
    group: &str,
    topic: &str,
    entries: &[AckMessageEntry],
) -> Vec<Status> {
    let mut statuses: Vec<Option<Status>> = vec![None; entries.len()];
    let mut by_broker: BTreeMap<String, BTreeMap<CheckPoint, Acked>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        let h = match ReceiptHandle::decode(&e.receipt_handle) {
            Ok(h) => h,
            Err(err) => {
                if let Some(s) = statuses.get_mut(i) {
                    *s = Some(err.status());
                }
                continue;
            }
        };
        let x = &h.extra_info;
        let bit = u32::try_from(h.queue_offset().saturating_sub(x.ck_queue_offset));
        let Ok(bit) = bit
            .map_err(|_| ())
            .and_then(|b| if b < 65_536 { Ok(b) } else { Err(()) })
        else {
            if let Some(s) = statuses.get_mut(i) {
                *s = Some(status(
                    Code::InvalidReceiptHandle,
                    "queue offset outside its check point",
                ));
            }
            continue;
        };
        let ck = CheckPoint {
            retry: x.retry.as_str(),
            queue_id: x.queue_id,
            start_offset: x.ck_queue_offset,
            revive_qid: x.revive_qid,
            pop_time: x.pop_time,
            invisible_time: x.invisible_time,
        };
        let slot = by_broker
            .entry(x.broker_name.clone())
            .or_default()
            .entry(ck)
            .or_default();
        slot.0.push(i);
        slot.1.push(bit);
    }
    for (broker_name, cks) in by_broker {
        let indexes: Vec<usize> = cks
            .values()
            .flat_map(|(ix, _)| ix.iter().copied())
            .collect();
        let body = BatchAckMessageRequestBody {
            broker_name: Some(broker_name.clone()),
            acks: cks
                .into_iter()
                .map(|(ck, (_, bits))| BatchAck {
                    consumer_group: group.to_string(),
                    topic: topic.to_string(),
                    retry: ck.retry.to_string(),
                    start_offset: ck.start_offset,
                    queue_id: ck.queue_id,
                    revive_queue_id: ck.revive_qid,
                    pop_time: ck.pop_time,
                    invisible_time: ck.invisible_time,
                    bit_set: bits,
                })
                .collect(),
        };
        let result = async {
            let addr = proxy
                .routes
                .master_of(&proxy.pool, topic, &broker_name)
                .await?;
            let cmd =
                RemotingCommand::request(request_code::BATCH_ACK_MESSAGE).with_body(to_json(&body));
            let resp = proxy
                .pool
                .invoke(&addr, cmd, caller.creds.as_ref(), None)
                .await?;
            if resp.code != response_code::SUCCESS {
                return Err(ProxyError::from_remoting(&resp, "batch ack"));
            }
            Ok(())
        }
        .await;
        let st = match result {
            Ok(()) => {
                proxy
                    .metrics
                    .messages_acked
                    .fetch_add(indexes.len() as u64, Ordering::Relaxed);
                ok()
            }
            Err(e) => e.status(),
        };
        for i in indexes {
            if let Some(s) = statuses.get_mut(i) {
                *s = Some(st.clone());
            }
        }
    }
    statuses
        .into_iter()
        .map(|s| s.unwrap_or_else(|| status(Code::InternalServerError, "entry not acked")))
        .collect()
}

/// Of one check point: the indexes of the entries acked and their offsets' bits.
type Acked = (Vec<usize>, Vec<u32>);

/// The fields of a receipt handle that name its check point at the broker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CheckPoint {
    retry: &'static str,
    queue_id: i32,
    start_offset: i64,
    revive_qid: i32,
    pop_time: i64,
    invisible_time: i64,
}

pub async fn change_invisible_duration(
    proxy: &Proxy,
    caller: &Caller,
    req: ChangeInvisibleDurationRequest,
) -> Result<ChangeInvisibleDurationResponse, ProxyError> {
    let group = group_name(&req.group)?;
    let topic = topic_name(&req.topic)?.to_owned();
    let invisible_ms = req
        .invisible_duration
        .as_ref()
        .map(duration_ms)
        .ok_or_else(|| {
            ProxyError::Code(
                Code::IllegalInvisibleTime,
                "invisible_duration is required".into(),
            )
        })?;
    check_invisible(proxy, invisible_ms)?;
    let h = ReceiptHandle::decode(&req.receipt_handle)?;
    let real_topic = h.extra_info.retry.real_topic(&topic, &group);
    let addr = proxy
        .routes
        .master_of(&proxy.pool, &topic, &h.extra_info.broker_name)
        .await?;
    let header = ChangeInvisibleTimeRequestHeader {
        consumer_group: group.clone(),
        topic: real_topic,
        queue_id: h.extra_info.queue_id,
        extra_info: h.extra_info.to_string(),
        offset: h.queue_offset(),
        invisible_time: invisible_ms,
    };
    let cmd = RemotingCommand::request(request_code::CHANGE_MESSAGE_INVISIBLETIME)
        .with_ext_fields(header.to_ext_fields());
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(&resp, "change invisible time"));
    }
    let head = ChangeInvisibleTimeResponseHeader::from_ext_fields(&resp.ext_fields)
        .map_err(|e| ProxyError::Internal(format!("bad change-invisible response: {e}")))?;
    // RocketMQ's client rebuilds the handle: the check point now starts at the message itself.
    let renewed = ReceiptHandle {
        extra_info: ExtraInfo {
            ck_queue_offset: h.queue_offset(),
            pop_time: head.pop_time,
            invisible_time: head.invisible_time,
            revive_qid: head.revive_qid,
            ..h.extra_info.clone()
        },
        commit_log_offset: h.commit_log_offset,
    };
    Ok(ChangeInvisibleDurationResponse {
        status: Some(ok()),
        receipt_handle: renewed.encode(),
    })
}

/// The SDK gave up on a message (push consumer, max attempts reached): CONSUMER_SEND_MSG_BACK with
/// delayLevel -1 puts it in `%DLQ%group`, then the popped copy is acked.
pub async fn forward_to_dlq(
    proxy: &Proxy,
    caller: &Caller,
    req: ForwardMessageToDeadLetterQueueRequest,
) -> Result<ForwardMessageToDeadLetterQueueResponse, ProxyError> {
    let group = group_name(&req.group)?;
    let topic = topic_name(&req.topic)?.to_owned();
    dead_letter(
        proxy,
        caller,
        &group,
        &topic,
        &req.receipt_handle,
        &req.message_id,
        req.max_delivery_attempts,
    )
    .await?;
    Ok(ForwardMessageToDeadLetterQueueResponse { status: Some(ok()) })
}

/// CONSUMER_SEND_MSG_BACK with delayLevel -1 (to `%DLQ%group`), then the ack of the popped copy.
async fn dead_letter(
    proxy: &Proxy,
    caller: &Caller,
    group: &str,
    topic: &str,
    receipt_handle: &str,
    message_id: &str,
    max_attempts: i32,
) -> Result<(), ProxyError> {
    let h = ReceiptHandle::decode(receipt_handle)?;
    let addr = proxy
        .routes
        .master_of(&proxy.pool, topic, &h.extra_info.broker_name)
        .await?;
    let cmd = RemotingCommand::request(request_code::CONSUMER_SEND_MSG_BACK)
        .with_ext("offset", &h.commit_log_offset.to_string())
        .with_ext("group", group)
        .with_ext("delayLevel", "-1")
        .with_ext("originMsgId", message_id)
        .with_ext("originTopic", topic)
        .with_ext("unitMode", "false")
        .with_ext("maxReconsumeTimes", &max_attempts.to_string());
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(
            &resp,
            "forward to dead-letter queue",
        ));
    }
    ack_one(proxy, caller, group, topic, receipt_handle).await
}

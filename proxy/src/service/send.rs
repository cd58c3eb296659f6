//! SendMessage: each SDK message becomes a SEND_MESSAGE to the master of the queue chosen here:
//! by the hash of its message group for FIFO messages (one group, one queue, so order holds), round
//! robin otherwise. Transactional messages go as half messages of producer group = topic (Apache's
//! proxy's choice); delayed ones as timer messages, refused when the broker cannot hold them back. A
//! message not of its topic's message type is refused first (`message_type`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use protocol::header::CommandHeader;
use protocol::header::SendMessageResponseHeader;
use protocol::message::properties::java_string_hash;
use protocol::message::record::sys_flag;
use protocol::{request_code, response_code, RemotingCommand};

use super::caller::Caller;
use super::resource::topic_name;
use super::message_type;
use super::transaction::TransactionId;
use crate::convert::{remoting_properties, send_kind, timestamp_ms, SendKind};
use crate::pb::*;
use crate::state::Proxy;
use crate::status::{ok, status, ProxyError};

/// How long a broker's timer settings are trusted before GET_BROKER_CONFIG is asked again.
const TIMER_SETTINGS_TTL: Duration = Duration::from_secs(30);

pub async fn send_message(
    proxy: &Proxy,
    caller: &Caller,
    req: SendMessageRequest,
) -> Result<SendMessageResponse, ProxyError> {
    if req.messages.is_empty() {
        return Err(ProxyError::BadRequest("no message to send".into()));
    }
    let mut entries = Vec::with_capacity(req.messages.len());
    for msg in &req.messages {
        let entry = match send_one(proxy, caller, msg).await {
            Ok(e) => e,
            Err(e) => SendResultEntry {
                status: Some(e.status()),
                ..Default::default()
            },
        };
        entries.push(entry);
    }
    // One message: its own status is the response's; several with mixed results: MULTIPLE_RESULTS.
    let first = entries.first().and_then(|e| e.status.clone());
    let all_same = entries
        .iter()
        .all(|e| e.status.as_ref().map(|s| s.code) == first.as_ref().map(|s| s.code));
    let overall = if all_same {
        first.unwrap_or_else(ok)
    } else {
        status(Code::MultipleResults, "messages had different results")
    };
    Ok(SendMessageResponse {
        status: Some(overall),
        entries,
    })
}

async fn send_one(
    proxy: &Proxy,
    caller: &Caller,
    msg: &Message,
) -> Result<SendResultEntry, ProxyError> {
    let topic = topic_name(&msg.topic)?.to_owned();
    if msg.body.is_empty() {
        return Err(ProxyError::Code(
            Code::MessageBodyEmpty,
            "message body is empty".into(),
        ));
    }
    if msg.body.len() > proxy.cfg.max_message_size {
        return Err(ProxyError::Code(
            Code::MessageBodyTooLarge,
            format!(
                "message body of {} bytes is over the limit of {}",
                msg.body.len(),
                proxy.cfg.max_message_size
            ),
        ));
    }
    let kind = send_kind(msg);
    // Apache's proxy sends as producer group = topic; the broker's transaction check-back then finds
    // the proxy's registration of that group.
    let producer_group = topic.clone();
    let props = remoting_properties(msg, &producer_group)?;
    message_type::check_send(proxy, &topic, &props).await?;

    let route = proxy.routes.get_cached(&proxy.pool, &topic).await?;
    let queues = &route.writable;
    if queues.is_empty() {
        return Err(ProxyError::Unavailable(format!(
            "topic {topic} has no writable queue on a live master"
        )));
    }
    let group = msg
        .system_properties
        .as_ref()
        .and_then(|s| s.message_group.as_deref())
        .filter(|g| !g.is_empty());
    let index = match group {
        Some(g) => java_string_hash(g).unsigned_abs() as usize % queues.len(),
        None => proxy.next_queue.fetch_add(1, Ordering::Relaxed) % queues.len(),
    };
    let Some(queue) = queues.get(index) else {
        return Err(ProxyError::Internal("queue index out of range".into()));
    };
    let (broker_name, addr, queue_id) = (&*queue.broker_name, &*queue.master_addr, queue.queue_id);
    proxy.learn_broker(addr, broker_name);

    if let Some(at) = msg
        .system_properties
        .as_ref()
        .and_then(|s| s.delivery_timestamp.as_ref())
    {
        check_delay(proxy, caller, addr, broker_name, timestamp_ms(at)).await?;
    }

    let sys = if kind == SendKind::Transaction {
        sys_flag::TRANSACTION_PREPARED
    } else {
        0
    };
    let born = msg
        .system_properties
        .as_ref()
        .and_then(|s| s.born_timestamp.as_ref())
        .map(timestamp_ms)
        .unwrap_or_else(now_ms);
    let mut cmd = RemotingCommand::request(request_code::SEND_MESSAGE)
        .with_ext("producerGroup", &producer_group)
        .with_ext("topic", &topic)
        .with_ext("defaultTopic", "TBW102")
        .with_ext("defaultTopicQueueNums", "4")
        .with_ext("queueId", &queue_id.to_string())
        .with_ext("sysFlag", &sys.to_string())
        .with_ext("bornTimestamp", &born.to_string())
        .with_ext("flag", "0")
        .with_ext("properties", &props)
        .with_ext("reconsumeTimes", "0")
        .with_ext("unitMode", "false")
        .with_ext("batch", "false")
        .with_ext("bname", broker_name);
    cmd.set_body(msg.body.clone());
    let resp = proxy
        .pool
        .invoke(addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(
            &resp,
            &format!("send to {broker_name}"),
        ));
    }
    let header = SendMessageResponseHeader::from_ext_fields(&resp.ext_fields)
        .map_err(|e| ProxyError::Internal(format!("bad send response from {broker_name}: {e}")))?;
    proxy.metrics.messages_sent.fetch_add(1, Ordering::Relaxed);
    let message_id = msg
        .system_properties
        .as_ref()
        .map(|s| s.message_id.clone())
        .unwrap_or_default();
    let transaction_id = if kind == SendKind::Transaction {
        let (_, commit_log_offset) = protocol::message::msgid::parse_offset_msg_id(&header.msg_id)
            .map_err(|e| {
                ProxyError::Internal(format!("bad offsetMsgId from {broker_name}: {e}"))
            })?;
        TransactionId {
            broker_name: broker_name.to_string(),
            tran_state_table_offset: header.queue_offset,
            commit_log_offset,
        }
        .encode()
    } else {
        String::new()
    };
    Ok(SendResultEntry {
        status: Some(ok()),
        message_id,
        transaction_id,
        offset: header.queue_offset,
        // The broker's handle for a timer message (empty otherwise), as Apache's proxy passes it on.
        recall_handle: header.recall_handle.unwrap_or_default(),
    })
}

/// A delayed message is sent as a timer message (TIMER_DELIVER_MS) only to a broker that holds timer
/// messages back; otherwise it is refused, since the broker would deliver it at once.
async fn check_delay(
    proxy: &Proxy,
    caller: &Caller,
    addr: &str,
    broker_name: &str,
    deliver_at_ms: i64,
) -> Result<(), ProxyError> {
    let cached = proxy
        .timer_settings
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(addr)
        .filter(|(at, _, _)| at.elapsed() < TIMER_SETTINGS_TTL)
        .map(|(_, on, max)| (*on, *max));
    let (enabled, max_delay_sec) = match cached {
        Some(s) => s,
        None => {
            let cmd = RemotingCommand::request(request_code::GET_BROKER_CONFIG);
            let resp = proxy
                .pool
                .invoke(addr, cmd, caller.creds.as_ref(), None)
                .await?;
            if resp.code != response_code::SUCCESS {
                return Err(ProxyError::from_remoting(
                    &resp,
                    &format!("timer settings of {broker_name}"),
                ));
            }
            let text = String::from_utf8_lossy(&resp.body);
            let value = |key: &str| {
                text.lines()
                    .filter_map(|l| l.split_once('='))
                    .find(|(k, _)| k.trim() == key)
                    .map(|(_, v)| v.trim().to_string())
            };
            // Apache's broker before 5.0 has no timer; without the key there is none.
            let enabled = value("timerWheelEnable").is_some_and(|v| v == "true");
            let max = value("timerMaxDelaySec")
                .and_then(|v| v.parse().ok())
                .unwrap_or(3 * 24 * 3600);
            proxy
                .timer_settings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(addr.to_string(), (Instant::now(), enabled, max));
            (enabled, max)
        }
    };
    if !enabled {
        return Err(ProxyError::Code(
            Code::Unsupported,
            format!(
                "broker {broker_name} has timer messages off (timerWheelEnable=false): a delayed \
                 message is refused rather than delivered early"
            ),
        ));
    }
    let ahead_ms = deliver_at_ms.saturating_sub(now_ms());
    let max_ms = i64::try_from(max_delay_sec)
        .unwrap_or(i64::MAX)
        .saturating_mul(1000);
    if ahead_ms > max_ms {
        return Err(ProxyError::Code(
            Code::IllegalDeliveryTime,
            format!("delivery time is {ahead_ms} ms ahead, over the broker's timerMaxDelaySec of {max_delay_sec} s"),
        ));
    }
    Ok(())
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

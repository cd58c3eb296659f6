//! Transactions: EndTransaction to the broker that holds the half message; the broker's check-back
//! (CHECK_TRANSACTION_STATE on the proxy's connection) forwarded to a producer of the topic as a
//! RecoverOrphanedTransactionCommand over its Telemetry stream; and the HEART_BEAT that registers
//! the proxy as a producer of every transactional topic a connected SDK publishes, so check-backs
//! reach it.

use std::sync::Arc;
use std::time::Duration;

use protocol::body::to_json;
use protocol::body::{HeartbeatData, ProducerData};
use protocol::header::CommandHeader;
use protocol::header::{CheckTransactionStateRequestHeader, EndTransactionRequestHeader};
use protocol::message::record::{decode_view, sys_flag};
use protocol::topic_attributes::TopicMessageType;
use protocol::{request_code, response_code, RemotingCommand};

use super::caller::Caller;
use super::resource::topic_name;
use super::message_type;
use crate::convert::to_sdk_message;
use crate::pb::*;
use crate::remoting::Inbound;
use crate::state::Proxy;
use crate::status::{ok, ProxyError};

/// What the broker needs to end a transaction, carried in the SDK's opaque transaction id, so any
/// proxy (or this one after a restart) can end it: nothing is kept in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionId {
    pub broker_name: String,
    pub tran_state_table_offset: i64,
    pub commit_log_offset: i64,
}

impl TransactionId {
    pub fn encode(&self) -> String {
        format!(
            "{}:{}:{}",
            self.tran_state_table_offset, self.commit_log_offset, self.broker_name
        )
    }

    pub fn decode(s: &str) -> Option<TransactionId> {
        let mut parts = s.splitn(3, ':');
        let tran_state_table_offset = parts.next()?.parse().ok()?;
        let commit_log_offset = parts.next()?.parse().ok()?;
        let broker_name = parts.next().filter(|b| !b.is_empty())?.to_string();
        Some(TransactionId {
            broker_name,
            tran_state_table_offset,
            commit_log_offset,
        })
    }
}

pub async fn end_transaction(
    proxy: &Proxy,
    caller: &Caller,
    req: EndTransactionRequest,
) -> Result<EndTransactionResponse, ProxyError> {
    let topic = topic_name(&req.topic)?.to_owned();
    let tx = TransactionId::decode(&req.transaction_id).ok_or_else(|| {
        ProxyError::Code(
            Code::InvalidTransactionId,
            format!(
                "transaction id {:?} was not made by this proxy",
                req.transaction_id
            ),
        )
    })?;
    let commit_or_rollback = match TransactionResolution::try_from(req.resolution) {
        Ok(TransactionResolution::Commit) => sys_flag::TRANSACTION_COMMIT,
        Ok(TransactionResolution::Rollback) => sys_flag::TRANSACTION_ROLLBACK,
        _ => {
            return Err(ProxyError::BadRequest(
                "resolution must be COMMIT or ROLLBACK".into(),
            ))
        }
    };
    let addr = proxy
        .routes
        .master_of(&proxy.pool, &topic, &tx.broker_name)
        .await?;
    let header = EndTransactionRequestHeader {
        topic: Some(topic.clone()),
        producer_group: topic.clone(),
        tran_state_table_offset: tx.tran_state_table_offset,
        commit_log_offset: tx.commit_log_offset,
        commit_or_rollback,
        from_transaction_check: Some(req.source == TransactionSource::SourceServerCheck as i32),
        msg_id: req.message_id.clone(),
        transaction_id: Some(req.message_id.clone()),
    };
    let cmd = RemotingCommand::request(request_code::END_TRANSACTION)
        .with_ext_fields(header.to_ext_fields());
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(&resp, "end transaction"));
    }
    Ok(EndTransactionResponse { status: Some(ok()) })
}

/// Requests brokers send on the proxy's connections: check-backs go to a publishing SDK; anything
/// else is answered "not supported" so the broker does not wait.
pub async fn serve_inbound(
    proxy: Arc<Proxy>,
    mut inbound: tokio::sync::mpsc::UnboundedReceiver<Inbound>,
) {
    while let Some(req) = inbound.recv().await {
        if req.command.code == request_code::CHECK_TRANSACTION_STATE {
            if let Err(e) = forward_check(&proxy, &req) {
                tracing::info!(
                    "transaction check-back from {} not forwarded: {e}",
                    req.addr
                );
            }
        } else if !req.command.is_oneway() {
            let resp = req.command.response_to(
                response_code::REQUEST_CODE_NOT_SUPPORTED,
                Some(format!(
                    "the proxy does not serve request code {}",
                    req.command.code
                )),
            );
            if let Ok(frame) = protocol::frame::encode_to_bytes(&resp) {
                let _ = req.reply.send(frame).await;
            }
        }
    }
}

fn forward_check(proxy: &Proxy, req: &Inbound) -> Result<(), String> {
    let header = CheckTransactionStateRequestHeader::from_ext_fields(&req.command.ext_fields)
        .map_err(|e| format!("bad header: {e}"))?;
    let view = decode_view(&req.command.body, false).map_err(|e| format!("bad body: {e}"))?;
    let topic = view.topic.to_string();
    let broker_name = proxy
        .broker_name_of(&req.addr)
        .ok_or_else(|| format!("unknown broker address {}", req.addr))?;
    let tx = TransactionId {
        broker_name,
        tran_state_table_offset: header.tran_state_table_offset,
        commit_log_offset: header.commit_log_offset,
    };
    let message = to_sdk_message(&view, None, None, "").map_err(|e| e.to_string())?;
    let cmd = TelemetryCommand {
        status: Some(ok()),
        command: Some(
            telemetry_command::Command::RecoverOrphanedTransactionCommand(
                RecoverOrphanedTransactionCommand {
                    message: Some(message),
                    transaction_id: tx.encode(),
                },
            ),
        ),
    };
    let sender = proxy
        .sessions
        .publisher_of(&topic)
        .ok_or_else(|| format!("no connected producer publishes {topic}"))?;
    sender
        .try_send(Ok(cmd))
        .map_err(|e| format!("producer stream full or closed: {e}"))
}

/// Every 10 s (and when `kick` fires): HEART_BEAT to every master of every published topic that takes
/// transactional messages, with producer group = topic, so that the brokers' check-backs find a
/// producer (this proxy).
pub async fn register_producers(proxy: Arc<Proxy>, kick: Arc<tokio::sync::Notify>) {
    loop {
        let topics = proxy.sessions.published_topics();
        let mut by_broker: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for topic in topics {
            if !takes_transactions(&proxy, &topic).await {
                continue;
            }
            let Ok(route) = proxy.routes.get(&proxy.pool, &topic).await else {
                continue;
            };
            for b in &route.broker_datas {
                if let Some(addr) = b.master_addr() {
                    proxy.learn_broker(addr, &b.broker_name);
                    by_broker
                        .entry(addr.to_string())
                        .or_default()
                        .push(topic.clone());
                }
            }
        }
        for (addr, topics) in by_broker {
            let data = HeartbeatData {
                client_id: proxy.client_id.clone(),
                producer_data_set: topics
                    .into_iter()
                    .map(|t| ProducerData { group_name: t })
                    .collect(),
                ..Default::default()
            };
            let mut cmd = RemotingCommand::request(request_code::HEART_BEAT);
            cmd.set_body(to_json(&data));
            if let Err(e) = proxy
                .pool
                .invoke(&addr, cmd, proxy_creds(&proxy), None)
                .await
            {
                tracing::debug!("producer heartbeat to {addr} failed: {e}");
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), kick.notified()).await;
    }
}

/// Whether transactional messages can be sent to `topic`, so check-backs may come: a TRANSACTION topic
/// (Apache's proxy subscribes to check-backs for those only), a MIXED one, or any with the type check
/// off.
async fn takes_transactions(proxy: &Proxy, topic: &str) -> bool {
    if !proxy.cfg.enable_topic_message_type_check {
        return true;
    }
    matches!(
        message_type::topic_type(proxy, topic).await,
        Ok(TopicMessageType::Transaction | TopicMessageType::Mixed)
    )
}

/// The proxy's own heartbeats are signed with the first ACL account, if there is one.
fn proxy_creds(proxy: &Proxy) -> Option<&protocol::signature::Credentials> {
    proxy.own_creds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_id_round_trips_and_rejects_foreign_ids() {
        let id = TransactionId {
            broker_name: "broker-a:0".into(),
            tran_state_table_offset: 7,
            commit_log_offset: 1 << 40,
        };
        assert_eq!(TransactionId::decode(&id.encode()), Some(id));
        assert_eq!(TransactionId::decode("7F0000010000"), None);
        assert_eq!(TransactionId::decode("1:2:"), None);
    }
}

//! RecallMessage: the SDK's recall of a delay message by the handle its send answered (RocketMQ
//! 5.3.2+). As Apache's proxy does: with the message type check on, the topic must take delay messages
//! (DELAY or MIXED); the handle names the broker; RECALL_MESSAGE goes to that broker's master of the
//! topic's route, whose answer (or refusal, with its remark) is the RPC's.

use protocol::header::{CommandHeader, RecallHandle, RecallMessageResponseHeader};
use protocol::topic_attributes::TopicMessageType;
use protocol::{request_code, response_code, RemotingCommand};

use super::caller::Caller;
use super::resource::topic_name;
use super::message_type;
use crate::pb::*;
use crate::state::Proxy;
use crate::status::{ok, ProxyError};

pub async fn recall_message(
    proxy: &Proxy,
    caller: &Caller,
    req: RecallMessageRequest,
) -> Result<RecallMessageResponse, ProxyError> {
    let topic = topic_name(&req.topic)?.to_owned();
    if proxy.cfg.enable_topic_message_type_check {
        let ty = message_type::topic_type(proxy, &topic).await?;
        message_type::validate(ty, TopicMessageType::Delay)?;
    }
    // Apache's proxy answers an unreadable handle as an internal error with the decoder's message.
    let handle = RecallHandle::decode(&req.recall_handle)
        .map_err(|why| ProxyError::Code(Code::InternalServerError, why.to_string()))?;
    let addr = proxy
        .routes
        .master_of(&proxy.pool, &topic, &handle.broker_name)
        .await?;
    let cmd = RemotingCommand::request(request_code::RECALL_MESSAGE)
        .with_ext("topic", &topic)
        .with_ext("recallHandle", &req.recall_handle)
        .with_ext("bname", &handle.broker_name);
    let resp = proxy
        .pool
        .invoke(&addr, cmd, caller.creds.as_ref(), None)
        .await?;
    if resp.code != response_code::SUCCESS {
        return Err(ProxyError::from_remoting(
            &resp,
            &format!("recall on {}", handle.broker_name),
        ));
    }
    let header = RecallMessageResponseHeader::from_ext_fields(&resp.ext_fields).map_err(|e| {
        ProxyError::Internal(format!(
            "bad recall response from {}: {e}",
            handle.broker_name
        ))
    })?;
    Ok(RecallMessageResponse {
        status: Some(ok()),
        message_id: header.msg_id,
    })
}

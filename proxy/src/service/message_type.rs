//! Message types against topic types, as Apache's proxy checks them: a message sent must be of its
//! topic's `message.type` (any type on a MIXED topic), and routes tell the SDKs which types a topic's
//! queues accept, so the SDKs refuse a wrong one themselves.

use protocol::message::properties;
use protocol::topic_attributes::TopicMessageType;

use crate::pb::{Code, MessageType};
use crate::state::Proxy;
use crate::status::ProxyError;

/// The SDK message types a topic of type `ty` accepts (Apache's RouteActivity).
pub fn accept_types(ty: TopicMessageType) -> Vec<i32> {
    let one = |t: MessageType| vec![t as i32];
    match ty {
        TopicMessageType::Normal => one(MessageType::Normal),
        TopicMessageType::Fifo => one(MessageType::Fifo),
        TopicMessageType::Delay => one(MessageType::Delay),
        TopicMessageType::Transaction => one(MessageType::Transaction),
        TopicMessageType::Mixed => vec![
            MessageType::Normal as i32,
            MessageType::Fifo as i32,
            MessageType::Delay as i32,
            MessageType::Transaction as i32,
        ],
        TopicMessageType::Unspecified => one(MessageType::Unspecified),
    }
}

/// A message of type `actual` on a topic of type `expected`: refused unless they are the same or the
/// topic is MIXED; a message of no type is always refused (Apache's DefaultTopicMessageTypeValidator).
pub fn validate(expected: TopicMessageType, actual: TopicMessageType) -> Result<(), ProxyError> {
    if actual == TopicMessageType::Unspecified
        || (actual != expected && expected != TopicMessageType::Mixed)
    {
        return Err(ProxyError::Code(
            Code::MessagePropertyConflictWithType,
            format!(
                "TopicMessageType validate failed, the expected type is {expected}, but actual type is {actual}"
            ),
        ));
    }
    Ok(())
}

/// A message's type from its remoting properties, as the broker will see them.
pub fn of_properties(props: &str) -> TopicMessageType {
    TopicMessageType::of_message(|k| properties::get(props, k))
}

/// `topic`'s type as a broker of its route holds it (cached).
pub async fn topic_type(proxy: &Proxy, topic: &str) -> Result<TopicMessageType, ProxyError> {
    // One cache for every caller, so asked with the proxy's own account, as its heartbeats are.
    let creds = proxy.own_creds();
    proxy
        .topic_types
        .get(&proxy.pool, &proxy.routes, topic, creds)
        .await
}

/// Whether a message with remoting properties `props` may be sent to `topic`. Not checked: with
/// `enableTopicMessageTypeCheck = false`, messages carrying TRANSFER_FLAG, retry and DLQ topics.
pub async fn check_send(proxy: &Proxy, topic: &str, props: &str) -> Result<(), ProxyError> {
    if !proxy.cfg.enable_topic_message_type_check
        || properties::get(props, properties::TRANSFER_FLAG).is_some()
        || topic.starts_with("%RETRY%")
        || topic.starts_with("%DLQ%")
    {
        return Ok(());
    }
    validate(topic_type(proxy, topic).await?, of_properties(props))
}

/// The types route answers advertise for `topic`: its own, also with the check off (the settings
/// then tell the SDKs not to validate), as Apache's proxy does.
pub async fn advertised(proxy: &Proxy, topic: &str) -> Result<Vec<i32>, ProxyError> {
    Ok(accept_types(topic_type(proxy, topic).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_types_accept_what_apaches_routes_advertise() {
        assert_eq!(
            accept_types(TopicMessageType::Fifo),
            vec![MessageType::Fifo as i32]
        );
        assert_eq!(
            accept_types(TopicMessageType::Normal),
            vec![MessageType::Normal as i32]
        );
        assert_eq!(
            accept_types(TopicMessageType::Delay),
            vec![MessageType::Delay as i32]
        );
        assert_eq!(
            accept_types(TopicMessageType::Transaction),
            vec![MessageType::Transaction as i32]
        );
        assert_eq!(accept_types(TopicMessageType::Mixed).len(), 4);
        assert_eq!(
            accept_types(TopicMessageType::Unspecified),
            vec![MessageType::Unspecified as i32]
        );
    }

    #[test]
    fn validation_matches_types_unless_mixed() {
        use TopicMessageType::*;
        for t in [Normal, Fifo, Delay, Transaction] {
            assert!(validate(t, t).is_ok());
            assert!(validate(Mixed, t).is_ok());
            assert!(validate(t, Unspecified).is_err());
        }
        assert!(validate(Mixed, Unspecified).is_err());
        let e = validate(Normal, Fifo).unwrap_err();
        assert_eq!(e.code(), Code::MessagePropertyConflictWithType);
        assert_eq!(e.code() as i32, 40014);
        assert_eq!(
            e.to_string(),
            "TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO"
        );
        // A topic whose type could not be learnt refuses every message, as Apache's proxy does.
        assert!(validate(Unspecified, Normal).is_err());
    }

    #[test]
    fn a_messages_type_comes_from_its_properties() {
        let mut p = String::new();
        properties::push(&mut p, properties::UNIQ_KEY, "id");
        assert_eq!(of_properties(&p), TopicMessageType::Normal);
        let mut fifo = p.clone();
        properties::push(&mut fifo, properties::SHARDING_KEY, "g");
        assert_eq!(of_properties(&fifo), TopicMessageType::Fifo);
        let mut delay = fifo.clone();
        properties::push(&mut delay, properties::TIMER_DELIVER_MS, "1");
        assert_eq!(of_properties(&delay), TopicMessageType::Delay);
        let mut tx = delay.clone();
        properties::push(&mut tx, properties::TRANSACTION_PREPARED, "true");
        assert_eq!(of_properties(&tx), TopicMessageType::Transaction);
    }
}

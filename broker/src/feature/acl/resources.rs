//! What a request needs, as RocketMQ's PlainAccessValidator derives it from the request code: topics
//! and groups with PUB or SUB, and whether the code is admin-only.

use protocol::body::HeartbeatData;
use protocol::request_code as code;
use protocol::RemotingCommand;

use super::perm;

/// A resource a request touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Topic(String),
    Group(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Topic(t) => write!(f, "topic={t}"),
            Resource::Group(g) => write!(f, "group={g}"),
        }
    }
}

/// Consumer groups appear as their retry topic (`%RETRY%group`); RocketMQ checks those against
/// the account's group permissions, so a retry topic is the group here.
const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";

fn topic_resource(name: &str) -> Resource {
    match name.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
        Some(group) => Resource::Group(group.to_owned()),
        None => Resource::Topic(name.to_owned()),
    }
}

/// The topic a POP request names: a group's pop retry topic `%RETRY%group_topic` stands for `topic`.
fn pop_topic(name: &str, group: &str) -> Resource {
    let own_retry = format!("{RETRY_GROUP_TOPIC_PREFIX}{group}_");
    match name.strip_prefix(&own_retry) {
        Some(topic) => Resource::Topic(topic.to_owned()),
        None => topic_resource(name),
    }
}

/// Codes only an `admin: true` account may send (RocketMQ's `Permission.ADMIN_CODE`).
pub fn needs_admin(request_code: i32) -> bool {
    matches!(
        request_code,
        code::UPDATE_AND_CREATE_TOPIC
            | code::UPDATE_BROKER_CONFIG
            | code::DELETE_TOPIC_IN_BROKER
            | code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
            | code::DELETE_SUBSCRIPTIONGROUP
    )
}

/// The resources `request` touches with the permission each needs; `Err` when the request cannot be
/// read well enough to say (RocketMQ refuses those too).
pub fn needed(request: &RemotingCommand) -> Result<Vec<(Resource, u8)>, String> {
    let topic = |key: &str| topic_resource(request.ext(key).unwrap_or_default());
    let group = |key: &str| Resource::Group(request.ext(key).unwrap_or_default().to_owned());
    Ok(match request.code {
        code::SEND_MESSAGE => vec![(topic("topic"), perm::PUB)],
        // RocketMQ 4.x checks only V2; a batch (320) carries the same header and publishes the same.
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => vec![(topic("b"), perm::PUB)],
        code::CONSUMER_SEND_MSG_BACK => {
            vec![
                (topic("originTopic"), perm::PUB),
                (group("group"), perm::SUB),
            ]
        }
        // RocketMQ 5's plain ACL leaves lite pulls unchecked; a lite pull reads like a pull, so it
        // needs what a pull needs.
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => vec![
            (topic("topic"), perm::SUB),
            (group("consumerGroup"), perm::SUB),
        ],
        // POP reads as a pull does; an ack names the pop retry topic `%RETRY%group_topic` of a retried
        // message, which is the group's own topic.
        code::POP_MESSAGE
        | code::PEEK_MESSAGE
        | code::ACK_MESSAGE
        | code::CHANGE_MESSAGE_INVISIBLETIME
        | code::NOTIFICATION
        | code::POLLING_INFO => {
            let group_name = request.ext("consumerGroup").unwrap_or_default();
            vec![
                (
                    pop_topic(request.ext("topic").unwrap_or_default(), group_name),
                    perm::SUB,
                ),
                (Resource::Group(group_name.to_owned()), perm::SUB),
            ]
        }
        code::BATCH_ACK_MESSAGE => {
            let body: protocol::body::BatchAckMessageRequestBody =
                serde_json::from_slice(&request.body)
                    .map_err(|e| format!("batch ack body cannot be read: {e}"))?;
            let mut out = Vec::new();
            for ack in body.acks {
                out.push((pop_topic(&ack.topic, &ack.consumer_group), perm::SUB));
                out.push((Resource::Group(ack.consumer_group), perm::SUB));
            }
            out
        }
        code::QUERY_MESSAGE => vec![(topic("topic"), perm::SUB)],
        code::HEART_BEAT => {
            let data: HeartbeatData = protocol::body::from_json(&request.body)
                .map_err(|e| format!("heartbeat body cannot be read: {e}"))?;
            let mut out = Vec::new();
            for consumer in data.consumer_data_set {
                for sub in consumer.subscription_data_set {
                    out.push((topic_resource(&sub.topic), perm::SUB));
                }
                out.push((Resource::Group(consumer.group_name), perm::SUB));
            }
            out
        }
        code::UNREGISTER_CLIENT | code::GET_CONSUMER_LIST_BY_GROUP => {
            vec![(group("consumerGroup"), perm::SUB)]
        }
        code::UPDATE_CONSUMER_OFFSET => {
            vec![
                (group("consumerGroup"), perm::SUB),
                (topic("topic"), perm::SUB),
            ]
        }
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_needs_topic_and_group() {
        let req = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        assert_eq!(
            needed(&req).unwrap(),
            vec![
                (Resource::Topic("T".into()), perm::SUB),
                (Resource::Group("G".into()), perm::SUB)
            ]
        );
    }

    #[test]
    fn a_lite_pull_needs_what_a_pull_needs() {
        let req = RemotingCommand::request(code::LITE_PULL_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        let pull = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        assert_eq!(needed(&req).unwrap(), needed(&pull).unwrap());
    }

    #[test]
    fn pop_codes_need_what_a_pull_needs_and_a_retry_ack_names_its_topic() {
        let pull = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        for c in [
            code::POP_MESSAGE,
            code::PEEK_MESSAGE,
            code::ACK_MESSAGE,
            code::CHANGE_MESSAGE_INVISIBLETIME,
            code::NOTIFICATION,
            code::POLLING_INFO,
        ] {
            let req = RemotingCommand::request(c)
                .with_ext("topic", "T")
                .with_ext("consumerGroup", "G");
            assert_eq!(needed(&req).unwrap(), needed(&pull).unwrap(), "code {c}");
        }
        let retry_ack = RemotingCommand::request(code::ACK_MESSAGE)
            .with_ext("topic", "%RETRY%G_T")
            .with_ext("consumerGroup", "G");
        assert_eq!(needed(&retry_ack).unwrap(), needed(&pull).unwrap());
        let body =
            br#"{"acks":[{"c":"G","t":"T","r":"1","so":0,"q":0,"rq":0,"pt":1,"it":1,"b":"AQ=="}]}"#;
        let batch = RemotingCommand::request(code::BATCH_ACK_MESSAGE).with_body(&body[..]);
        assert_eq!(needed(&batch).unwrap(), needed(&pull).unwrap());
        let bad = RemotingCommand::request(code::BATCH_ACK_MESSAGE).with_body(&b"{"[..]);
        assert!(needed(&bad).is_err());
    }

    #[test]
    fn heartbeat_subscriptions_are_checked() {
        let body = br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subString":"*"}]}]}"#;
        let req = RemotingCommand::request(code::HEART_BEAT).with_body(&body[..]);
        let got = needed(&req).unwrap();
        assert!(got.contains(&(Resource::Topic("T".into()), perm::SUB)));
        let retry = br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"%RETRY%G","subString":"*"}]}]}"#;
        let req = RemotingCommand::request(code::HEART_BEAT).with_body(&retry[..]);
        // The retry topic is checked as the group, not as a topic.
        assert!(!needed(&req)
            .unwrap()
            .iter()
            .any(|(r, _)| matches!(r, Resource::Topic(_))));
        assert!(got.contains(&(Resource::Group("G".into()), perm::SUB)));
        let bad = RemotingCommand::request(code::HEART_BEAT).with_body(&b"{"[..]);
        assert!(needed(&bad).is_err());
    }

    #[test]
    fn admin_codes() {
        assert!(needs_admin(code::UPDATE_AND_CREATE_TOPIC));
        assert!(needs_admin(code::DELETE_TOPIC_IN_BROKER));
        assert!(!needs_admin(code::SEND_MESSAGE));
    }
}

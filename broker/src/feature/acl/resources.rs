//! What a request needs, as RocketMQ's PlainAccessValidator derives it: topics and groups with PUB or
//! SUB, and whether only an admin may send it. Which rule a request code follows is in the request
//! table (`processor::commands`).

use protocol::body::HeartbeatData;
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

/// What a request code needs, as RocketMQ's PlainAccessValidator reads it from the request; each row
/// of the request table (`processor::commands`) names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclRule {
    /// Nothing beyond a valid signature.
    Free,
    /// Only an `admin: true` account (RocketMQ's `Permission.ADMIN_CODE`).
    Admin,
    /// SEND_MESSAGE: PUB on `topic`.
    Send,
    /// SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE: PUB on `b` (RocketMQ 4.x checks only V2; a batch carries
    /// the same header and publishes the same).
    SendV2,
    /// CONSUMER_SEND_MSG_BACK: PUB on `originTopic`, SUB on `group`.
    SendBack,
    /// A pull or lite pull: SUB on `topic` and `consumerGroup` (RocketMQ 5's plain ACL leaves lite pulls
    /// unchecked; a lite pull reads like a pull, so it needs what a pull needs).
    Pull,
    /// POP codes read as a pull does; an ack names the pop retry topic `%RETRY%group_topic` of a retried
    /// message, which is the group's own topic.
    Pop,
    /// BATCH_ACK_MESSAGE: what each ack of the body names.
    BatchAck,
    /// QUERY_MESSAGE: SUB on `topic`.
    QueryMessage,
    /// HEART_BEAT: SUB on every subscription and group of the body.
    Heartbeat,
    /// SUB on `consumerGroup`.
    Group,
    /// UPDATE_CONSUMER_OFFSET: SUB on `consumerGroup` and `topic`.
    GroupAndTopic,
}

impl AclRule {
    pub fn needs_admin(self) -> bool {
        self == AclRule::Admin
    }
}

/// The resources `request` touches under `rule`, with the permission each needs; `Err` when the request
/// cannot be read well enough to say (RocketMQ refuses those too).
pub fn needed(rule: AclRule, request: &RemotingCommand) -> Result<Vec<(Resource, u8)>, String> {
    let topic = |key: &str| topic_resource(request.ext(key).unwrap_or_default());
    let group = |key: &str| Resource::Group(request.ext(key).unwrap_or_default().to_owned());
    Ok(match rule {
        AclRule::Free | AclRule::Admin => Vec::new(),
        AclRule::Send => vec![(topic("topic"), perm::PUB)],
        AclRule::SendV2 => vec![(topic("b"), perm::PUB)],
        AclRule::SendBack => vec![
            (topic("originTopic"), perm::PUB),
            (group("group"), perm::SUB),
        ],
        AclRule::Pull => vec![
            (topic("topic"), perm::SUB),
            (group("consumerGroup"), perm::SUB),
        ],
        AclRule::Pop => {
            let group_name = request.ext("consumerGroup").unwrap_or_default();
            vec![
                (
                    pop_topic(request.ext("topic").unwrap_or_default(), group_name),
                    perm::SUB,
                ),
                (Resource::Group(group_name.to_owned()), perm::SUB),
            ]
        }
        AclRule::BatchAck => {
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
        AclRule::QueryMessage => vec![(topic("topic"), perm::SUB)],
        AclRule::Heartbeat => {
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
        AclRule::Group => vec![(group("consumerGroup"), perm::SUB)],
        AclRule::GroupAndTopic => vec![
            (group("consumerGroup"), perm::SUB),
            (topic("topic"), perm::SUB),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::request_code as code;

    /// The rule the request table gives the codes these tests send (the table's own test checks
    /// the codes that share a rule).
    fn needed(request: &RemotingCommand) -> Result<Vec<(Resource, u8)>, String> {
        let rule = match request.code {
            code::PULL_MESSAGE => AclRule::Pull,
            code::ACK_MESSAGE => AclRule::Pop,
            code::BATCH_ACK_MESSAGE => AclRule::BatchAck,
            code::HEART_BEAT => AclRule::Heartbeat,
            _ => AclRule::Free,
        };
        super::needed(rule, request)
    }

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
    fn pop_codes_need_what_a_pull_needs_and_a_retry_ack_names_its_topic() {
        let pull = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        let pop = RemotingCommand::request(code::ACK_MESSAGE)
            .with_ext("topic", "T")
            .with_ext("consumerGroup", "G");
        assert_eq!(needed(&pop).unwrap(), needed(&pull).unwrap());
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
}

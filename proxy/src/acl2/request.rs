//! Which resources and actions each gRPC request needs (Apache's `DefaultAuthorizationContextBuilder`,
//! gRPC side): sends, recalls and transaction ends need Pub on the topic; receives, acks and
//! dead-lettering Sub on the group and the topic; a route query Pub or Sub on the topic; a consumer's
//! heartbeat, a termination and an invisible-time change Sub on the group; a telemetry settings
//! command what its publishing or subscription names.

use auth::{Action, Resource};

use crate::pb;

/// One check: the resource and the actions asked (any one of them granted suffices).
pub type Check = (Resource, Vec<Action>);

/// A gRPC request the proxy authorizes.
pub trait AuthRequest {
    /// The request's message type (Apache's rpcCode, what the whitelists name).
    const RPC: &'static str;
    /// The checks it needs (none: nothing to authorize), or why it cannot be authorized.
    fn checks(&self) -> Result<Vec<Check>, String>;
}

fn name(r: Option<&pb::Resource>) -> Option<&str> {
    r.map(|r| r.name.as_str()).filter(|n| !n.trim().is_empty())
}

fn topic(r: Option<&pb::Resource>) -> Result<Resource, String> {
    name(r)
        .map(Resource::topic)
        .ok_or_else(|| "topic is null.".to_string())
}

fn group(r: Option<&pb::Resource>) -> Result<Resource, String> {
    name(r)
        .map(Resource::group)
        .ok_or_else(|| "group is null.".to_string())
}

fn publish(r: Option<&pb::Resource>) -> Result<Check, String> {
    Ok((topic(r)?, vec![Action::Pub]))
}

fn subscribe(r: Result<Resource, String>) -> Result<Check, String> {
    Ok((r?, vec![Action::Sub]))
}

/// Sub on the group, then Sub on the topic.
fn consume(g: Option<&pb::Resource>, t: Option<&pb::Resource>) -> Result<Vec<Check>, String> {
    Ok(vec![subscribe(group(g))?, subscribe(topic(t))?])
}

macro_rules! rpc {
    ($ty:ty, $name:literal, |$req:ident| $body:expr) => {
        impl AuthRequest for $ty {
            const RPC: &'static str = concat!("apache.rocketmq.v2.", $name);
            fn checks(&self) -> Result<Vec<Check>, String> {
                let $req = self;
                $body
            }
        }
    };
}

rpc!(pb::SendMessageRequest, "SendMessageRequest", |r| {
    let first = r.messages.first().ok_or("message is null.")?;
    Ok(vec![publish(first.topic.as_ref())?])
});
rpc!(pb::RecallMessageRequest, "RecallMessageRequest", |r| Ok(
    vec![publish(r.topic.as_ref())?]
));
rpc!(pb::EndTransactionRequest, "EndTransactionRequest", |r| Ok(
    vec![publish(r.topic.as_ref())?]
));
rpc!(pb::HeartbeatRequest, "HeartbeatRequest", |r| {
    let consumer = matches!(
        pb::ClientType::try_from(r.client_type),
        Ok(pb::ClientType::PushConsumer
            | pb::ClientType::SimpleConsumer
            | pb::ClientType::PullConsumer)
    );
    if !consumer {
        return Ok(Vec::new());
    }
    Ok(vec![subscribe(group(r.group.as_ref()))?])
});
rpc!(pb::ReceiveMessageRequest, "ReceiveMessageRequest", |r| {
    let queue = r.message_queue.as_ref().ok_or("messageQueue is null.")?;
    consume(r.group.as_ref(), queue.topic.as_ref())
});
rpc!(pb::AckMessageRequest, "AckMessageRequest", |r| consume(
    r.group.as_ref(),
    r.topic.as_ref()
));
rpc!(
    pb::ForwardMessageToDeadLetterQueueRequest,
    "ForwardMessageToDeadLetterQueueRequest",
    |r| consume(r.group.as_ref(), r.topic.as_ref())
);
rpc!(
    pb::NotifyClientTerminationRequest,
    "NotifyClientTerminationRequest",
    |r| {
        if name(r.group.as_ref()).is_none() {
            return Ok(Vec::new());
        }
        Ok(vec![subscribe(group(r.group.as_ref()))?])
    }
);
rpc!(
    pb::ChangeInvisibleDurationRequest,
    "ChangeInvisibleDurationRequest",
    |r| Ok(vec![subscribe(group(r.group.as_ref()))?])
);
rpc!(pb::QueryRouteRequest, "QueryRouteRequest", |r| Ok(vec![(
    topic(r.topic.as_ref())?,
    vec![Action::Pub, Action::Sub]
)]));
rpc!(pb::QueryAssignmentRequest, "QueryAssignmentRequest", |r| {
    consume(r.group.as_ref(), r.topic.as_ref())
});
rpc!(pb::TelemetryCommand, "TelemetryCommand", |r| {
    let Some(pb::telemetry_command::Command::Settings(settings)) = &r.command else {
        return Ok(Vec::new());
    };
    match &settings.pub_sub {
        Some(pb::settings::PubSub::Publishing(p)) => {
            p.topics.iter().map(|t| publish(Some(t))).collect()
        }
        Some(pb::settings::PubSub::Subscription(s)) => {
            let mut checks = vec![subscribe(group(s.group.as_ref()))?];
            for entry in &s.subscriptions {
                checks.push(subscribe(topic(entry.topic.as_ref()))?);
            }
            Ok(checks)
        }
        None => Err("settings command doesn't have publishing or subscription.".into()),
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use pb::*;

    fn res(name: &str) -> Option<pb::Resource> {
        Some(pb::Resource {
            name: name.into(),
            ..Default::default()
        })
    }

    fn keys(checks: Vec<Check>) -> Vec<String> {
        checks
            .into_iter()
            .map(|(r, a)| {
                let actions: Vec<&str> = a.iter().map(|a| a.name()).collect();
                format!("{} {}", r.key(), actions.join("|"))
            })
            .collect()
    }

    #[test]
    fn each_request_needs_apaches_resources_and_actions() {
        let send = SendMessageRequest {
            messages: vec![Message {
                topic: res("orders"),
                ..Default::default()
            }],
        };
        assert_eq!(keys(send.checks().unwrap()), ["Topic:orders Pub"]);
        let receive = ReceiveMessageRequest {
            group: res("g1"),
            message_queue: Some(MessageQueue {
                topic: res("orders"),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            keys(receive.checks().unwrap()),
            ["Group:g1 Sub", "Topic:orders Sub"]
        );
        let ack = AckMessageRequest {
            group: res("%RETRY%g1"),
            topic: res("orders"),
            ..Default::default()
        };
        assert_eq!(
            keys(ack.checks().unwrap()),
            ["Group:g1 Sub", "Topic:orders Sub"]
        );
        let route = QueryRouteRequest {
            topic: res("orders"),
            ..Default::default()
        };
        assert_eq!(keys(route.checks().unwrap()), ["Topic:orders Pub|Sub"]);
        let change = ChangeInvisibleDurationRequest {
            group: res("g1"),
            topic: res("orders"),
            ..Default::default()
        };
        assert_eq!(keys(change.checks().unwrap()), ["Group:g1 Sub"]);
        let end = EndTransactionRequest {
            topic: res("tx"),
            ..Default::default()
        };
        assert_eq!(keys(end.checks().unwrap()), ["Topic:tx Pub"]);
        assert_eq!(
            EndTransactionRequest::RPC,
            "apache.rocketmq.v2.EndTransactionRequest"
        );
    }

    #[test]
    fn producers_heartbeats_and_groupless_terminations_need_nothing() {
        let producer = HeartbeatRequest {
            group: None,
            client_type: ClientType::Producer as i32,
        };
        assert!(producer.checks().unwrap().is_empty());
        let consumer = HeartbeatRequest {
            group: res("g1"),
            client_type: ClientType::SimpleConsumer as i32,
        };
        assert_eq!(keys(consumer.checks().unwrap()), ["Group:g1 Sub"]);
        let groupless = HeartbeatRequest {
            group: None,
            client_type: ClientType::PushConsumer as i32,
        };
        assert_eq!(groupless.checks().unwrap_err(), "group is null.");
        assert!(NotifyClientTerminationRequest { group: None }
            .checks()
            .unwrap()
            .is_empty());
    }

    #[test]
    fn telemetry_settings_need_what_they_publish_or_subscribe() {
        let publishing = TelemetryCommand {
            command: Some(telemetry_command::Command::Settings(Settings {
                pub_sub: Some(settings::PubSub::Publishing(Publishing {
                    topics: vec![res("a").unwrap_or_default(), res("b").unwrap_or_default()],
                    ..Default::default()
                })),
                ..Default::default()
            })),
            ..Default::default()
        };
        assert_eq!(
            keys(publishing.checks().unwrap()),
            ["Topic:a Pub", "Topic:b Pub"]
        );
        let subscription = TelemetryCommand {
            command: Some(telemetry_command::Command::Settings(Settings {
                pub_sub: Some(settings::PubSub::Subscription(Subscription {
                    group: res("g"),
                    subscriptions: vec![SubscriptionEntry {
                        topic: res("t"),
                        ..Default::default()
                    }],
                    ..Default::default()
                })),
                ..Default::default()
            })),
            ..Default::default()
        };
        assert_eq!(
            keys(subscription.checks().unwrap()),
            ["Group:g Sub", "Topic:t Sub"]
        );
        assert!(TelemetryCommand::default().checks().unwrap().is_empty());
        let empty = SendMessageRequest { messages: vec![] };
        assert_eq!(empty.checks().unwrap_err(), "message is null.");
    }
}

//! What each request asks, as Apache's `DefaultAuthorizationContextBuilder` reads it from a remoting
//! request: the resources it touches (`Topic:`, `Group:`, `Cluster:`) and the actions on each. A
//! request with no resource is not authorized (only authenticated), as on Apache.
//!
//! Where Apache leaves a request that reads or writes messages or creates topics unchecked (its
//! header has no resource annotation), it is checked here as its sibling is: LITE_PULL_MESSAGE as a
//! pull, BATCH_ACK_MESSAGE as acks, UPDATE_AND_CREATE_TOPIC_LIST as creating each topic, and the
//! broker's own config (GET/UPDATE_BROKER_CONFIG) as the cluster's.

use auth::{Action, Resource};
use protocol::body::{
    BatchAckMessageRequestBody, CreateTopicListRequestBody, HeartbeatData, LockBatchRequestBody,
};
use protocol::request_code as code;
use protocol::RemotingCommand;

/// One check: the resource and the actions asked on it.
pub type Need = (Resource, Vec<Action>);

const RETRY_PREFIX: &str = "%RETRY%";

fn is_retry(topic: &str) -> bool {
    topic.starts_with(RETRY_PREFIX)
}

/// A topic a request names; a retry topic stands for its group (Apache's annotation rule).
fn topic_or_group(name: &str) -> Resource {
    if is_retry(name) {
        Resource::group(name)
    } else {
        Resource::topic(name)
    }
}

/// The resources of a request read from its header fields: `(field, is a topic)`; the ones present
/// are checked with `actions`; none present means nothing to check, or the cluster when
/// `cluster_when_none` (Apache's `resource = CLUSTER` headers).
fn fields(
    req: &RemotingCommand,
    named: &[(&str, bool)],
    actions: &[Action],
    cluster_when_none: Option<&str>,
) -> Vec<Need> {
    let mut out: Vec<Need> = named
        .iter()
        .filter_map(|(field, is_topic)| {
            let value = req.ext(field)?;
            Some((
                if *is_topic {
                    topic_or_group(value)
                } else {
                    Resource::group(value)
                },
                actions.to_vec(),
            ))
        })
        .collect();
    if out.is_empty() {
        if let Some(cluster) = cluster_when_none {
            out.push((Resource::cluster(cluster), actions.to_vec()));
        }
    }
    out
}

fn cluster(cluster: &str, actions: &[Action]) -> Vec<Need> {
    vec![(Resource::cluster(cluster), actions.to_vec())]
}

fn ext<'a>(req: &'a RemotingCommand, key: &str) -> &'a str {
    req.ext(key).unwrap_or_default()
}

/// A send: PUB on the topic; a send to a retry topic (a consumer's send-back) is SUB on the group.
fn send(req: &RemotingCommand, topic_key: &str, group_key: &str) -> Vec<Need> {
    let topic = ext(req, topic_key);
    if !is_retry(topic) {
        return vec![(Resource::topic(topic), vec![Action::Pub])];
    }
    let group = req
        .ext(group_key)
        .filter(|g| !g.trim().is_empty())
        .unwrap_or(topic);
    vec![(Resource::group(group), vec![Action::Sub])]
}

/// A read of a group's queue: `actions` on the topic (unless a retry topic) and on the group.
fn group_and_topic(req: &RemotingCommand, group_key: &str, actions: &[Action]) -> Vec<Need> {
    let mut out = Vec::new();
    let topic = ext(req, "topic");
    if !is_retry(topic) {
        out.push((Resource::topic(topic), actions.to_vec()));
    }
    out.push((Resource::group(ext(req, group_key)), actions.to_vec()));
    out
}

/// Locking or unlocking queues: SUB on the group and on every topic of the body.
fn lock_batch(req: &RemotingCommand) -> Result<Vec<Need>, String> {
    // Lock and unlock bodies have the same shape.
    let body: LockBatchRequestBody = protocol::body::from_json(&req.body)
        .map_err(|e| format!("the queue lock body cannot be read: {e}"))?;
    let mut out = vec![(Resource::group(&body.consumer_group), vec![Action::Sub])];
    for mq in body.mq_set.iter().filter(|mq| !is_retry(&mq.topic)) {
        out.push((Resource::topic(&mq.topic), vec![Action::Sub]));
    }
    Ok(out)
}

/// What `req` asks; `Err` when the request cannot be read well enough to say (refused then, as
/// Apache refuses a context it cannot build). `cluster` names the `Cluster:` resource.
pub fn needs(req: &RemotingCommand, cluster_name: &str) -> Result<Vec<Need>, String> {
    use Action::{Create, Delete, Get, Pub, Sub, Update};
    Ok(match req.code {
        code::SEND_MESSAGE => send(req, "topic", "group"),
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => send(req, "b", "a"),
        code::END_TRANSACTION => match req.ext("topic").filter(|t| !t.trim().is_empty()) {
            Some(topic) => vec![(Resource::topic(topic), vec![Pub])],
            None => Vec::new(),
        },
        code::RECALL_MESSAGE => vec![(Resource::topic(ext(req, "topic")), vec![Pub])],
        code::CONSUMER_SEND_MSG_BACK => vec![(Resource::group(ext(req, "group")), vec![Sub])],
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => {
            group_and_topic(req, "consumerGroup", &[Sub])
        }
        code::QUERY_MESSAGE => vec![(Resource::topic(ext(req, "topic")), vec![Sub, Get])],
        code::HEART_BEAT => {
            let data: HeartbeatData = protocol::body::from_json(&req.body)
                .map_err(|e| format!("the heartbeat body cannot be read: {e}"))?;
            let mut out = Vec::new();
            for consumer in &data.consumer_data_set {
                out.push((Resource::group(&consumer.group_name), vec![Sub]));
                for sub in consumer
                    .subscription_data_set
                    .iter()
                    .filter(|s| !is_retry(&s.topic))
                {
                    out.push((Resource::topic(&sub.topic), vec![Sub]));
                }
            }
            out
        }
        code::UNREGISTER_CLIENT => {
            match req.ext("consumerGroup").filter(|g| !g.trim().is_empty()) {
                Some(group) => vec![(Resource::group(group), vec![Sub])],
                None => Vec::new(),
            }
        }
        code::GET_CONSUMER_LIST_BY_GROUP => {
            vec![(Resource::group(ext(req, "consumerGroup")), vec![Sub, Get])]
        }
        code::QUERY_CONSUMER_OFFSET => group_and_topic(req, "consumerGroup", &[Sub, Get]),
        code::UPDATE_CONSUMER_OFFSET => group_and_topic(req, "consumerGroup", &[Sub, Update]),
        code::LOCK_BATCH_MQ | code::UNLOCK_BATCH_MQ => lock_batch(req)?,
        // POP and its siblings (Apache's header annotations).
        code::POP_MESSAGE
        | code::PEEK_MESSAGE
        | code::ACK_MESSAGE
        | code::CHANGE_MESSAGE_INVISIBLETIME
        | code::NOTIFICATION => fields(
            req,
            &[("consumerGroup", false), ("topic", true)],
            &[Sub],
            None,
        ),
        code::POLLING_INFO => fields(
            req,
            &[("consumerGroup", false), ("topic", true)],
            &[Get],
            None,
        ),
        code::BATCH_ACK_MESSAGE => {
            let body: BatchAckMessageRequestBody = serde_json::from_slice(&req.body)
                .map_err(|e| format!("the batch ack body cannot be read: {e}"))?;
            let mut out = Vec::new();
            for ack in &body.acks {
                out.push((Resource::group(&ack.consumer_group), vec![Sub]));
                out.push((topic_or_group(&ack.topic), vec![Sub]));
            }
            out
        }
        // Offsets and times of a topic's queues.
        code::GET_MAX_OFFSET
        | code::GET_MIN_OFFSET
        | code::GET_EARLIEST_MSG_STORETIME
        | code::SEARCH_OFFSET_BY_TIMESTAMP
        | code::GET_TOPIC_CONFIG
        | code::GET_TOPIC_STATS_INFO
        | code::QUERY_TOPIC_CONSUME_BY_WHO
        | code::VIEW_MESSAGE_BY_ID => fields(req, &[("topic", true)], &[Get], None),
        // Topics and groups.
        code::UPDATE_AND_CREATE_TOPIC => fields(req, &[("topic", true)], &[Create], None),
        code::UPDATE_AND_CREATE_TOPIC_LIST => {
            let body: CreateTopicListRequestBody = protocol::body::from_json(&req.body)
                .map_err(|e| format!("the topic list body cannot be read: {e}"))?;
            body.topic_config_list
                .iter()
                .map(|t| (topic_or_group(&t.topic_name), vec![Create]))
                .collect()
        }
        code::DELETE_TOPIC_IN_BROKER => fields(req, &[("topic", true)], &[Delete], None),
        code::GET_SUBSCRIPTIONGROUP_CONFIG => fields(req, &[("group", false)], &[Get], None),
        code::DELETE_SUBSCRIPTIONGROUP => fields(req, &[("groupName", false)], &[Delete], None),
        // Apache's UPDATE_AND_CREATE_SUBSCRIPTIONGROUP has a body, no annotated header: the group is
        // checked here, as its deletion is.
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            let body: serde_json::Value = serde_json::from_slice(&req.body)
                .map_err(|e| format!("the group body cannot be read: {e}"))?;
            let group = body
                .get("groupName")
                .and_then(|g| g.as_str())
                .unwrap_or_default();
            vec![(Resource::group(group), vec![Create])]
        }
        // Consumers, as admins look at them.
        code::GET_CONSUME_STATS => {
            let mut out = fields(
                req,
                &[("consumerGroup", false), ("topic", true)],
                &[Get],
                None,
            );
            for topic in ext(req, "topicList").split(';').filter(|t| !t.is_empty()) {
                out.push((topic_or_group(topic), vec![Get]));
            }
            out
        }
        code::GET_CONSUMER_CONNECTION_LIST | code::GET_CONSUMER_RUNNING_INFO => {
            fields(req, &[("consumerGroup", false)], &[Get], None)
        }
        code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS => {
            fields(req, &[("topic", true), ("group", false)], &[Get], None)
        }
        code::CONSUME_MESSAGE_DIRECTLY => fields(
            req,
            &[("consumerGroup", false), ("topic", true)],
            &[Sub],
            None,
        ),
        code::INVOKE_BROKER_TO_RESET_OFFSET => {
            fields(req, &[("group", false), ("topic", true)], &[Update], None)
        }
        code::CLONE_GROUP_OFFSET => fields(
            req,
            &[("destGroup", false), ("topic", true)],
            &[Update],
            None,
        ),
        // The cluster's.
        code::AUTH_CREATE_USER
        | code::AUTH_UPDATE_USER
        | code::AUTH_DELETE_USER
        | code::AUTH_CREATE_ACL
        | code::AUTH_UPDATE_ACL
        | code::AUTH_DELETE_ACL
        | code::NOTIFY_BROKER_ROLE_CHANGED
        | code::EXCHANGE_BROKER_HA_INFO
        | code::UPDATE_BROKER_CONFIG => cluster(cluster_name, &[Update]),
        // HA and store maintenance (Apache annotates QUERY_CONSUME_QUEUE and
        // RESET_MASTER_FLUSH_OFFSET; the others are checked as the broker's config is).
        code::QUERY_CONSUME_QUEUE => fields(
            req,
            &[("topic", true), ("consumerGroup", false)],
            &[Get],
            None,
        ),
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST => {
            let body: protocol::body::SubscriptionGroupList<serde_json::Value> =
                serde_json::from_slice(&req.body)
                    .map_err(|e| format!("the group list body cannot be read: {e}"))?;
            body.group_config_list
                .iter()
                .map(|g| {
                    let name = g
                        .get("groupName")
                        .and_then(|n| n.as_str())
                        .unwrap_or_default();
                    (Resource::group(name), vec![Create])
                })
                .collect()
        }
        code::RESET_MASTER_FLUSH_OFFSET
        | code::CLEAN_EXPIRED_CONSUMEQUEUE
        | code::DELETE_EXPIRED_COMMITLOG
        | code::CLEAN_UNUSED_TOPIC
        | code::POP_ROLLBACK => cluster(cluster_name, &[Update]),
        code::GET_BROKER_HA_STATUS | code::GET_BROKER_EPOCH_CACHE => cluster(cluster_name, &[Get]),
        code::AUTH_GET_USER
        | code::AUTH_LIST_USER
        | code::AUTH_GET_ACL
        | code::AUTH_LIST_ACL
        | code::GET_BROKER_CONSUME_STATS
        | code::GET_PRODUCER_CONNECTION_LIST
        | code::VIEW_BROKER_STATS_DATA
        | code::GET_BROKER_CONFIG => cluster(cluster_name, &[Get]),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use auth::ResourceType;

    fn keys(needs: &[Need]) -> Vec<String> {
        needs
            .iter()
            .map(|(r, a)| {
                let actions: Vec<&str> = a.iter().map(|a| a.name()).collect();
                format!("{}:{}", r.key(), actions.join("|"))
            })
            .collect()
    }

    #[test]
    fn sends_pulls_and_retries_need_what_apache_asks() {
        let send = RemotingCommand::request(code::SEND_MESSAGE_V2).with_ext("b", "orders");
        assert_eq!(keys(&needs(&send, "C").unwrap()), ["Topic:orders:Pub"]);
        let recall = RemotingCommand::request(code::RECALL_MESSAGE).with_ext("topic", "orders");
        assert_eq!(keys(&needs(&recall, "C").unwrap()), ["Topic:orders:Pub"]);
        // A consumer sending back to its retry topic needs SUB on its group.
        let back = RemotingCommand::request(code::SEND_MESSAGE_V2)
            .with_ext("b", "%RETRY%g1")
            .with_ext("a", "g1");
        assert_eq!(keys(&needs(&back, "C").unwrap()), ["Group:g1:Sub"]);
        let pull = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "orders")
            .with_ext("consumerGroup", "g1");
        assert_eq!(
            keys(&needs(&pull, "C").unwrap()),
            ["Topic:orders:Sub", "Group:g1:Sub"]
        );
        let retry_pull = RemotingCommand::request(code::LITE_PULL_MESSAGE)
            .with_ext("topic", "%RETRY%g1")
            .with_ext("consumerGroup", "g1");
        assert_eq!(keys(&needs(&retry_pull, "C").unwrap()), ["Group:g1:Sub"]);
        let offset = RemotingCommand::request(code::UPDATE_CONSUMER_OFFSET)
            .with_ext("topic", "orders")
            .with_ext("consumerGroup", "g1");
        assert_eq!(
            keys(&needs(&offset, "C").unwrap()),
            ["Topic:orders:Sub|Update", "Group:g1:Sub|Update"]
        );
    }

    #[test]
    fn admin_requests_need_the_cluster_or_the_resource() {
        let create = RemotingCommand::request(code::AUTH_CREATE_USER).with_ext("username", "bob");
        let n = needs(&create, "DefaultCluster").unwrap();
        assert_eq!(keys(&n), ["Cluster:DefaultCluster:Update"]);
        assert_eq!(n[0].0.kind, ResourceType::Cluster);
        let topic = RemotingCommand::request(code::UPDATE_AND_CREATE_TOPIC).with_ext("topic", "t1");
        assert_eq!(keys(&needs(&topic, "C").unwrap()), ["Topic:t1:Create"]);
        let stats = RemotingCommand::request(code::GET_CONSUME_STATS)
            .with_ext("consumerGroup", "g")
            .with_ext("topicList", "a;b");
        assert_eq!(
            keys(&needs(&stats, "C").unwrap()),
            ["Group:g:Get", "Topic:a:Get", "Topic:b:Get"]
        );
        // Route and other unannotated reads: nothing to authorize.
        let runtime = RemotingCommand::request(code::GET_BROKER_RUNTIME_INFO);
        assert!(needs(&runtime, "C").unwrap().is_empty());
    }

    #[test]
    fn maintenance_codes_need_what_their_siblings_need() {
        let cq = RemotingCommand::request(code::QUERY_CONSUME_QUEUE)
            .with_ext("topic", "orders")
            .with_ext("consumerGroup", "g1");
        assert_eq!(
            keys(&needs(&cq, "C").unwrap()),
            ["Topic:orders:Get", "Group:g1:Get"]
        );
        let mut list = RemotingCommand::request(code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST);
        list.body = bytes::Bytes::from_static(
            br#"{"groupConfigList":[{"groupName":"g1"},{"groupName":"g2"}]}"#,
        );
        assert_eq!(
            keys(&needs(&list, "C").unwrap()),
            ["Group:g1:Create", "Group:g2:Create"]
        );
        for c in [
            code::RESET_MASTER_FLUSH_OFFSET,
            code::DELETE_EXPIRED_COMMITLOG,
            code::CLEAN_EXPIRED_CONSUMEQUEUE,
            code::CLEAN_UNUSED_TOPIC,
        ] {
            let req = RemotingCommand::request(c);
            assert_eq!(
                keys(&needs(&req, "C").unwrap()),
                ["Cluster:C:Update"],
                "code {c}"
            );
        }
        let ha = RemotingCommand::request(code::GET_BROKER_HA_STATUS);
        assert_eq!(keys(&needs(&ha, "C").unwrap()), ["Cluster:C:Get"]);
    }

    #[test]
    fn unreadable_bodies_are_errors_not_panics() {
        for c in [
            code::HEART_BEAT,
            code::LOCK_BATCH_MQ,
            code::BATCH_ACK_MESSAGE,
        ] {
            let mut req = RemotingCommand::request(c);
            req.body = bytes::Bytes::from_static(b"{not json");
            assert!(needs(&req, "C").is_err(), "code {c}");
        }
    }
}

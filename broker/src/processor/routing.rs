//! Where each request a client sends runs: on the shard whose connection received it, on the shard
//! that owns the queue it names, or on the control shard. This table is the only place that says so;
//! `processor::process` says what runs.

use protocol::request_code as code;

/// The shard a request runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOn {
    /// The receiving shard (sends are validated here and put on the queue's owner; lookups and
    /// statistics fan out to the shards they need; unknown codes are answered here).
    Receiver,
    /// The owner of the queue named by the `topic` and `queueId` header fields.
    QueueOwner,
    /// The shard holding the half message that END_TRANSACTION's `commitLogOffset` names (the owner
    /// of the transaction half queue when the offset is missing or names no shard).
    HalfQueueOwner,
    /// The control shard (client registry, topic and group admin, broker-wide figures).
    Control,
}

/// Where a client's request with `request_code` runs.
pub fn runs_on(request_code: i32) -> RunsOn {
    match request_code {
        code::PULL_MESSAGE
        | code::LITE_PULL_MESSAGE
        | code::QUERY_CONSUMER_OFFSET
        | code::UPDATE_CONSUMER_OFFSET
        | code::GET_MAX_OFFSET
        | code::GET_MIN_OFFSET
        | code::GET_EARLIEST_MSG_STORETIME
        | code::SEARCH_OFFSET_BY_TIMESTAMP
        // POP: queueId -1 ("any queue") runs where it lands and visits each queue on its owner.
        | code::POP_MESSAGE
        | code::PEEK_MESSAGE
        | code::ACK_MESSAGE
        | code::CHANGE_MESSAGE_INVISIBLETIME
        | code::NOTIFICATION
        | code::POLLING_INFO => RunsOn::QueueOwner,
        code::END_TRANSACTION => RunsOn::HalfQueueOwner,
        code::HEART_BEAT
        | code::UNREGISTER_CLIENT
        | code::GET_CONSUMER_LIST_BY_GROUP
        | code::UPDATE_AND_CREATE_TOPIC
        | code::DELETE_TOPIC_IN_BROKER
        | code::GET_BROKER_RUNTIME_INFO
        | code::GET_ALL_CONSUMER_OFFSET
        | code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        | code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
        | code::LOCK_BATCH_MQ
        | code::UNLOCK_BATCH_MQ
        | code::INVOKE_BROKER_TO_RESET_OFFSET
        | code::GET_CONSUMER_CONNECTION_LIST
        | code::GET_CONSUMER_RUNNING_INFO
        | code::CONSUME_MESSAGE_DIRECTLY
        | code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS
        | code::GET_PRODUCER_CONNECTION_LIST
        | code::UPDATE_BROKER_CONFIG
        | code::DELETE_SUBSCRIPTIONGROUP
        | code::QUERY_TOPIC_CONSUME_BY_WHO
        | code::CLONE_GROUP_OFFSET
        | code::NOTIFY_BROKER_ROLE_CHANGED => RunsOn::Control,
        // Needs only the config or the subscription groups: every shard has them.
        code::CHECK_CLIENT_CONFIG | code::GET_BROKER_CONFIG | code::GET_SUBSCRIPTIONGROUP_CONFIG => {
            RunsOn::Receiver
        }
        // BATCH_ACK_MESSAGE (its acks name their queues in the body),
        // SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE(_V2) (the requester's connection
        // may be on any shard; the control shard says which), CONSUMER_SEND_MSG_BACK, VIEW_MESSAGE_BY_ID,
        // QUERY_MESSAGE, GET_TOPIC_STATS_INFO, GET_CONSUME_STATS, GET_ALL_TOPIC_CONFIG,
        // VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS,
        // GET_ALL_DELAY_OFFSET, and codes this broker does not serve.
        _ => RunsOn::Receiver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_stay_pulls_go_to_the_owner_admin_to_control() {
        assert_eq!(runs_on(code::SEND_MESSAGE_V2), RunsOn::Receiver);
        assert_eq!(runs_on(code::PULL_MESSAGE), RunsOn::QueueOwner);
        assert_eq!(runs_on(code::LITE_PULL_MESSAGE), RunsOn::QueueOwner);
        assert_eq!(runs_on(code::POP_MESSAGE), RunsOn::QueueOwner);
        assert_eq!(runs_on(code::ACK_MESSAGE), RunsOn::QueueOwner);
        assert_eq!(runs_on(code::BATCH_ACK_MESSAGE), RunsOn::Receiver);
        assert_eq!(runs_on(code::SEND_REPLY_MESSAGE_V2), RunsOn::Receiver);
        assert_eq!(runs_on(code::END_TRANSACTION), RunsOn::HalfQueueOwner);
        assert_eq!(runs_on(code::HEART_BEAT), RunsOn::Control);
        // The client registry, which knows the consumer's connection, is the control shard's.
        assert_eq!(runs_on(code::GET_CONSUMER_RUNNING_INFO), RunsOn::Control);
        assert_eq!(runs_on(code::CHECK_CLIENT_CONFIG), RunsOn::Receiver);
        // The check-back request is the broker's own, never taken from a client.
        assert_eq!(runs_on(code::CHECK_TRANSACTION_STATE), RunsOn::Receiver);
    }
}

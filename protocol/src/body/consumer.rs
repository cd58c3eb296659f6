//! Consumer bodies: the consumer id list of a group, and queue locking for orderly consumers.

use serde::{Deserialize, Serialize};

/// A queue of a topic on one broker group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    #[serde(default)]
    pub topic: String,
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub queue_id: i32,
}

/// GET_CONSUMER_LIST_BY_GROUP response body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GetConsumerListByGroupResponseBody {
    #[serde(default)]
    pub consumer_id_list: Vec<String>,
}

/// LOCK_BATCH_MQ request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    #[serde(default)]
    pub consumer_group: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub only_this_broker: bool,
    #[serde(default)]
    pub mq_set: Vec<MessageQueue>,
}

/// LOCK_BATCH_MQ response body: the queues now locked by the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LockBatchResponseBody {
    #[serde(rename = "lockOKMQSet", default)]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}

/// UNLOCK_BATCH_MQ request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct UnlockBatchRequestBody {
    #[serde(default)]
    pub consumer_group: String,
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub only_this_broker: bool,
    #[serde(default)]
    pub mq_set: Vec<MessageQueue>,
}

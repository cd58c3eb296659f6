//! One-call broker requests on a connection: consumer offsets, queue min/max offsets, heartbeat,
//! queue locks of orderly consumers and a consumer's send-back of a message it failed to consume.

use std::time::Duration;

use protocol::body::perm;
use protocol::body::MessageQueue;
use protocol::body::{
    from_json, to_json, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
};
use protocol::header::{
    CommandHeader, ConsumerSendMsgBackRequestHeader, CreateTopicRequestHeader,
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, UpdateConsumerOffsetRequestHeader,
};
use protocol::{request_code, response_code};
use remoting::Client;

use crate::error::ClientError;
use crate::request::{expect_code, expect_success, request};

/// The topic brokers auto-create new topics from (the Java client's `defaultTopic`).
pub const DEFAULT_TOPIC: &str = "TBW102";

/// The committed offset of a group on a queue; `None` when the broker has none (QUERY_NOT_FOUND).
pub async fn query_consumer_offset(
    client: &Client,
    group: &str,
    topic: &str,
    queue_id: i32,
    timeout: Duration,
) -> Result<Option<i64>, ClientError> {
    let header = QueryConsumerOffsetRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id,
        set_zero_if_not_found: None,
    };
    let cmd = request(request_code::QUERY_CONSUMER_OFFSET, header.to_ext_fields());
    let resp = client.invoke(cmd, timeout).await?;
    let resp = expect_code(
        resp,
        &[response_code::SUCCESS, response_code::QUERY_NOT_FOUND],
    )?;
    if resp.code == response_code::QUERY_NOT_FOUND {
        return Ok(None);
    }
    Ok(Some(
        QueryConsumerOffsetResponseHeader::from_ext_fields(&resp.ext_fields)?.offset,
    ))
}

/// Commits a group's offset on a queue; `oneway` sends it without waiting, as the Java client's
/// periodic persistence does.
pub async fn update_consumer_offset(
    client: &Client,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    oneway: bool,
    timeout: Duration,
) -> Result<(), ClientError> {
    let header = UpdateConsumerOffsetRequestHeader {
        consumer_group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id,
        commit_offset: offset,
    };
    let cmd = request(request_code::UPDATE_CONSUMER_OFFSET, header.to_ext_fields());
    if oneway {
        client.invoke_oneway(cmd).await?;
        return Ok(());
    }
    expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(())
}

/// The next offset to be written in a queue (its message count when nothing was deleted).
pub async fn max_offset(
    client: &Client,
    topic: &str,
    queue_id: i32,
    timeout: Duration,
) -> Result<i64, ClientError> {
    let header = GetMaxOffsetRequestHeader {
        topic: topic.to_owned(),
        queue_id,
        committed: None,
    };
    let cmd = request(request_code::GET_MAX_OFFSET, header.to_ext_fields());
    let resp = expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(GetMaxOffsetResponseHeader::from_ext_fields(&resp.ext_fields)?.offset)
}

/// The oldest offset still stored in a queue.
pub async fn min_offset(
    client: &Client,
    topic: &str,
    queue_id: i32,
    timeout: Duration,
) -> Result<i64, ClientError> {
    let header = GetMinOffsetRequestHeader {
        topic: topic.to_owned(),
        queue_id,
    };
    let cmd = request(request_code::GET_MIN_OFFSET, header.to_ext_fields());
    let resp = expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(GetMinOffsetResponseHeader::from_ext_fields(&resp.ext_fields)?.offset)
}

/// Sends HEART_BEAT (registers producer / consumer groups and subscriptions with the broker).
pub async fn heartbeat(
    client: &Client,
    data: &HeartbeatData,
    timeout: Duration,
) -> Result<(), ClientError> {
    let cmd =
        request(request_code::HEART_BEAT, protocol::ExtFields::new()).with_body(to_json(data));
    expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(())
}

/// UPDATE_AND_CREATE_TOPIC on one broker: `queues` read and write queues, read+write permission.
pub async fn create_topic(
    client: &Client,
    topic: &str,
    queues: i32,
    timeout: Duration,
) -> Result<(), ClientError> {
    let header = CreateTopicRequestHeader {
        topic: topic.to_owned(),
        default_topic: DEFAULT_TOPIC.to_owned(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: perm::READ | perm::WRITE,
        topic_filter_type: "SINGLE_TAG".to_owned(),
        topic_sys_flag: Some(0),
        order: Some(false),
        attributes: None,
        force: None,
    };
    let cmd = request(
        request_code::UPDATE_AND_CREATE_TOPIC,
        header.to_ext_fields(),
    );
    expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(())
}

/// LOCK_BATCH_MQ: asks the broker to lock `queues` for `client_id` of `group` (an orderly consumer
/// consumes a queue only while it holds its lock); returns the queues now locked by it.
pub async fn lock_batch_mq(
    client: &Client,
    group: &str,
    client_id: &str,
    queues: &[MessageQueue],
    timeout: Duration,
) -> Result<Vec<MessageQueue>, ClientError> {
    let body = LockBatchRequestBody {
        consumer_group: group.to_owned(),
        client_id: client_id.to_owned(),
        only_this_broker: false,
        mq_set: queues.to_vec(),
    };
    let cmd =
        request(request_code::LOCK_BATCH_MQ, protocol::ExtFields::new()).with_body(to_json(&body));
    let resp = expect_success(client.invoke(cmd, timeout).await?)?;
    let locked: LockBatchResponseBody = from_json(&resp.body)?;
    Ok(locked.lock_ok_mq_set)
}

/// CONSUMER_SEND_MSG_BACK: hands the message stored at `commit_log_offset` back to the broker, which
/// stores it in `%RETRY%group` (delayed by `delay_level`, 0: the broker's 3 + reconsumeTimes) or, once
/// it was consumed `max_reconsume_times` times, in `%DLQ%group`.
#[allow(clippy::too_many_arguments)]
pub async fn consumer_send_msg_back(
    client: &Client,
    group: &str,
    commit_log_offset: i64,
    delay_level: i32,
    origin_msg_id: Option<&str>,
    origin_topic: Option<&str>,
    max_reconsume_times: i32,
    timeout: Duration,
) -> Result<(), ClientError> {
    let header = ConsumerSendMsgBackRequestHeader {
        offset: commit_log_offset,
        group: group.to_owned(),
        delay_level,
        origin_msg_id: origin_msg_id.map(str::to_owned),
        origin_topic: origin_topic.map(str::to_owned),
        unit_mode: Some(false),
        max_reconsume_times: Some(max_reconsume_times),
    };
    let cmd = request(request_code::CONSUMER_SEND_MSG_BACK, header.to_ext_fields());
    expect_success(client.invoke(cmd, timeout).await?)?;
    Ok(())
}

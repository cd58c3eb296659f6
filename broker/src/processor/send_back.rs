//! CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume. The stored
//! message is copied to the group's retry topic `%RETRY%group` with RETRY_TOPIC / ORIGIN_MESSAGE_ID set
//! and reconsumeTimes + 1, or to the dead-letter topic `%DLQ%group` once it has been retried
//! maxReconsumeTimes times (or delayLevel < 0), as RocketMQ does. maxReconsumeTimes is the request's
//! (clients since 3.4.9 send it), else the subscription group's `retryMaxTimes`; a group that does not
//! exist (and may not be created) answers SUBSCRIPTION_GROUP_NOT_EXIST, one with `retryQueueNums` 0
//! drops the message. The retry copy is delayed: it carries
//! DELAY = the client's delayLevel, or 3 + reconsumeTimes, and waits in SCHEDULE_TOPIC_XXXX until due
//! (`schedule`). The dead-letter topic is created on demand, writable but not readable (RocketMQ's
//! DLQ perm), so nobody consumes it by accident.

use std::rc::Rc;

use protocol::body::perm;
use protocol::command::mq_version;
use protocol::header::{CommandHeader, ConsumerSendMsgBackRequestHeader, SendHeader};
use protocol::message::edited_properties::EditedProperties;
use protocol::message::properties;
use protocol::message::record::MessageRecord;
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::group_settings;
use crate::common::reply::{error, header_error, ok, owner_put_error};
use crate::shard::put::SendStatus;
use crate::shard::Shard;
use crate::state::topics::{retry_topic, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};

/// The retry limit of a request: the client's `maxReconsumeTimes` when it sends one (clients since
/// 3.4.9), else the group's `retryMaxTimes`.
fn max_reconsume_times(version: i32, requested: Option<i32>, group_retry_max_times: i32) -> i32 {
    match requested {
        Some(times) if version >= mq_version::V3_4_9 => times,
        _ => group_retry_max_times,
    }
}

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match ConsumerSendMsgBackRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let Some(group) = group_settings::find(shard, &h.group).await else {
        return group_settings::not_exist(&h.group);
    };
    if !perm::is_writeable(crate::config::live::broker_permission(&shard.cfg) as i32) {
        return error(
            rc::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                shard.cfg.broker_ip1
            ),
        );
    }
    if group.retry_queue_nums <= 0 {
        // RocketMQ's answer: the group wants no retries, so the message is dropped.
        return ok();
    }
    let original = match read(shard, h.offset).await {
        Ok(record) => record,
        Err(why) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("look message by offset failed, {}: {why}", h.offset),
            )
        }
    };
    let max_times = max_reconsume_times(req.version, h.max_reconsume_times, group.retry_max_times);
    let to_dlq = original.reconsume_times >= max_times || h.delay_level < 0;
    let topic = if to_dlq {
        let origin = properties::get(&original.properties, properties::RETRY_TOPIC)
            .unwrap_or(&original.topic);
        crate::feature::metrics::apache_local::record_dlq(&h.group, origin);
        format!("{DLQ_GROUP_TOPIC_PREFIX}{}", h.group)
    } else {
        retry_topic(&h.group)
    };
    if let Err(why) = crate::state::topics::validate_topic_name(&topic) {
        return error(rc::SYSTEM_ERROR, why);
    }
    if let Err(response) =
        crate::common::topic_create::ensure_retry_topic(shard, &topic, to_dlq).await
    {
        return response;
    }
    let mut props = original.properties.clone();
    if properties::get(&props, properties::RETRY_TOPIC).is_none() {
        props = properties::with(&props, properties::RETRY_TOPIC, &original.topic);
    }
    if properties::get(&props, properties::ORIGIN_MESSAGE_ID).is_none() {
        let origin = h
            .origin_msg_id
            .clone()
            .or_else(|| {
                properties::get(&original.properties, properties::UNIQ_KEY).map(str::to_owned)
            })
            .unwrap_or_else(|| {
                protocol::message::msgid::offset_msg_id(
                    original.store_host,
                    original.physical_offset,
                )
            });
        props = properties::with(&props, properties::ORIGIN_MESSAGE_ID, &origin);
    }
    if !to_dlq {
        let level = if h.delay_level == 0 {
            3 + original.reconsume_times
        } else {
            h.delay_level
        };
        props = properties::with(&props, properties::DELAY, &level.to_string());
    }
    let record = MessageRecord {
        topic,
        queue_id: 0,
        properties: props,
        reconsume_times: original.reconsume_times.saturating_add(1),
        store_host: shard.store_host,
        queue_offset: 0,
        physical_offset: 0,
        store_timestamp: 0,
        ..original
    };
    let record = crate::feature::schedule::park_if_delayed(
        record,
        crate::feature::schedule::max_level(shard),
    );
    let owner = shard.owner(&record.topic, record.queue_id);
    match owner.put(record).await {
        Ok(outcome) if outcome.status == SendStatus::SendOk => ok(),
        Ok(outcome) => error(outcome.status.response_code(), outcome.status.describe()),
        Err(e) => owner_put_error(&e),
    }
}

/// RocketMQ's `handleRetryAndDLQ` for plain sends: a message a client sends itself to `%RETRY%group`
/// (a consumer whose CONSUMER_SEND_MSG_BACK failed) once its retries ran out goes to `%DLQ%group`,
/// undelayed, instead. The limit is the header's, else the group's `retryMaxTimes`; `version` is the
/// request's.
pub async fn divert_exhausted_retry(
    shard: &Rc<Shard>,
    header: &SendHeader<'_>,
    version: i32,
    record: &mut MessageRecord,
    props: &mut EditedProperties<'_>,
) -> Result<(), RemotingCommand> {
    let Some(group) = record.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(());
    };
    let Some(settings) = group_settings::find(shard, group).await else {
        return Err(group_settings::not_exist(group));
    };
    let max_times = max_reconsume_times(
        version,
        header.max_reconsume_times,
        settings.retry_max_times,
    );
    if header.reconsume_times.unwrap_or(0) < max_times {
        return Ok(());
    }
    let dlq = format!("{DLQ_GROUP_TOPIC_PREFIX}{group}");
    crate::state::topics::validate_topic_name(&dlq)
        .map_err(|why| error(rc::MESSAGE_ILLEGAL, why))?;
    crate::common::topic_create::ensure_retry_topic(shard, &dlq, true).await?;
    let origin = props.get(properties::RETRY_TOPIC).unwrap_or(header.topic);
    crate::feature::metrics::apache_local::record_dlq(group, origin);
    record.topic = dlq;
    record.queue_id = 0;
    props.remove(properties::DELAY);
    Ok(())
}

/// The stored message at a physical offset (any shard).
async fn read(shard: &Shard, offset: i64) -> Result<MessageRecord, String> {
    let owner = usize::from(storage::shard_of(offset));
    if offset < 0 || owner >= shard.shards {
        return Err("no such shard".to_owned());
    }
    match shard.on(owner).read_record(offset).await? {
        Some(bytes) => MessageRecord::decode(&bytes, false)
            .map(|(record, _)| record)
            .map_err(|e| e.to_string()),
        None => Err("no message there".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_limit_wins_from_3_4_9_else_the_groups() {
        assert_eq!(max_reconsume_times(mq_version::V3_4_9, Some(3), 16), 3);
        assert_eq!(max_reconsume_times(mq_version::V3_4_9, None, 2), 2);
        // Older clients' value is ignored, as RocketMQ does.
        assert_eq!(max_reconsume_times(mq_version::V3_4_9 - 1, Some(3), 5), 5);
    }
}

//! SEND_MESSAGE (10, also with `batch` set), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320):
//! validate on the receiving shard, build the records, store them in the queue owner's store, answer
//! with offsetMsgId(s), queue id and queue offset. Every message is stamped with the broker's cluster
//! name (`CLUSTER`, replacing a client's), as RocketMQ's broker does, so a responder can address its
//! reply to `<cluster>_REPLY_TOPIC`.

use std::net::SocketAddr;
use std::rc::Rc;

use protocol::body::perm;
use protocol::header::{SendHeader, SendMessageResponseHeader};
use protocol::message::edited_properties::EditedProperties;
use protocol::message::properties;
use protocol::message::record::{sys_flag, MessageRecord, MAX_PROPERTIES_LEN};
use protocol::message::{batch, msgid};
use protocol::response_code as rc;
use protocol::RemotingCommand;
use storage::PutOk;

use crate::common::reply::{error, header_error, owner_put_error};
use crate::feature::metrics::apache_local as apache_metrics;
use crate::shard::put::{OneOrMany, SendStatus};
use crate::shard::Shard;
use crate::state::topics;

pub async fn handle(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    born_host: SocketAddr,
) -> RemotingCommand {
    let started = std::time::Instant::now();
    // The header's text fields stay in the request's extFields (read in place, not copied).
    let response = match SendHeader::parse(req.code, &req.ext_fields) {
        Err(e) => header_error(&e),
        Ok(header) => match prepare(shard, req, &header, born_host).await {
            Ok((records, batch)) => store(shard, records, batch, header.topic).await,
            Err(response) => response,
        },
    };
    crate::feature::metrics::record_put(started.elapsed());
    crate::feature::broker_stats::record_send_time(started.elapsed());
    if response.code != rc::SUCCESS {
        shard.counters.send_error();
        tracing::debug!(
            "send rejected: code {} {}",
            response.code,
            response.remark.as_deref().unwrap_or("")
        );
    }
    response
}

/// Validates the request and builds the records to store (all for one queue).
async fn prepare(
    shard: &Rc<Shard>,
    req: &RemotingCommand,
    header: &SendHeader<'_>,
    born_host: SocketAddr,
) -> Result<(OneOrMany<MessageRecord>, bool), RemotingCommand> {
    let cfg = &shard.cfg;
    if !perm::is_writeable(crate::config::live::broker_permission(cfg) as i32) {
        return Err(error(
            rc::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                cfg.broker_ip1
            ),
        ));
    }
    if shard.role() == crate::config::BrokerRole::Slave {
        return Err(error(
            rc::SERVICE_NOT_AVAILABLE,
            format!(
                "the broker[{}] is a slave, and does not accept sends",
                cfg.broker_ip1
            ),
        ));
    }
    if cfg.controller.enabled {
        // Controller mode: refused rather than acknowledged by fewer replicas than required.
        let in_sync = crate::replication::ha_state::ha(shard)
            .sync_state_set
            .borrow()
            .len()
            .max(1);
        if in_sync < cfg.controller.min_in_sync_replicas {
            return Err(error(
                rc::SYSTEM_ERROR,
                format!(
                    "in-sync replicas not enough: {in_sync} of minInSyncReplicas {}",
                    cfg.controller.min_in_sync_replicas
                ),
            ));
        }
    }
    topics::validate_topic_name(header.topic).map_err(|why| error(rc::MESSAGE_ILLEGAL, why))?;
    if topics::is_not_allowed_send(header.topic) {
        return Err(error(
            rc::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", header.topic),
        ));
    }
    let topic_config = crate::common::topic_create::find_or_create_for_send(shard, header).await?;
    if !perm::is_writeable(topic_config.perm) {
        return Err(error(
            rc::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", header.topic),
        ));
    }
    let mut queue_id = header.queue_id;
    let queues = topic_config
        .write_queue_nums
        .max(topic_config.read_queue_nums);
    if queue_id >= queues {
        return Err(error(
            rc::SYSTEM_ERROR,
            format!(
                "request queueId[{queue_id}] is illegal, topic {} has {} write and {} read queues, producer: {born_host}",
                header.topic, topic_config.write_queue_nums, topic_config.read_queue_nums
            ),
        ));
    }
    if queue_id < 0 {
        queue_id = pick_queue(shard, header.topic, topic_config.write_queue_nums);
    }
    let max_message_size = crate::config::live::max_message_size(cfg);
    if req.body.len() > max_message_size {
        return Err(error(
            rc::MESSAGE_ILLEGAL,
            format!(
                "the message body size {} exceeds maxMessageSize {max_message_size}",
                req.body.len(),
            ),
        ));
    }
    // The properties are parsed once here; the features below edit them and they are encoded once,
    // into the record, at the end. RocketMQ's broker sets CLUSTER on every message it is sent,
    // whatever the client put there.
    let mut props = EditedProperties::new(header.properties.unwrap_or_default());
    props.set(properties::CLUSTER, shard.cfg.broker_cluster_name.as_str());
    check_properties(props.encoded_len())?;
    let compacted = topic_config.compacted;
    let is_batch =
        header.is_batch(req.code) || flag_set_as_digit(req, "batch") || flag_set_as_digit(req, "m");
    let template = MessageRecord {
        queue_id,
        flag: header.flag,
        // Host bits are set by the encoder; every message is stored as its own record, so the
        // batch-as-one-record bits a client might set do not apply.
        sys_flag: header.sys_flag
            & !(sys_flag::BORNHOST_V6
                | sys_flag::STOREHOST_V6
                | sys_flag::INNER_BATCH
                | sys_flag::NEED_UNWRAP),
        born_timestamp: header.born_timestamp,
        born_host,
        store_host: shard.store_host,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        topic: header.topic.to_owned(),
        ..MessageRecord::default()
    };
    let records = if is_batch {
        if topics::is_retry_or_dlq(header.topic) {
            return Err(error(
                rc::MESSAGE_ILLEGAL,
                "retry or DLQ topics do not accept batch messages",
            ));
        }
        let entries = batch::decode_owned(&req.body)
            .map_err(|e| error(rc::MESSAGE_ILLEGAL, format!("bad batch body: {e}")))?;
        crate::feature::schedule::park::refuse_delayed_batch(
            props.get(properties::DELAY),
            &entries,
        )
        .map_err(|why| error(rc::MESSAGE_ILLEGAL, why))?;
        if entries.is_empty() {
            return Err(error(rc::MESSAGE_ILLEGAL, "the batch holds no message"));
        }
        let mut records = Vec::with_capacity(entries.len());
        for entry in entries {
            let properties = with_cluster(shard, &entry.properties);
            check_properties(properties.len())?;
            if compacted {
                require_key(properties::get(&properties, properties::KEYS))?;
            }
            records.push(MessageRecord {
                flag: entry.flag,
                body: entry.body,
                properties,
                ..template.clone()
            });
        }
        OneOrMany::Many(records)
    } else {
        if compacted {
            require_key(props.get(properties::KEYS))?;
        }
        let mut record = MessageRecord {
            body: req.body.clone(),
            ..template
        };
        if sys_flag::transaction_type(record.sys_flag) == sys_flag::TRANSACTION_PREPARED {
            into_half_message(&mut record, &mut props);
        }
        super::send_back::divert_exhausted_retry(
            shard,
            header,
            req.version,
            &mut record,
            &mut props,
        )
        .await?;
        park_if_timed(shard, &mut record, &mut props)?;
        crate::feature::schedule::park_delayed(
            &mut record,
            &mut props,
            crate::feature::schedule::max_level(shard),
        );
        // The stored properties, encoded once (one allocation of their exact length).
        record.properties = props.encode();
        OneOrMany::One(record)
    };
    Ok((records, is_batch))
}

/// A compaction topic keeps the newest message per key, so a message without one is refused, as
/// RocketMQ 5 does.
fn require_key(keys: Option<&str>) -> Result<(), RemotingCommand> {
    if keys.unwrap_or("").trim().is_empty() {
        return Err(error(
            rc::MESSAGE_ILLEGAL,
            "Required message key is missing",
        ));
    }
    Ok(())
}

/// Parks a timer message on the timer queue of the shard owning its real queue (so delivery is a local
/// put); a delay above `timerMaxDelaySec` is refused with MESSAGE_ILLEGAL, as RocketMQ 5 does.
fn park_if_timed<'a>(
    shard: &Shard,
    record: &mut MessageRecord,
    props: &mut EditedProperties<'a>,
) -> Result<(), RemotingCommand> {
    crate::feature::timer::park_timed(
        record,
        props,
        shard.cfg.timer_wheel_enable,
        shard.cfg.timer_max_delay_sec,
        topics::now_ms(),
        |topic, queue_id| crate::feature::timer::queue_of(shard, shard.owner_of(topic, queue_id)),
    )
    .map_err(|why| error(rc::MESSAGE_ILLEGAL, why))
}

/// A message's properties with `CLUSTER` set to this broker's cluster (RocketMQ's broker sets it on
/// every message it is sent, batch entries included, whatever the client put there).
fn with_cluster(shard: &Shard, props: &str) -> String {
    properties::with(props, properties::CLUSTER, &shard.cfg.broker_cluster_name)
}

/// The C++ client writes booleans as `1`/`0` (`batch=1` on its batch sends), which Java's parseBoolean
/// reads as false; accept it.
fn flag_set_as_digit(req: &RemotingCommand, key: &str) -> bool {
    req.ext(key).is_some_and(|v| v.trim() == "1")
}

/// Refuses properties of `len` bytes when the record format cannot carry them.
fn check_properties(len: usize) -> Result<(), RemotingCommand> {
    if len > MAX_PROPERTIES_LEN {
        return Err(error(
            rc::MESSAGE_ILLEGAL,
            format!(
                "the message properties are {len} bytes long, over the limit of {MAX_PROPERTIES_LEN}"
            ),
        ));
    }
    Ok(())
}

/// A prepared transaction message is parked in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with its real topic and
/// queue in properties, as RocketMQ does, so consumers don't see it before the commit (issue 7).
fn into_half_message<'a>(record: &mut MessageRecord, props: &mut EditedProperties<'a>) {
    // The real topic moves into the property (no copy); the record takes the half topic.
    let real_topic = std::mem::replace(&mut record.topic, topics::TRANS_HALF_TOPIC.to_owned());
    props.set(properties::REAL_TOPIC, real_topic);
    props.set_number(properties::REAL_QUEUE_ID, i64::from(record.queue_id));
    record.sys_flag =
        sys_flag::with_transaction_type(record.sys_flag, sys_flag::TRANSACTION_NOT_TYPE);
    record.queue_id = 0;
}

/// A random write queue, preferring one this shard owns (saves a cross-core hop).
fn pick_queue(shard: &Shard, topic: &str, write_queues: i32) -> i32 {
    let n = write_queues.max(1) as u64;
    let start = shard.random() % n;
    (0..n)
        .map(|i| ((start + i) % n) as i32)
        .find(|q| shard.owner_of(topic, *q) == shard.id)
        .unwrap_or(start as i32)
}

/// Stores the records in the owner's store and builds the response; `sent_topic` is the topic the
/// producer named (the records' own unless they were parked or diverted).
async fn store(
    shard: &Rc<Shard>,
    records: OneOrMany<MessageRecord>,
    is_batch: bool,
    sent_topic: &str,
) -> RemotingCommand {
    let Some(first) = records.first() else {
        return error(rc::MESSAGE_ILLEGAL, "no message to store");
    };
    let queue_id = crate::feature::schedule::reply_queue_id(first);
    let owner = shard.owner(&first.topic, first.queue_id);
    // The stored topic, for the stats: borrowed from the request, or the system topic the record
    // was moved to (half, delayed, timer), copied only for another (a DLQ).
    let topic: std::borrow::Cow<'_, str> = if first.topic == sent_topic {
        std::borrow::Cow::Borrowed(sent_topic)
    } else if let Some(system) = [
        topics::SCHEDULE_TOPIC,
        topics::TIMER_TOPIC,
        topics::TRANS_HALF_TOPIC,
    ]
    .into_iter()
    .find(|t| *t == first.topic)
    {
        std::borrow::Cow::Borrowed(system)
    } else {
        std::borrow::Cow::Owned(first.topic.clone())
    };
    let bytes: usize = records.iter().map(|r| r.body.len()).sum();
    // Apache's metrics name the topic the producer sent to (a half or delayed message's real one).
    let apache = apache_metrics::enabled().then(|| apache_metrics::type_and_real_topic(first));
    // Only a timer message has a recall handle; the broker name is built for it alone.
    let recall_handle = if is_batch || first.topic != crate::feature::timer::TIMER_TOPIC {
        None
    } else {
        crate::feature::timer::recall::handle_of(first, &shard.broker_name_of(shard.id))
    };
    match owner.put(records).await {
        Ok(outcome) => {
            let stored = outcome.stored.len() as u64;
            crate::feature::broker_stats::record_send(&topic, stored, bytes as u64);
            if let Some((message_type, real_topic)) = &apache {
                let wrote: u64 = outcome.stored.iter().map(|p| p.size.max(0) as u64).sum();
                let apache_topic = real_topic.as_deref().unwrap_or(&topic);
                apache_metrics::record_in(apache_topic, *message_type, stored, wrote);
            }
            let mut response = success(shard, &outcome.stored, queue_id, is_batch);
            if let Some(handle) = &recall_handle {
                response.set_ext("recallHandle", handle);
            }
            // Stored without a slave's ack: the send result goes with the code, as RocketMQ's does.
            if outcome.status != SendStatus::SendOk {
                response.code = outcome.status.response_code();
                response.remark = Some(outcome.status.describe().to_owned());
            }
            response
        }
        Err(e) => owner_put_error(&e),
    }
}

fn success(shard: &Shard, oks: &[PutOk], queue_id: i32, is_batch: bool) -> RemotingCommand {
    let Some(first) = oks.first() else {
        return error(rc::SYSTEM_ERROR, "the store returned no result");
    };
    let store_host = shard.store_host;
    let fields = SendMessageResponseHeader::ext_fields_with(
        |text| {
            if is_batch {
                text.reserve(oks.len() * 33);
                for (i, ok) in oks.iter().enumerate() {
                    if i > 0 {
                        text.push(',');
                    }
                    msgid::push_offset_msg_id(text, store_host, ok.physical_offset);
                }
            } else {
                msgid::push_offset_msg_id(text, store_host, first.physical_offset);
            }
        },
        queue_id,
        first.queue_offset,
    );
    let mut response = RemotingCommand::response(rc::SUCCESS, None).with_ext_fields(fields);
    response.set_ext(properties::MSG_REGION, "DefaultRegion");
    response.set_ext(
        properties::TRACE_SWITCH,
        if crate::config::live::trace_on(&shard.cfg) {
            "true"
        } else {
            "false"
        },
    );
    response
}

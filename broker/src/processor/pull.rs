//! PULL_MESSAGE and LITE_PULL_MESSAGE on the queue's owner: the group's settings
//! (`group_settings`), tag or SQL92 filtering, commit of the consumer's offset, long polling (park until the
//! store's arrival hook fires for the queue or `suspendTimeoutMillis` passes), and RocketMQ's mapping
//! of store statuses to FOUND / PULL_NOT_FOUND / PULL_RETRY_IMMEDIATELY / PULL_OFFSET_MOVED. The body
//! of a FOUND answer is the stored records back to back (sent from the store's buffers, not joined,
//! when they lie in a few MiB of memory). A lite pull is served like a pull, as
//! RocketMQ 5 does (`litePullMessageEnable` may refuse it): it parks only when its sysFlag asks to.
//! A slave without `slaveReadEnable` refuses both, as RocketMQ 5 does.

use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use protocol::body::perm;
use protocol::header::{
    forbidden_type, pull_sys_flag, CommandHeader, PullMessageRequestHeader,
    PullMessageResponseHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;
use storage::{GetMessageStatus, GetResult, ReadFilter};

use crate::common::group_settings::{self, PullGroup};
use crate::common::reply::{error, header_error};
use crate::config::live;
use crate::feature::pull_filter::{is_tag_type, PullFilter, Registered, SQL92};
use crate::feature::tag_filter::TagFilter;
use crate::shard::Shard;

/// Longest a pull is held, whatever the client asks (clients ask 15 to 30 s).
const MAX_SUSPEND: Duration = Duration::from_secs(300);

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match PullMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let cfg = &shard.cfg;
    // RocketMQ 5 (`PullMessageProcessor.rejectRequest`): a slave serves pulls only with
    // `slaveReadEnable`; the client retries later, and goes back to the master once it is routed.
    if !live::slave_read_enable(cfg) && shard.role() == crate::config::BrokerRole::Slave {
        return error(
            rc::SYSTEM_BUSY,
            "[REJECTREQUEST]system busy, start flow control for a while",
        );
    }
    if !perm::is_readable(live::broker_permission(cfg) as i32) {
        return error(
            rc::NO_PERMISSION,
            format!(
                "the broker[{}] pulling message is forbidden",
                cfg.broker_ip1
            ),
        );
    }
    let group = match group_settings::admit_pull(shard, req.code, &header).await {
        Ok(g) => g,
        Err(response) => return response,
    };
    let read_queues = {
        let topics = shard.topics.borrow();
        let Some(tc) = topics.get(&header.topic) else {
            return error(
                rc::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!", header.topic),
            );
        };
        if !perm::is_readable(tc.perm) {
            return error(
                rc::NO_PERMISSION,
                format!("the topic[{}] pulling message is forbidden", header.topic),
            );
        }
        tc.read_queue_nums
    };
    if header.queue_id < 0 || header.queue_id >= read_queues {
        return error(
            rc::SYSTEM_ERROR,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{read_queues}]",
                header.queue_id, header.topic
            ),
        );
    }
    if let Err(response) = admit_broadcast(shard, &header, &group) {
        return response;
    }
    let filter = match filter_of(shard, &header) {
        Ok(f) => f,
        Err(response) => return response,
    };
    if header.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 && header.commit_offset >= 0 {
        shard.offsets.borrow_mut().commit(
            &header.consumer_group,
            &header.topic,
            header.queue_id,
            header.commit_offset,
        );
    }
    let suspend = if header.sys_flag & pull_sys_flag::SUSPEND == 0 {
        Duration::ZERO
    } else if live::long_polling_enable(cfg) {
        Duration::from_millis(header.suspend_timeout_millis.max(0) as u64)
    } else {
        Duration::from_millis(live::short_polling_time_mills(cfg))
    };
    let now = Instant::now();
    let deadline = now.checked_add(suspend.min(MAX_SUSPEND)).unwrap_or(now);
    let max_count = header
        .max_msg_nums
        .clamp(1, live::max_transfer_count_on_message_in_memory(cfg).max(1));
    let transfer_bytes = live::max_transfer_bytes_on_message_in_memory(cfg);
    let max_bytes = header
        .max_msg_bytes
        .filter(|b| *b > 0)
        .map_or(transfer_bytes, |b| (b as usize).min(transfer_bytes));
    // Cleared when the queue grew while this pull read it: answer after one more read, never spin.
    let mut may_park = true;
    let by_tags_code = |code: i64| filter.accepts_tags_code(code);
    let by_record = |record: &[u8]| filter.accepts_record(record);
    let read_filter = ReadFilter {
        tags_code: filter
            .checks_tags()
            .then_some(&by_tags_code as &dyn Fn(i64) -> bool),
        record: filter
            .checks_records()
            .then_some(&by_record as &dyn Fn(&[u8]) -> bool),
    };
    loop {
        let result = match shard
            .store
            .get_messages_matching(
                &header.topic,
                header.queue_id,
                header.queue_offset,
                max_count,
                max_bytes,
                read_filter,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => return error(rc::SYSTEM_ERROR, format!("reading the queue failed: {e}")),
        };
        let mut code = response_code(&result, header.queue_offset);
        let mut result = result;
        if code == rc::PULL_OFFSET_MOVED
            && header.queue_offset > result.max_offset
            && header.queue_offset <= shard.store.max_offset(&header.topic, header.queue_id)
        {
            // The offset is stored here but past the confirm offset (a restarted replica before its
            // role is known, a deposed master): not there yet, rather than moved back to the end
            // readers see, which would make the consumer read again what it had.
            code = rc::PULL_NOT_FOUND;
            result.next_begin_offset = header.queue_offset;
        }
        let park = code == rc::PULL_NOT_FOUND
            && may_park
            && !shard.shutting_down.get()
            && Instant::now() < deadline;
        if !park {
            let (msgs, bytes) = (result.records.len(), result.total_bytes());
            crate::feature::broker_stats::record_pull(
                &header.topic,
                &header.consumer_group,
                msgs as u64,
                bytes as u64,
            );
            return respond(shard, code, result, &group);
        }
        // Register, then look again without an await in between, so no arrival is missed.
        let arrival =
            crate::feature::long_poll::waiters(shard).register(&header.topic, header.queue_id);
        if shard
            .store
            .visible_max_offset(&header.topic, header.queue_id)
            > header.queue_offset
        {
            may_park = false;
            continue;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let _parked = crate::feature::metrics::Parked::new();
        arrival
            .or(async {
                glommio::timer::sleep(remaining).await;
            })
            .or(shard.stop_accepting.wait())
            .await;
    }
}

/// The filter of this pull: the expression it carries, else the one its group registered, else all.
/// Refusals follow Apache's `PullMessageProcessor`, in its order.
fn filter_of(
    shard: &Shard,
    header: &PullMessageRequestHeader,
) -> Result<PullFilter, RemotingCommand> {
    let kind = header.expression_type.as_deref().unwrap_or("TAG");
    let not_supported = || {
        error(
            rc::SYSTEM_ERROR,
            format!("The broker does not support consumer to filter message by {kind}"),
        )
    };
    let parse_failed = |reason: &dyn std::fmt::Display| {
        error(
            rc::SUBSCRIPTION_PARSE_FAILED,
            format!("parse the consumer's subscription failed: {reason}"),
        )
    };
    if header.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 {
        if let Some(expression) = &header.subscription {
            if is_tag_type(kind) {
                return Ok(PullFilter::Tags(TagFilter::parse(expression)));
            }
            if expression.is_empty() {
                return Err(parse_failed(&format_args!("empty {kind} expression")));
            }
            if !shard.cfg.enable_property_filter {
                return Err(not_supported());
            }
            // Apache would match everything here (its filter data is null); refusing says why.
            if kind != SQL92 {
                return Err(parse_failed(&format_args!("no filter of type {kind}")));
            }
            let compiled = crate::feature::pull_filter::subscriptions(shard)
                .sql_filters
                .borrow_mut()
                .compile(&header.consumer_group, &header.topic, expression);
            return compiled.map(PullFilter::Sql).map_err(|e| parse_failed(&e));
        }
    }
    match crate::feature::pull_filter::subscriptions(shard)
        .registered_filter(&header.consumer_group, &header.topic)
    {
        Some(Registered::Filter(filter)) => {
            if filter.checks_records() && !shard.cfg.enable_property_filter {
                return Err(not_supported());
            }
            Ok(filter)
        }
        Some(Registered::Unusable) => Err(error(
            rc::FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
        )),
        // Without a registration tag consumers get everything (clients filter by tag again);
        // a property filter cannot be left to the client, so its pull waits for the heartbeat.
        None if is_tag_type(kind) => Ok(PullFilter::ALL),
        None => Err(error(
            rc::SUBSCRIPTION_NOT_EXIST,
            "the consumer's subscription not exist",
        )),
    }
}

/// RocketMQ's mapping from GetMessageStatus to the pull response code.
fn response_code(result: &GetResult, requested: i64) -> i32 {
    match result.status {
        GetMessageStatus::Found => rc::SUCCESS,
        GetMessageStatus::MessageWasRemoving | GetMessageStatus::NoMatchedMessage => {
            rc::PULL_RETRY_IMMEDIATELY
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if requested != 0 {
                rc::PULL_OFFSET_MOVED
            } else {
                rc::PULL_NOT_FOUND
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            rc::PULL_NOT_FOUND
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            rc::PULL_OFFSET_MOVED
        }
    }
}

fn respond(shard: &Shard, code: i32, result: GetResult, group: &PullGroup) -> RemotingCommand {
    let lagging = crate::replication::ha::consumes_slowly(shard, &result);
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: group_settings::suggested_broker(lagging, group),
        next_begin_offset: result.next_begin_offset,
        min_offset: result.min_offset,
        max_offset: result.max_offset,
        offset_delta: None,
        topic_sys_flag: None,
        group_sys_flag: None,
        forbidden_type: None,
    };
    let mut response =
        RemotingCommand::response(code, None).with_ext_fields(header.to_ext_fields());
    if code == rc::SUCCESS {
        let total = result.total_bytes();
        shard
            .counters
            .got(result.records.len() as u64, total as u64);
        if within_window(&result.records) {
            // The records go out as they are (shared with the store's buffers), not joined first.
            response.body_tail = result.records;
        } else {
            // Scattered records would keep many of the store's buffers alive while the answer waits
            // for the socket: joined, as before (the frame writer still sends the join uncopied).
            let mut body = bytes::BytesMut::with_capacity(total);
            for record in &result.records {
                body.extend_from_slice(record);
            }
            response.set_body(body.freeze());
        }
    } else if code == rc::PULL_OFFSET_MOVED {
        response.remark = Some(format!("{:?}", result.status));
    }
    response
}

/// Most 1 MiB windows of memory a pull's records may touch to be sent as they are: they then keep
/// only a few of the store's buffers (1 MiB read blocks, write chunks) alive until the answer is
/// written, not one per record.
const SHARE_WINDOWS: usize = 4;

/// Whether `records` touch at most `SHARE_WINDOWS` 1 MiB windows of memory.
fn within_window(records: &[bytes::Bytes]) -> bool {
    let mut windows = [0usize; SHARE_WINDOWS];
    let mut seen = 0;
    for record in records {
        let start = record.as_ptr() as usize;
        let end = start.saturating_add(record.len().saturating_sub(1));
        for window in [start >> 20, end >> 20] {
            if windows.get(..seen).is_some_and(|w| w.contains(&window)) {
                continue;
            }
            match windows.get_mut(seen) {
                Some(slot) => *slot = window,
                None => return false,
            }
            seen += 1;
        }
    }
    true
}

/// The check of a pull without a subscription of its own (push consumers), after its queue's: a
/// group consumed by broadcast needs `consumeBroadcastEnable`. Pulls carrying their subscription
/// (lite pull) are not checked, as in RocketMQ.
fn admit_broadcast(
    shard: &Rc<Shard>,
    header: &PullMessageRequestHeader,
    group: &PullGroup,
) -> Result<(), RemotingCommand> {
    if header.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 || group.consume_broadcast_enable() {
        return Ok(());
    }
    if crate::feature::pull_filter::subscriptions(shard).is_broadcasting(&header.consumer_group) {
        return Err(group_settings::forbidden(
            forbidden_type::BROADCASTING_DISABLE_FORBIDDEN,
            format!(
                "the consumer group[{}] can not consume by broadcast way",
                header.consumer_group
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: GetMessageStatus) -> GetResult {
        GetResult {
            status,
            records: Vec::new(),
            next_begin_offset: 0,
            min_offset: 0,
            max_offset: 0,
        }
    }

    #[test]
    fn records_are_shared_only_when_close_together() {
        let block = bytes::Bytes::from(vec![0u8; 8 << 20]);
        let near: Vec<_> = (0..32)
            .map(|i| block.slice(i * 1000..i * 1000 + 1000))
            .collect();
        assert!(within_window(&near));
        let far: Vec<_> = (0..8)
            .map(|i| block.slice(i << 20..(i << 20) + 100))
            .collect();
        assert!(!within_window(&far));
        assert!(within_window(&[]));
    }

    #[test]
    fn store_statuses_map_to_rocketmq_pull_codes() {
        use GetMessageStatus as S;
        let code = |s, offset| response_code(&result(s), offset);
        assert_eq!(code(S::Found, 0), rc::SUCCESS);
        assert_eq!(code(S::NoMatchedMessage, 3), rc::PULL_RETRY_IMMEDIATELY);
        assert_eq!(code(S::MessageWasRemoving, 3), rc::PULL_RETRY_IMMEDIATELY);
        assert_eq!(code(S::NoMessageInQueue, 0), rc::PULL_NOT_FOUND);
        assert_eq!(code(S::NoMessageInQueue, 5), rc::PULL_OFFSET_MOVED);
        assert_eq!(code(S::NoMatchedLogicQueue, 0), rc::PULL_NOT_FOUND);
        assert_eq!(code(S::NoMatchedLogicQueue, 1), rc::PULL_OFFSET_MOVED);
        assert_eq!(code(S::OffsetOverflowOne, 9), rc::PULL_NOT_FOUND);
        assert_eq!(code(S::OffsetFoundNull, 9), rc::PULL_NOT_FOUND);
        assert_eq!(code(S::OffsetOverflowBadly, 9), rc::PULL_OFFSET_MOVED);
        assert_eq!(code(S::OffsetTooSmall, 0), rc::PULL_OFFSET_MOVED);
    }
}

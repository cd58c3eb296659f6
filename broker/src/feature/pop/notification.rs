//! NOTIFICATION (200054) and POLLING_INFO (200055): a consumer asks whether a pop would find something
//! (waiting up to `pollTime` for an arrival), and how many pops of its group are parked on a queue.

use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use protocol::header::extra_info::pop_retry_topic;
use protocol::header::{
    CommandHeader, NotificationRequestHeader, NotificationResponseHeader, PollingInfoRequestHeader,
    PollingInfoResponseHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error};
use crate::feature::pop::queue_pop::position;
use crate::feature::pop::{now_ms, QueueKey};
use crate::shard::Shard;

const MAX_POLL: Duration = Duration::from_secs(300);
const RECHECK: Duration = Duration::from_millis(200);

fn read_queues(shard: &Shard, topic: &str) -> Result<i32, RemotingCommand> {
    shard
        .topics
        .borrow()
        .get(topic)
        .map(|tc| tc.read_queue_nums)
        .ok_or_else(|| {
            error(
                rc::TOPIC_NOT_EXIST,
                format!("topic[{topic}] not exist, apply first please!"),
            )
        })
}

pub async fn notification(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match NotificationRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let n = match read_queues(shard, &h.topic) {
        Ok(n) => n,
        Err(response) => return response,
    };
    if h.queue_id >= n {
        return error(
            rc::INVALID_PARAMETER,
            format!("queueId[{}] is illegal", h.queue_id),
        );
    }
    let order = h.order.unwrap_or(false);
    let deadline = Instant::now() + Duration::from_millis(h.poll_time.max(0) as u64).min(MAX_POLL);
    let queues: Vec<i32> = if h.queue_id >= 0 {
        vec![h.queue_id]
    } else {
        (0..n).collect()
    };
    let retry = pop_retry_topic(&h.topic, &h.consumer_group);
    let pop_state = crate::feature::pop::state(shard);
    let _polling = pop_state.polling(QueueKey::new(
        &h.consumer_group,
        &h.topic,
        h.queue_id.max(-1),
    ));
    loop {
        let mut arrivals: Vec<_> = queues
            .iter()
            .map(|q| crate::feature::long_poll::waiters(shard).register(&h.topic, *q))
            .collect();
        arrivals.push(crate::feature::long_poll::waiters(shard).register(&retry, 0));
        let mut has_msg = false;
        for q in queues.iter().copied() {
            if has_message(
                shard,
                &h.consumer_group,
                &h.topic,
                q,
                order,
                h.attempt_id.clone(),
            )
            .await
            {
                has_msg = true;
                break;
            }
        }
        if !has_msg && !order {
            has_msg = has_message(shard, &h.consumer_group, &retry, 0, false, None).await;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if has_msg || remaining.is_zero() || shard.shutting_down.get() {
            let header = NotificationResponseHeader {
                has_msg,
                polling_full: Some(false),
            };
            return RemotingCommand::response(rc::SUCCESS, None)
                .with_ext_fields(header.to_ext_fields());
        }
        crate::feature::long_poll::any(arrivals)
            .or(async {
                glommio::timer::sleep(remaining.min(RECHECK)).await;
            })
            .or(shard.stop_accepting.wait())
            .await;
    }
}

/// Whether a pop of the group would find a message on the queue now (asked of its owner).
async fn has_message(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
    order: bool,
    attempt_id: Option<String>,
) -> bool {
    let key = QueueKey::new(group, topic, queue_id);
    shard
        .owner(topic, queue_id)
        .pop_has_message(key, order, attempt_id)
        .await
        .unwrap_or(false)
}

/// On the queue's owner: whether a pop of the group would find a message on the queue now.
pub(crate) async fn has_message_here(
    shard: &Shard,
    key: QueueKey,
    order: bool,
    attempt_id: Option<String>,
) -> bool {
    if order
        && crate::feature::pop::state(shard).orders.borrow().blocked(
            &key,
            attempt_id.as_deref(),
            now_ms(),
        )
    {
        return false;
    }
    let at = position(shard, &key, protocol::header::consume_init_mode::MAX, false).await;
    shard.store.visible_max_offset(&key.topic, key.queue_id) > at
}

pub async fn polling_info(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match PollingInfoRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Err(response) = read_queues(shard, &h.topic) {
        return response;
    }
    let key = QueueKey::new(&h.consumer_group, &h.topic, h.queue_id.max(-1));
    let header = PollingInfoResponseHeader {
        polling_num: crate::feature::pop::state(shard).polling_num(&key),
    };
    RemotingCommand::response(rc::SUCCESS, None).with_ext_fields(header.to_ext_fields())
}

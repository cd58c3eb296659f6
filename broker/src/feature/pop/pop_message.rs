//! POP_MESSAGE (200050) and PEEK_MESSAGE (200052): RocketMQ 5's pop. A pop visits the asked queue (or
//! every queue from a random one, `queueId` -1) and the group's pop retry topic (first, one time in
//! five, else when the topic gave too little), each on its owner (`feature::pop::queue_pop`); when
//! nothing is there it parks on those queues' arrivals (the pull long-polling registry) for up to
//! `pollTime`. The answer is the stored records back to back, with the offset infos the client builds
//! receipt handles from; empty, it is POLLING_TIMEOUT.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures_lite::FutureExt;
use protocol::body::perm;
use protocol::header::extra_info::{
    pop_retry_topic, push_msg_offset_info, push_offset_order_count, push_queue_order_count,
    push_start_offset_info,
};
use protocol::header::{
    CommandHeader, PeekMessageRequestHeader, PopMessageRequestHeader, PopMessageResponseHeader,
    POP_ORDER_REVIVE_QUEUE,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::group_settings;
use crate::common::reply::{error, header_error};
use crate::feature::pop::queue_pop::{self, PopRequest, QueuePop};
use crate::feature::pop::{now_ms, QueueKey};
use crate::shard::Shard;

/// Most messages one pop returns (RocketMQ refuses more).
const MAX_POP_NUMS: i32 = 32;
/// Longest a pop is held, whatever the client asks.
const MAX_POLL: Duration = Duration::from_secs(300);
/// A parked pop looks again this often when an arrival may not wake it (an ordered batch's invisible
/// time ends without one; a queue owned by another shard).
const RECHECK: Duration = Duration::from_millis(200);
/// Most bytes of messages one pop answers (one message always fits; frames stop at 16 MiB).
const MAX_POP_BYTES: usize = 4 << 20;
/// Percent of pops that look at the retry topic first (RocketMQ's popFromRetryProbability).
const POP_FROM_RETRY_PROBABILITY: u64 = 20;

/// POP writes check points and acks: a slave, whose store is the master's copy, refuses it.
pub fn refuse_on_slave(shard: &Shard) -> Option<RemotingCommand> {
    (shard.role() == crate::config::BrokerRole::Slave).then(|| {
        error(
            rc::NO_PERMISSION,
            format!(
                "the broker[{}] is a slave, and does not serve POP",
                shard.cfg.broker_ip1
            ),
        )
    })
}

/// What a pop answers about its topic, checked before reading.
struct Admitted {
    read_queues: i32,
}

/// RocketMQ's checks of a pop or peek, in its order.
async fn admit(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
) -> Result<Admitted, RemotingCommand> {
    let cfg = &shard.cfg;
    if !perm::is_readable(crate::config::live::broker_permission(cfg) as i32) {
        return Err(error(
            rc::NO_PERMISSION,
            format!("the broker[{}] pop message is forbidden", cfg.broker_ip1),
        ));
    }
    let read_queues = {
        let topics = shard.topics.borrow();
        let Some(tc) = topics.get(topic) else {
            return Err(error(
                rc::TOPIC_NOT_EXIST,
                format!("topic[{topic}] not exist, apply first please!"),
            ));
        };
        if !perm::is_readable(tc.perm) {
            return Err(error(
                rc::NO_PERMISSION,
                format!("the topic[{topic}] peeking message is forbidden"),
            ));
        }
        tc.read_queue_nums
    };
    if queue_id >= read_queues {
        return Err(error(
            rc::INVALID_PARAMETER,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}]"
            ),
        ));
    }
    let Some(settings) = group_settings::find(shard, group).await else {
        return Err(group_settings::not_exist(group));
    };
    if !settings.consume_enable {
        return Err(error(
            rc::NO_PERMISSION,
            format!("subscription group no permission, {group}"),
        ));
    }
    Ok(Admitted { read_queues })
}

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match PopMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if let Some(refused) = refuse_on_slave(shard) {
        return refused;
    }
    let now = now_ms();
    if h.born_time > 0 && now.saturating_sub(h.born_time).saturating_sub(h.poll_time) > 500 {
        // Clients read the header of every POLLING_TIMEOUT; Apache's has zeros here.
        return error(
            rc::POLLING_TIMEOUT,
            format!(
                "the broker[{}] pop message is timeout too much",
                shard.cfg.broker_ip1
            ),
        )
        .with_ext_fields(PopMessageResponseHeader::default().to_ext_fields());
    }
    if h.max_msg_nums > MAX_POP_NUMS {
        return error(
            rc::INVALID_PARAMETER,
            format!(
                "the broker[{}] pop message's num is greater than 32",
                shard.cfg.broker_ip1
            ),
        );
    }
    if h.invisible_time <= 0 {
        return error(rc::INVALID_PARAMETER, "invisibleTime must be positive");
    }
    let queue_id = h.queue_id.max(-1);
    let admitted = match admit(shard, &h.consumer_group, &h.topic, queue_id).await {
        Ok(a) => a,
        Err(response) => return response,
    };
    let order = h.order.unwrap_or(false);
    let deadline = Instant::now() + Duration::from_millis(h.poll_time.max(0) as u64).min(MAX_POLL);
    let pop_state = crate::feature::pop::state(shard);
    let _polling = pop_state.polling(QueueKey::new(&h.consumer_group, &h.topic, queue_id));
    loop {
        let pop_time = now_ms();
        let request = PopRequest {
            group: h.consumer_group.clone(),
            topic: h.topic.clone(),
            invisible_time: h.invisible_time,
            init_mode: h.init_mode,
            order,
            attempt_id: h.attempt_id.clone(),
            exp_type: h.exp_type.clone(),
            exp: h.exp.clone(),
            pop_time,
        };
        // Registered before reading, so an arrival during the read is not missed.
        let arrivals = register(shard, &request, queue_id, admitted.read_queues);
        let (pops, rest) = match pop_once(
            shard,
            &request,
            queue_id,
            admitted.read_queues,
            h.max_msg_nums.max(1),
        )
        .await
        {
            Ok(found) => found,
            Err(why) => return error(rc::SYSTEM_ERROR, why),
        };
        let found = pops.iter().any(|p| !p.records.is_empty());
        let remaining = deadline.saturating_duration_since(Instant::now());
        if found || remaining.is_zero() || shard.shutting_down.get() {
            return respond(&request, pops, rest);
        }
        // Arrivals wake only pops parked on the queue's owner: with one broker over several shards
        // (`forward`), queues of other shards are looked at again on a timer.
        let recheck = order || (shard.shards > 1 && !shard.is_broker);
        let slice = if recheck {
            remaining.min(RECHECK)
        } else {
            remaining
        };
        let _parked = crate::feature::metrics::Parked::new();
        crate::feature::long_poll::any(arrivals)
            .or(async {
                glommio::timer::sleep(slice).await;
            })
            .or(shard.stop_accepting.wait())
            .await;
    }
}

/// Interest in the next arrival on every queue this pop reads that this shard owns.
fn register(
    shard: &Shard,
    req: &PopRequest,
    queue_id: i32,
    read_queues: i32,
) -> Vec<crate::feature::long_poll::Arrival> {
    let mut out = Vec::new();
    let queues: Vec<i32> = if queue_id >= 0 {
        vec![queue_id]
    } else {
        (0..read_queues).collect()
    };
    for q in queues {
        out.push(crate::feature::long_poll::waiters(shard).register(&req.topic, q));
    }
    if !req.order {
        out.push(
            crate::feature::long_poll::waiters(shard)
                .register(&pop_retry_topic(&req.topic, &req.group), 0),
        );
    }
    out
}

/// One pass over the queues; answers what they gave and the messages left behind.
async fn pop_once(
    shard: &Rc<Shard>,
    req: &PopRequest,
    queue_id: i32,
    read_queues: i32,
    max: i32,
) -> Result<(Vec<QueuePop>, i64), String> {
    let random = shard.random() % 100;
    let retry_first = !req.order && random < POP_FROM_RETRY_PROBABILITY;
    let retry_topic = pop_retry_topic(&req.topic, &req.group);
    let mut pops = Vec::new();
    let mut got = 0;
    let mut rest = 0;
    let mut bytes = 0;
    let visit = |pops: &mut Vec<QueuePop>,
                 pop: QueuePop,
                 got: &mut i32,
                 rest: &mut i64,
                 bytes: &mut usize| {
        *got += pop.offsets.len() as i32;
        *rest += pop.rest;
        *bytes += pop.records.iter().map(|r| r.len()).sum::<usize>();
        if !pop.records.is_empty() {
            pops.push(pop);
        }
    };
    let full = |got: i32, bytes: usize| got >= max || bytes >= MAX_POP_BYTES;
    if retry_first {
        let pop = pop_on_owner(
            shard,
            req,
            &retry_topic,
            0,
            max - got,
            MAX_POP_BYTES - bytes,
        )
        .await?;
        visit(&mut pops, pop, &mut got, &mut rest, &mut bytes);
    }
    let queues: Vec<i32> = if queue_id >= 0 {
        vec![queue_id]
    } else {
        let n = read_queues.max(1) as u64;
        (0..n).map(|i| ((random + i) % n) as i32).collect()
    };
    for q in queues {
        if full(got, bytes) {
            break;
        }
        let pop = pop_on_owner(shard, req, &req.topic, q, max - got, MAX_POP_BYTES - bytes).await?;
        visit(&mut pops, pop, &mut got, &mut rest, &mut bytes);
    }
    if !retry_first && !req.order && !full(got, bytes) {
        let pop = pop_on_owner(
            shard,
            req,
            &retry_topic,
            0,
            max - got,
            MAX_POP_BYTES - bytes,
        )
        .await?;
        visit(&mut pops, pop, &mut got, &mut rest, &mut bytes);
    }
    Ok((pops, rest))
}

/// Pops one queue on the shard that owns it.
async fn pop_on_owner(
    shard: &Rc<Shard>,
    req: &PopRequest,
    topic: &str,
    queue_id: i32,
    want: i32,
    max_bytes: usize,
) -> Result<QueuePop, String> {
    let owner = shard.owner_of(topic, queue_id);
    if owner == shard.id {
        return queue_pop::pop_queue(shard, req, topic, queue_id, want, max_bytes).await;
    }
    let (req, topic) = (req.clone(), topic.to_owned());
    shard
        .on(owner)
        .pop_queue(req, topic, queue_id, want, max_bytes)
        .await
}

fn respond(req: &PopRequest, pops: Vec<QueuePop>, rest: i64) -> RemotingCommand {
    let mut start_info = String::new();
    let mut msg_info = String::new();
    let mut order_info = String::new();
    let mut body = BytesMut::new();
    for pop in &pops {
        push_start_offset_info(&mut start_info, &pop.topic, pop.queue_id, pop.start_offset);
        push_msg_offset_info(&mut msg_info, &pop.topic, pop.queue_id, &pop.offsets);
        if req.order {
            for (offset, count) in pop.order_counts.iter().filter(|(_, c)| *c > 0) {
                push_offset_order_count(&mut order_info, &pop.topic, pop.queue_id, *offset, *count);
            }
            let min = pop.order_counts.iter().map(|(_, c)| *c).min().unwrap_or(0);
            push_queue_order_count(&mut order_info, &pop.topic, pop.queue_id, min);
        }
        for record in &pop.records {
            body.extend_from_slice(record);
        }
    }
    let header = PopMessageResponseHeader {
        pop_time: req.pop_time,
        invisible_time: req.invisible_time,
        revive_qid: if req.order { POP_ORDER_REVIVE_QUEUE } else { 0 },
        rest_num: rest,
        start_offset_info: Some(start_info),
        msg_offset_info: Some(msg_info),
        order_count_info: req.order.then_some(order_info),
    };
    let found = !body.is_empty();
    let (code, remark) = if found {
        (rc::SUCCESS, "FOUND")
    } else {
        (rc::POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    };
    let mut response = RemotingCommand::response(code, Some(remark.to_owned()))
        .with_ext_fields(header.to_ext_fields());
    if found {
        response.set_body(body.freeze());
    }
    response
}

/// PEEK_MESSAGE: messages from the group's position, changing nothing.
pub async fn peek(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match PeekMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let admitted = match admit(shard, &h.consumer_group, &h.topic, h.queue_id).await {
        Ok(a) => a,
        Err(response) => return response,
    };
    let max = h.max_msg_nums.clamp(1, MAX_POP_NUMS);
    let n = admitted.read_queues.max(1);
    let queues: Vec<i32> = if h.queue_id >= 0 {
        vec![h.queue_id]
    } else {
        let start = (shard.random() % n as u64) as i32;
        (0..n).map(|i| (start + i) % n).collect()
    };
    let mut body = BytesMut::new();
    let mut got = 0;
    for q in queues {
        if got >= max {
            break;
        }
        let owner = shard.owner_of(&h.topic, q);
        let (group, topic, want) = (h.consumer_group.clone(), h.topic.clone(), max - got);
        let records = shard.on(owner).peek_queue(group, topic, q, want).await;
        match records {
            Ok(Ok(records)) => {
                got += records.len() as i32;
                for r in records {
                    body.extend_from_slice(&r);
                }
            }
            Ok(Err(why)) => return error(rc::SYSTEM_ERROR, why),
            Err(e) => return error(rc::SYSTEM_ERROR, e.to_string()),
        }
    }
    if body.is_empty() {
        return error(rc::PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE");
    }
    let mut response = RemotingCommand::response(rc::SUCCESS, Some("FOUND".to_owned()));
    response.set_body(body.freeze());
    response
}

pub(crate) async fn peek_queue(
    shard: &Shard,
    group: &str,
    topic: &str,
    queue_id: i32,
    want: i32,
) -> Result<Vec<bytes::Bytes>, String> {
    let key = QueueKey::new(group, topic, queue_id);
    let offset =
        queue_pop::position(shard, &key, protocol::header::consume_init_mode::MIN, false).await;
    shard
        .store
        .get_messages(topic, queue_id, offset, want, 4 << 20, None)
        .await
        .map(|r| r.records)
        .map_err(|e| format!("reading the queue failed: {e}"))
}

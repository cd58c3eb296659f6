//! Broker-wide admin queries on shard 0: GET_BROKER_RUNTIME_INFO (a KVTable of figures gathered from
//! the shards of the broker that was asked), GET_ALL_CONSUMER_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_DELAY_OFFSET.
//! GET_TIMER_CHECK_POINT (the timer's own encoding) is answered here too.

use std::collections::BTreeMap;
use std::rc::Rc;

use protocol::body::{ConsumerOffsetSerializeWrapper, KVTable};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::shard::mesh::join_all;
use crate::shard::stats::ShardStats;
use crate::shard::Shard;

/// The version string clients and tools see (RocketMQ's `MQVersion` naming).
const BROKER_VERSION_DESC: &str = "V4_9_4";
const BROKER_VERSION: i32 = 401;

/// The figures of the broker a client reached through shard `receiver` (see `broker_shards`), and
/// per-shard figures (`shard<N>.…`) of every shard of the process.
pub async fn runtime_info(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    let every: Vec<ShardStats> = join_all(shard.every_shard().map(|s| s.stats()))
        .await
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    let mine: Vec<usize> = shard.broker_shards(receiver).map(|s| s.id()).collect();
    let stats: Vec<ShardStats> = every
        .iter()
        .filter(|s| mine.contains(&s.shard))
        .cloned()
        .collect();
    let sum = |f: fn(&ShardStats) -> u64| stats.iter().map(f).fold(0u64, u64::wrapping_add);
    let now = crate::state::topics::now_ms();
    let mut t = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        t.insert(k.to_owned(), v);
    };
    put("brokerVersionDesc", BROKER_VERSION_DESC.to_owned());
    put("brokerVersion", BROKER_VERSION.to_string());
    put("bootTimestamp", shard.boot_ms.to_string());
    put(
        "runtime",
        format!("{} ms", now.saturating_sub(shard.boot_ms)),
    );
    put("shardCount", shard.shards.to_string());
    if shard.is_broker {
        // Which process a shard-broker belongs to, for tools that group them.
        put("shardId", receiver.to_string());
        put("processBrokerName", shard.cfg.broker_name.clone());
    }
    put("msgPutTotalTodayNow", sum(|s| s.msgs_put).to_string());
    put("msgGetTotalTodayNow", sum(|s| s.msgs_got).to_string());
    let daily = crate::feature::broker_stats::sampler::daily_totals(shard, receiver).await;
    put(
        "msgPutTotalTodayMorning",
        daily.put_today_morning.to_string(),
    );
    put(
        "msgGetTotalTodayMorning",
        daily.got_today_morning.to_string(),
    );
    put(
        "msgPutTotalYesterdayMorning",
        daily.put_yesterday_morning.to_string(),
    );
    put(
        "msgGetTotalYesterdayMorning",
        daily.got_yesterday_morning.to_string(),
    );
    put("bytesPutTotal", sum(|s| s.bytes_put).to_string());
    put("bytesGetTotal", sum(|s| s.bytes_got).to_string());
    put("sendErrorTotal", sum(|s| s.send_errors).to_string());
    put(
        "commitLogMinOffset",
        stats
            .iter()
            .map(|s| s.commit_log_min_offset)
            .min()
            .unwrap_or(0)
            .to_string(),
    );
    put(
        "commitLogMaxOffset",
        stats
            .iter()
            .map(|s| s.commit_log_max_offset)
            .max()
            .unwrap_or(0)
            .to_string(),
    );
    put("fsyncCount", sum(|s| s.store.fsyncs).to_string());
    let fsyncs = sum(|s| s.store.fsyncs).max(1);
    put(
        "fsyncAvgMicros",
        (sum(|s| s.store.fsync_nanos_total) / fsyncs / 1000).to_string(),
    );
    put(
        "fsyncMaxMicros",
        (stats
            .iter()
            .map(|s| s.store.fsync_nanos_max)
            .max()
            .unwrap_or(0)
            / 1000)
            .to_string(),
    );
    put(
        "groupCommitAvgRecords",
        (sum(|s| s.store.group_commit_records) / fsyncs).to_string(),
    );
    put(
        "storeBusyRejects",
        sum(|s| s.store.busy_rejects).to_string(),
    );
    put(
        "storeFlushTimeouts",
        sum(|s| s.store.flush_timeouts).to_string(),
    );
    // A store that takes no writes says so, with why (a failed disk write or sync, a full disk).
    let read_only: Vec<String> = stats
        .iter()
        .filter_map(|s| {
            s.read_only
                .as_ref()
                .map(|why| format!("shard {}: {why}", s.shard))
        })
        .collect();
    put("storeReadOnly", (!read_only.is_empty()).to_string());
    if !read_only.is_empty() {
        put("storeReadOnlyReason", read_only.join("; "));
    }
    put(
        "consumeQueueCount",
        stats.iter().map(|s| s.queues).sum::<usize>().to_string(),
    );
    if let Some(ctl) = &shard.control {
        let clients = ctl.clients.borrow();
        put(
            "consumerGroupCount",
            clients.consumer_group_count().to_string(),
        );
        put(
            "producerGroupCount",
            clients.producer_group_count().to_string(),
        );
    }
    crate::replication::ha::runtime_info(shard, &stats, &mut put);
    super::runtime_fields::add(shard, receiver, &stats, &mut put).await;
    for s in &every {
        put(
            &format!("shard{}.msgPutTotal", s.shard),
            s.msgs_put.to_string(),
        );
        put(
            &format!("shard{}.commitLogMaxOffset", s.shard),
            s.commit_log_max_offset.to_string(),
        );
        // What crossed a core from this shard, by request kind (`shard::requests`).
        for (kind, n) in &s.requests_sent {
            put(
                &format!("shard{}.requestsSent.{kind}", s.shard),
                n.to_string(),
            );
        }
    }
    ok().with_body(protocol::body::to_json(&KVTable { table: t }))
}

/// The consumer offsets of the broker a client reached through shard `receiver`.
pub async fn all_consumer_offset(shard: &Rc<Shard>, receiver: usize) -> RemotingCommand {
    let mut table: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
    for answer in join_all(shard.broker_shards(receiver).map(|s| s.consumer_offsets())).await {
        match answer {
            Ok(entries) => {
                for (key, queue, offset) in entries {
                    table.entry(key).or_default().insert(queue, offset);
                }
            }
            Err(e) => {
                return error(
                    rc::SYSTEM_ERROR,
                    format!("a shard did not answer with its offsets: {e}"),
                )
            }
        }
    }
    // Apache 5.x's slave (SlaveSynchronize) adopts the master's dataVersion and fails without one
    // before it persists the copied offsets: a fresh version per answer, as the table has none.
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let body = ConsumerOffsetSerializeWrapper {
        offset_table: table,
        data_version: Some(protocol::body::DataVersion {
            counter: 0,
            state_version: 0,
            timestamp,
        }),
    };
    ok().with_body(protocol::body::to_json(&body))
}

pub fn all_subscription_groups(shard: &Shard) -> RemotingCommand {
    match &shard.control {
        Some(_) => ok().with_body(shard.groups.borrow().to_json()),
        None => error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        ),
    }
}

/// The delivery offset of every delay level (see `schedule`).
/// GET_TIMER_CHECK_POINT: the timer queues' watermarks (`feature::timer::checkpoint`).
pub async fn timer_checkpoint(shard: &Shard) -> RemotingCommand {
    match crate::feature::timer::checkpoint::answer(shard).await {
        Ok(body) => ok().with_body(body),
        Err(e) => error(
            rc::SYSTEM_ERROR,
            format!("cannot gather the timer checkpoint: {e}"),
        ),
    }
}

pub async fn all_delay_offset(shard: &Shard) -> RemotingCommand {
    match crate::feature::schedule::delay_offsets_json(shard).await {
        Ok(body) => ok().with_body(body),
        Err(e) => error(
            rc::SYSTEM_ERROR,
            format!("cannot gather delay offsets: {e}"),
        ),
    }
}

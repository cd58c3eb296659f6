//! Serving calls from other shards (and from this one): store puts, queue-owner requests, control
//! requests on shard 0, broadcasts, lookups and the shutdown phases.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::shard::mesh::{ShardAnswer, ShardCall};
use crate::shard::Shard;

/// Longest the drain phase waits for in-flight requests.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

pub async fn serve(shard: Rc<Shard>, call: ShardCall) -> ShardAnswer {
    match call {
        ShardCall::Put(records) => ShardAnswer::Put(put(&shard, records).await),
        ShardCall::Owned { cmd, conn, local } => {
            ShardAnswer::Command(crate::processor::run_owned(&shard, cmd, conn, local).await)
        }
        ShardCall::Control { cmd, conn, local } => {
            ShardAnswer::Command(crate::processor::run_control(&shard, cmd, conn, local).await)
        }
        ShardCall::CreateTopic(tc) => {
            if shard.control.is_some() {
                ShardAnswer::Topic(Ok(crate::role::control::create_topic(&shard, tc).await))
            } else {
                ShardAnswer::Topic(Err(format!("shard {} is not the control shard", shard.id)))
            }
        }
        ShardCall::TopicChanged {
            upsert,
            remove,
            version,
        } => {
            let mut table = shard.topics.borrow_mut();
            if let Some(tc) = upsert {
                table.topics.insert(tc.topic_name.clone(), tc);
            }
            if let Some(name) = remove {
                table.topics.remove(&name);
            }
            table.data_version = version;
            ShardAnswer::Done
        }
        ShardCall::GroupSubscriptions {
            group,
            subscriptions,
        } => {
            shard.set_group_subscriptions(group, subscriptions);
            ShardAnswer::Done
        }
        ShardCall::Notify { conn_id, cmd } => {
            shard.notify_connection(conn_id, cmd);
            ShardAnswer::Done
        }
        ShardCall::ConnectionClosed {
            shard: from,
            conn_id,
        } => {
            let changed = match &shard.control {
                Some(ctl) => ctl.clients.borrow_mut().connection_closed(from, conn_id),
                None => Vec::new(),
            };
            crate::role::control::groups_changed(&shard, changed).await;
            ShardAnswer::Done
        }
        ShardCall::ReadRecord(phys) => ShardAnswer::Record(
            shard
                .store
                .read_record(phys)
                .await
                .map_err(|e| e.to_string()),
        ),
        ShardCall::QueryByKey {
            topic,
            key,
            max,
            begin_ms,
            end_ms,
        } => ShardAnswer::Records(
            shard
                .store
                .query_by_key(&topic, &key, max, begin_ms, end_ms)
                .await
                .map_err(|e| e.to_string()),
        ),
        ShardCall::Stats => ShardAnswer::Stats(shard.stats()),
        ShardCall::Offsets => ShardAnswer::Offsets(shard.offsets.borrow().entries()),
        ShardCall::DelayOffsets {
            install,
            settle_all,
        } => ShardAnswer::DelayOffsets(
            crate::feature::schedule::serve_call(&shard, install, settle_all).await,
        ),
        ShardCall::DeleteTopic(topic) => {
            shard.store.delete_topic(&topic);
            shard.offsets.borrow_mut().remove_topic(&topic);
            ShardAnswer::Done
        }
        ShardCall::Drain => {
            drain(&shard).await;
            crate::feature::schedule::quiesce(&shard).await;
            ShardAnswer::Done
        }
        ShardCall::Shutdown => {
            shard.persist_offsets().await;
            shard.store.shutdown().await;
            tracing::info!("shard {}: store flushed and checkpointed", shard.id);
            ShardAnswer::Done
        }
        ShardCall::Exit => {
            shard.exit.fire();
            ShardAnswer::Done
        }
        ShardCall::HaSlave { fd, peer } => {
            crate::role::ha::adopt(&shard, fd, peer);
            ShardAnswer::Done
        }
        ShardCall::HaMaster {
            ha_addr,
            master_addr,
        } => {
            crate::role::ha::set_master(&shard, ha_addr, master_addr);
            ShardAnswer::Done
        }
        ShardCall::HaTopicSeen { topic, queues } => {
            crate::role::ha::topic_seen(&shard, topic, queues).await;
            ShardAnswer::Done
        }
        ShardCall::AdminStats(call) => {
            ShardAnswer::AdminStats(crate::processor::admin_stats::serve(&shard, call).await)
        }
        ShardCall::HaOffsets(entries) => {
            crate::role::ha_sync::set_offsets(&shard, entries);
            ShardAnswer::Done
        }
    }
}

async fn put(
    shard: &Shard,
    mut records: Vec<protocol::message::record::MessageRecord>,
) -> Result<Vec<storage::PutOk>, storage::PutError> {
    let count = records.len() as u64;
    let bytes: u64 = records.iter().map(|r| r.body.len() as u64).sum();
    let result = if records.len() == 1 {
        match records.pop() {
            Some(record) => shard.store.put(record).await.map(|ok| vec![ok]),
            None => Ok(Vec::new()),
        }
    } else {
        shard.store.put_batch(records).await
    };
    if result.is_ok() {
        shard.counters.put(count, bytes);
    }
    crate::role::ha::after_put(shard, result).await
}

/// Stops accepting, releases parked pulls, waits (bounded) for this shard's requests to finish.
async fn drain(shard: &Shard) {
    shard.shutting_down.set(true);
    shard.stop_accepting.fire();
    shard.waiters.wake_all();
    let start = Instant::now();
    while shard.in_flight.get() > 0 && start.elapsed() < DRAIN_LIMIT {
        glommio::timer::sleep(Duration::from_millis(5)).await;
        // Pulls parked after the first wake-up must not wait out their suspend time.
        shard.waiters.wake_all();
    }
    if shard.in_flight.get() > 0 {
        tracing::warn!(
            "shard {}: {} requests still running after {DRAIN_LIMIT:?}",
            shard.id,
            shard.in_flight.get()
        );
    }
}

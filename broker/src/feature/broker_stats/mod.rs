//! Admin statistics RocketMQ's tools read: the per-shard counters of `local`, the keyed items of
//! VIEW_BROKER_STATS_DATA (`item`), and the broker-wide rates of GET_BROKER_RUNTIME_INFO (`tps`),
//! which shard 0 samples from every shard once a second (`sampler`).

pub mod daily;
pub mod item;
pub mod local;
pub mod sampler;
pub mod tps;

use std::rc::Rc;

pub use local::{record_pull, record_send, record_send_time};

use crate::shard::mesh::join_all;
use crate::shard::Shard;
use item::ItemWindows;

/// One item's windows summed over the shards of this shard's broker; `None` when none knows the key.
pub async fn item_windows(shard: &Rc<Shard>, name: &str, key: &str) -> Option<ItemWindows> {
    let since = u64::try_from(shard.boot_ms).unwrap_or(0);
    let answers = join_all(
        shard
            .broker_shards(shard.id)
            .map(|s| s.stats_item(name.to_owned(), key.to_owned(), since)),
    )
    .await;
    answers
        .into_iter()
        .filter_map(|a| a.ok().flatten())
        .reduce(ItemWindows::merge)
}

/// Messages per second sent to `topic` over the last minute on this shard's broker
/// (Apache's `tpsTopicPutNums`, GET_TOPIC_STATS_INFO's `topicPutTps`).
pub async fn topic_put_tps(shard: &Rc<Shard>, topic: &str) -> f64 {
    item_windows(shard, local::TOPIC_PUT_NUMS, topic)
        .await
        .map_or(0.0, |w| w.minute.tps())
}

/// Messages per second `group` pulled from `topics` over the last minute on this shard's broker,
/// summed over the topics (Apache's `tpsGroupGetNums`, GET_CONSUME_STATS's `consumeTps`).
pub async fn group_consume_tps<'a>(
    shard: &Rc<Shard>,
    group: &str,
    topics: impl IntoIterator<Item = &'a String>,
) -> f64 {
    let mut tps = 0.0;
    for topic in topics {
        if let Some(w) =
            item_windows(shard, local::GROUP_GET_NUMS, &format!("{topic}@{group}")).await
        {
            tps += w.minute.tps();
        }
    }
    tps
}

/// The slowest send on any shard of the broker a client reached through shard `receiver`, in ms.
pub async fn put_time_max_ms(shard: &Rc<Shard>, receiver: usize) -> u64 {
    join_all(shard.broker_shards(receiver).map(|s| s.put_time_max_ms()))
        .await
        .into_iter()
        .filter_map(Result::ok)
        .max()
        .unwrap_or(0)
}

//! GET_BROKER_CONSUME_STATS (317, on the receiving shard; `mqadmin brokerConsumeStats`): for every subscription
//! group, its progress on every topic it has committed offsets for (what GET_CONSUME_STATS answers
//! for the group), with its consume rate over the last minute, and the broker's total backlog.

use std::collections::BTreeSet;
use std::rc::Rc;

use protocol::body::{ConsumeStats, ConsumeStatsList};
use protocol::header::{
    CommandHeader, GetConsumeStatsInBrokerHeader, GetConsumeStatsRequestHeader,
};
use protocol::response_code as rc;
use protocol::{request_code, RemotingCommand};

use crate::common::reply::{header_error, ok};
use crate::feature::broker_stats;
use crate::shard::Shard;

/// One group's stats over every topic it has offsets for; `None` when it has none.
async fn group_stats(shard: &Rc<Shard>, group: &str, only_order: bool) -> Option<ConsumeStats> {
    let header = GetConsumeStatsRequestHeader {
        consumer_group: group.to_owned(),
        topic: None,
        topic_list: None,
    };
    let req = RemotingCommand::request(request_code::GET_CONSUME_STATS)
        .with_ext_fields(header.to_ext_fields());
    let answer = super::admin_stats::consume_stats(shard, &req).await;
    if answer.code != rc::SUCCESS {
        return None;
    }
    let mut stats = ConsumeStats::from_json(&answer.body).ok()?;
    if only_order {
        let topics = shard.topics.borrow();
        stats
            .offset_table
            .retain(|mq, _| topics.get(&mq.topic).is_some_and(|tc| tc.order));
    }
    let topics: BTreeSet<String> = stats
        .offset_table
        .keys()
        .map(|mq| mq.topic.clone())
        .collect();
    stats.consume_tps = broker_stats::group_consume_tps(shard, group, &topics).await;
    Some(stats)
}

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match GetConsumeStatsInBrokerHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let groups: Vec<String> = shard
        .groups
        .borrow()
        .subscription_group_table
        .keys()
        .cloned()
        .collect();
    let mut list = ConsumeStatsList {
        broker_addr: shard.broker.broker_addr.clone(),
        ..ConsumeStatsList::default()
    };
    for group in groups {
        let stats = group_stats(shard, &group, header.is_order.unwrap_or(false)).await;
        let stats: Vec<ConsumeStats> = stats.into_iter().collect();
        list.total_diff = stats
            .iter()
            .fold(list.total_diff, |acc, s| acc.saturating_add(s.total_diff()));
        list.consume_stats_list.push((group, stats));
    }
    ok().with_body(list.to_json())
}

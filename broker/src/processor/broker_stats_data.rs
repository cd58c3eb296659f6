//! What Apache mqadmin's `statsAll` asks a broker: VIEW_BROKER_STATS_DATA (one statistics item,
//! e.g. `TOPIC_PUT_NUMS` of a topic or `GROUP_GET_NUMS` of `topic@group`, over the last minute,
//! hour and day, summed over every shard) and QUERY_TOPIC_CONSUME_BY_WHO (the groups that consume a
//! topic: online subscribers and groups with committed offsets).

use std::collections::BTreeSet;
use std::rc::Rc;

use protocol::body::{split_offset_table_key, BrokerStatsData, BrokerStatsItem, GroupList};
use protocol::header::{
    CommandHeader, QueryTopicConsumeByWhoRequestHeader, ViewBrokerStatsDataRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::feature::broker_stats::item::{ItemWindows, WindowSum};
use crate::shard::mesh::join_all;
use crate::shard::Shard;

fn item(w: WindowSum) -> BrokerStatsItem {
    BrokerStatsItem {
        sum: w.sum,
        tps: w.tps(),
        avgpt: w.avg(),
    }
}

/// The body of one item's windows.
pub fn stats_data(w: &ItemWindows) -> BrokerStatsData {
    BrokerStatsData {
        stats_minute: item(w.minute),
        stats_hour: item(w.hour),
        stats_day: item(w.day),
    }
}

/// VIEW_BROKER_STATS_DATA (315).
pub async fn view(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match ViewBrokerStatsDataRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    match crate::feature::broker_stats::item_windows(shard, &header.stats_name, &header.stats_key)
        .await
    {
        Some(w) => ok().with_body(protocol::body::to_json(&stats_data(&w))),
        None => error(
            rc::SYSTEM_ERROR,
            format!(
                "The stats <{}> <{}> not exist",
                header.stats_name, header.stats_key
            ),
        ),
    }
}

/// QUERY_TOPIC_CONSUME_BY_WHO (300), on the control shard.
pub async fn consume_by_who(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let header = match QueryTopicConsumeByWhoRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let Some(ctl) = &shard.control else {
        return error(
            rc::SYSTEM_ERROR,
            "request reached a shard without the control role",
        );
    };
    let mut groups: BTreeSet<String> = ctl
        .clients
        .borrow()
        .groups_subscribing(&header.topic)
        .into_iter()
        .collect();
    for answer in join_all(shard.every_shard().map(|s| s.consumer_offsets())).await {
        for (key, _, _) in answer.unwrap_or_default() {
            if let Some((topic, group)) = split_offset_table_key(&key) {
                if topic == header.topic {
                    groups.insert(group.to_owned());
                }
            }
        }
    }
    ok().with_body(protocol::body::to_json(&GroupList { group_list: groups }))
}

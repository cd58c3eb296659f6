//! QUERY_CONSUME_QUEUE (321, on the queue's owner, `mqadmin queryCq`): `count` units of one
//! ConsumeQueue from unit `index` as stored (CommitLog offset, size, tagsCode), with the queue's
//! min and max index; given a `consumerGroup`, its online subscription to the topic, its filter data
//! (`null` for a TAG subscription, as Apache's; the SQL92 expression otherwise) and, for each unit,
//! whether its TAG filter accepts the unit's tagsCode (`eval`; Apache fills it only from its
//! ConsumeQueue extension, which this store does not have, so SQL92 units say `false`).
//! Apache's answers for the edge cases: an unknown queue is SYSTEM_ERROR `"Q@topic is not exist!"`;
//! an index outside the queue is SUCCESS with remark `"Index I of Q@topic is not exist!"` and no units.

use std::rc::Rc;

use protocol::body::{ConsumeQueueData, QueryConsumeQueueResponseBody, SubscriptionData};
use protocol::header::{CommandHeader, QueryConsumeQueueRequestHeader};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::feature::pull_filter::is_tag_type;
use crate::feature::tag_filter::TagFilter;
use crate::shard::target::CONTROL_SHARD;
use crate::shard::Shard;

/// The online subscription of `group` to `topic`, from the control shard's client registry.
async fn subscription(shard: &Shard, group: String, topic: String) -> Option<SubscriptionData> {
    shard
        .mesh
        .call(
            CONTROL_SHARD,
            "query_cq_subscription",
            move |s: Rc<Shard>| async move {
                s.control.as_ref().and_then(|c| {
                    c.clients
                        .borrow()
                        .subscriptions(&group)
                        .into_iter()
                        .find(|sub| sub.topic == topic)
                })
            },
        )
        .await
        .ok()
        .flatten()
}

/// Apache's `ConsumerFilterData` as JSON for an SQL92 subscription; `null` (no filter data) for TAG.
fn filter_data(group: &str, sub: &SubscriptionData) -> String {
    if is_tag_type(&sub.expression_type) {
        return "null".into();
    }
    serde_json::json!({
        "consumerGroup": group,
        "topic": sub.topic,
        "expression": sub.sub_string,
        "expressionType": sub.expression_type,
        "clientVersion": sub.sub_version,
    })
    .to_string()
}

pub async fn handle(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match QueryConsumeQueueRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    if !shard.store.has_consume_queue(&h.topic, h.queue_id) {
        return error(
            rc::SYSTEM_ERROR,
            format!("{}@{} is not exist!", h.queue_id, h.topic),
        );
    }
    let mut body = QueryConsumeQueueResponseBody {
        max_queue_index: shard.store.max_offset(&h.topic, h.queue_id),
        min_queue_index: shard.store.min_offset(&h.topic, h.queue_id),
        ..Default::default()
    };
    let mut tags: Option<TagFilter> = None;
    if let Some(group) = h.consumer_group.clone() {
        match subscription(shard, group.clone(), h.topic.clone()).await {
            None => {
                body.filter_data = Some(format!("{group}@{} is not online!", h.topic));
            }
            Some(sub) => {
                body.filter_data = Some(filter_data(&group, &sub));
                if is_tag_type(&sub.expression_type) {
                    tags = Some(TagFilter::from_subscription(&sub));
                }
                body.subscription_data = Some(sub);
            }
        }
    }
    if h.index < body.min_queue_index || h.index >= body.max_queue_index {
        let mut resp = ok().with_body(protocol::body::to_json(&body));
        resp.remark = Some(format!(
            "Index {} of {}@{} is not exist!",
            h.index, h.queue_id, h.topic
        ));
        return resp;
    }
    let units = match shard
        .store
        .consume_queue_units(&h.topic, h.queue_id, h.index, i64::from(h.count.max(0)))
        .await
    {
        Ok(u) => u,
        Err(e) => {
            return error(
                rc::SYSTEM_ERROR,
                format!("reading the ConsumeQueue failed: {e}"),
            )
        }
    };
    body.queue_data = Some(
        units
            .into_iter()
            .map(|u| ConsumeQueueData {
                physic_offset: u.physical_offset,
                physic_size: u.size,
                tags_code: u.tags_code,
                eval: tags.as_ref().is_some_and(|t| t.matches(u.tags_code)),
                ..Default::default()
            })
            .collect(),
    );
    ok().with_body(protocol::body::to_json(&body))
}

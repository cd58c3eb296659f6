//! Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus.

use client::broker_api;
use client::request::request;
use client::ClientError;
use protocol::body::{from_json, perm, TopicConfig, TopicList};
use protocol::header::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader, GetTopicConfigRequestHeader,
};
use protocol::topic_attributes;
use protocol::{request_code, ExtFields};
use serde_json::json;

use crate::admin::Admin;
use crate::table::{Report, Table};

/// The topic RocketMQ's tools name as the template of new topics.
const DEFAULT_TOPIC: &str = "TBW102";

pub struct TopicSpec<'a> {
    pub topic: &'a str,
    pub read_queues: i32,
    pub write_queues: i32,
    pub perm: i32,
    pub order: bool,
    /// RocketMQ 5 attribute changes (`+k=v,-k`), checked here and applied by the broker.
    pub attributes: Option<&'a str>,
}

fn check_topic_name(topic: &str) -> Result<(), ClientError> {
    let ok = !topic.is_empty()
        && topic.len() <= 127
        && topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "%|-_".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ClientError::Invalid(format!(
            "topic name {topic:?} must be 1 to 127 characters of [a-zA-Z0-9%|_-]"
        )))
    }
}

pub async fn update_topic(
    admin: &Admin,
    addrs: Vec<String>,
    spec: TopicSpec<'_>,
) -> Result<Report, ClientError> {
    check_topic_name(spec.topic)?;
    if !(1..=1024).contains(&spec.read_queues) || !(1..=1024).contains(&spec.write_queues) {
        return Err(ClientError::Invalid("queue counts must be 1..=1024".into()));
    }
    let signed = topic_attributes::parse_modification(spec.attributes.unwrap_or(""))
        .map_err(|why| ClientError::Invalid(format!("attributes: {why}")))?;
    let header = CreateTopicRequestHeader {
        topic: spec.topic.to_owned(),
        default_topic: DEFAULT_TOPIC.to_owned(),
        read_queue_nums: spec.read_queues,
        write_queue_nums: spec.write_queues,
        perm: spec.perm,
        topic_filter_type: "SINGLE_TAG".to_owned(),
        topic_sys_flag: Some(0),
        order: Some(spec.order),
        attributes: spec.attributes.filter(|a| !a.is_empty()).map(str::to_owned),
        force: None,
    };
    let mut table = Table::new(&["Broker Addr", "Result"]);
    let mut done = Vec::new();
    for addr in &addrs {
        admin
            .call(
                addr,
                request(
                    request_code::UPDATE_AND_CREATE_TOPIC,
                    header.to_ext_fields(),
                ),
            )
            .await?;
        table.row(vec![addr.clone(), "success".into()]);
        done.push(addr.clone());
    }
    let json = json!({
        "topic": spec.topic, "readQueueNums": spec.read_queues, "writeQueueNums": spec.write_queues,
        "perm": spec.perm, "order": spec.order, "attributes": signed, "brokers": done,
    });
    // The request as Apache's mqadmin prints it (attributes still signed).
    let attributes = signed
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Report::new(table, json).with_footer(format!(
        "create topic {} on {} broker(s) success.\nTopicConfig [topicName={}, readQueueNums={}, \
         writeQueueNums={}, perm={}, topicFilterType=SINGLE_TAG, topicSysFlag=0, order={}, \
         attributes={{{attributes}}}]",
        spec.topic,
        addrs.len(),
        spec.topic,
        spec.read_queues,
        spec.write_queues,
        perm_name(spec.perm),
        spec.order,
    )))
}

pub async fn delete_topic(
    admin: &Admin,
    cluster: &str,
    topic: &str,
) -> Result<Report, ClientError> {
    let header = DeleteTopicRequestHeader {
        topic: topic.to_owned(),
    };
    let mut table = Table::new(&["Target", "Result"]);
    let mut brokers = Vec::new();
    for (_, _, addr) in admin.cluster_brokers(cluster).await? {
        admin
            .call(
                &addr,
                request(request_code::DELETE_TOPIC_IN_BROKER, header.to_ext_fields()),
            )
            .await?;
        table.row(vec![format!("broker {addr}"), "deleted".into()]);
        brokers.push(addr);
    }
    let mut namesrvs = Vec::new();
    let cmd = request(
        request_code::DELETE_TOPIC_IN_NAMESRV,
        header.to_ext_fields(),
    );
    for (addr, result) in admin.call_every_namesrv(&cmd).await {
        let text = match &result {
            Ok(()) => "deleted".to_owned(),
            Err(e) => format!("failed: {e}"),
        };
        table.row(vec![format!("namesrv {addr}"), text.clone()]);
        namesrvs.push(json!({"addr": addr.to_string(), "result": text}));
    }
    Ok(Report::new(
        table,
        json!({"topic": topic, "cluster": cluster, "brokers": brokers, "namesrvs": namesrvs}),
    ))
}

/// Every topic the name server knows.
pub async fn all_topics(admin: &Admin) -> Result<TopicList, ClientError> {
    let resp = client::request::expect_success(
        admin
            .namesrv
            .invoke(request(
                request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                ExtFields::new(),
            ))
            .await?,
    )?;
    Ok(from_json(&resp.body)?)
}

pub async fn topic_list(admin: &Admin) -> Result<Report, ClientError> {
    let list = all_topics(admin).await?;
    let mut table = Table::new(&["Topic"]);
    for t in &list.topic_list {
        table.row(vec![t.clone()]);
    }
    Ok(Report::new(table, json!({"topicList": list.topic_list})))
}

/// Apache's `PermName.perm2String`: R, W and X (inherit) or '-'.
fn perm_name(p: i32) -> String {
    let mut s = perm_text(p);
    s.push(if p & perm::INHERIT != 0 { 'X' } else { '-' });
    s
}

fn perm_text(p: i32) -> String {
    let mut s = String::new();
    s.push(if perm::is_readable(p) { 'R' } else { '-' });
    s.push(if perm::is_writeable(p) { 'W' } else { '-' });
    s
}

pub async fn topic_route(admin: &Admin, topic: &str) -> Result<Report, ClientError> {
    let route = admin.route(topic).await?;
    let mut table = Table::new(&[
        "Broker Name",
        "BID",
        "Addr",
        "Read Queues",
        "Write Queues",
        "Perm",
        "Attributes",
    ]);
    let mut datas = route.broker_datas.clone();
    datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let mut attributes = serde_json::Map::new();
    for b in &datas {
        let queues = route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == b.broker_name);
        for (id, addr) in &b.broker_addrs {
            let attrs = topic_config(admin, addr, topic)
                .await
                .map(|tc| tc.attributes);
            let text = match &attrs {
                Ok(a) => topic_attributes_text(a),
                // Brokers before RocketMQ 5 have no GET_TOPIC_CONFIG.
                Err(_) => "-".to_owned(),
            };
            match &attrs {
                Ok(a) if *id == 0 => {
                    attributes.insert(b.broker_name.clone(), json!(a));
                }
                _ => {}
            }
            table.row(vec![
                b.broker_name.clone(),
                id.to_string(),
                addr.clone(),
                queues.map_or("-".into(), |q| q.read_queue_nums.to_string()),
                queues.map_or("-".into(), |q| q.write_queue_nums.to_string()),
                queues.map_or("-".into(), |q| perm_text(q.perm)),
                text,
            ]);
        }
    }
    let mut json =
        serde_json::to_value(&route).map_err(|e| ClientError::Invalid(e.to_string()))?;
    if let Some(obj) = json.as_object_mut() {
        obj.insert("attributesByBroker".into(), attributes.into());
    }
    Ok(Report::new(table, json))
}

/// A topic's config on one broker (GET_TOPIC_CONFIG).
pub async fn topic_config(
    admin: &Admin,
    addr: &str,
    topic: &str,
) -> Result<TopicConfig, ClientError> {
    let header = GetTopicConfigRequestHeader {
        topic: topic.to_owned(),
        lo: None,
    };
    let resp = admin
        .call(
            addr,
            request(request_code::GET_TOPIC_CONFIG, header.to_ext_fields()),
        )
        .await?;
    Ok(from_json(&resp.body)?)
}

/// Stored attributes as `k=v,k=v`, or `-` for none.
fn topic_attributes_text(attributes: &std::collections::BTreeMap<String, String>) -> String {
    if attributes.is_empty() {
        return "-".to_owned();
    }
    attributes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub async fn topic_status(admin: &Admin, topic: &str) -> Result<Report, ClientError> {
    let route = admin.route(topic).await?;
    let mut table = Table::new(&["Broker Name", "QID", "Min Offset", "Max Offset"]);
    let mut rows = Vec::new();
    let mut queue_datas = route.queue_datas.clone();
    queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for q in &queue_datas {
        let Some(addr) = route.master_addr_of(&q.broker_name) else {
            continue;
        };
        let client = admin.broker(addr).await?;
        for queue_id in 0..q.read_queue_nums.max(q.write_queue_nums) {
            let min = broker_api::min_offset(&client, topic, queue_id, admin.timeout).await?;
            let max = broker_api::max_offset(&client, topic, queue_id, admin.timeout).await?;
            table.row(vec![
                q.broker_name.clone(),
                queue_id.to_string(),
                min.to_string(),
                max.to_string(),
            ]);
            rows.push(json!({"brokerName": q.broker_name, "queueId": queue_id, "minOffset": min, "maxOffset": max}));
        }
    }
    Ok(Report::new(table, json!({"topic": topic, "queues": rows})))
}

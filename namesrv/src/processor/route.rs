//! Route queries and topic admin: GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO,
//! GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER, DELETE_TOPIC_IN_NAMESRV.

use protocol::header::{CommandHeader, DeleteTopicRequestHeader, GetRouteInfoRequestHeader};
use protocol::{response_code, RemotingCommand};

use crate::name_server::NameServer;
use crate::response;

/// GET_ROUTEINFO_BY_TOPIC (105): the route as JSON, or TOPIC_NOT_EXIST.
pub fn route_by_topic(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let header = match GetRouteInfoRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(header) => header,
        Err(e) => return response::bad_input(request, format!("route info header: {e}")),
    };
    let mut route = ns.table.borrow().route(&header.topic);
    if ns.order_message_enable.get() {
        if let Some(route) = route.as_mut() {
            route.order_topic_conf = ns
                .kv
                .borrow()
                .get(crate::kv_config::ORDER_TOPIC_CONFIG, &header.topic)
                .map(str::to_owned);
        }
    }
    match route {
        // Map keys are always written quoted (standard JSON): every client accepts that form.
        Some(route) => response::json(request, &route),
        None => response::error(
            request,
            response_code::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {}",
                header.topic
            ),
        ),
    }
}

/// GET_BROKER_CLUSTER_INFO (106).
pub fn cluster_info(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let info = ns.table.borrow().cluster_info();
    response::json(request, &info)
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
pub fn all_topics(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let topics = ns.table.borrow().topic_list();
    response::json(request, &topics)
}

/// GET_TOPICS_BY_CLUSTER (224): header `cluster`.
pub fn topics_by_cluster(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let Some(cluster) = request.ext("cluster") else {
        return response::bad_input(request, "topics by cluster: missing header field cluster");
    };
    let topics = ns.table.borrow().topics_by_cluster(cluster);
    response::json(request, &topics)
}

/// DELETE_TOPIC_IN_NAMESRV (216): header `topic`, optional `clusterName` (only that cluster's queues).
pub fn delete_topic(ns: &NameServer, request: &RemotingCommand) -> RemotingCommand {
    let header = match DeleteTopicRequestHeader::from_ext_fields(&request.ext_fields) {
        Ok(header) => header,
        Err(e) => return response::bad_input(request, format!("delete topic header: {e}")),
    };
    let cluster = request.ext("clusterName");
    let removed = ns.table.borrow_mut().delete_topic(&header.topic, cluster);
    tracing::info!(
        "delete topic {} (cluster {}): {}",
        header.topic,
        cluster.unwrap_or("all"),
        if removed { "removed" } else { "not found" }
    );
    response::success(request)
}

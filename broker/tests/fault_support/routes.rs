//! Route lookups the name-server fault tests poll: the answer code of GET_ROUTEINFO_BY_TOPIC, the
//! brokers a route names, and waiting until a name server serves a topic's route.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use protocol::{request_code, response_code, RemotingCommand};

/// The code GET_ROUTEINFO_BY_TOPIC answers now (connection errors and timeouts count as -1).
pub async fn route_code(ns: SocketAddr, topic: &str) -> i32 {
    let Ok(client) = remoting::Client::connect(ns, Duration::from_secs(2)).await else {
        return -1;
    };
    let req =
        RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    match client.invoke(req, Duration::from_secs(2)).await {
        Ok(r) => r.code,
        Err(_) => -1,
    }
}

/// The broker names the name server routes `topic` to (empty when it has no route).
pub async fn route_brokers(ns: SocketAddr, topic: &str) -> Vec<String> {
    let Ok(client) = remoting::Client::connect(ns, Duration::from_secs(2)).await else {
        return Vec::new();
    };
    let req =
        RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    match client.invoke(req, Duration::from_secs(2)).await {
        Ok(r) if r.code == response_code::SUCCESS => {
            let route: protocol::body::TopicRouteData =
                protocol::body::from_json(&r.body).expect("route body");
            let mut names: Vec<String> = route
                .queue_datas
                .iter()
                .map(|q| q.broker_name.clone())
                .collect();
            names.sort();
            names
        }
        _ => Vec::new(),
    }
}

/// Waits until the name server serves `topic`'s route; returns how long that took.
pub async fn wait_route(ns: SocketAddr, topic: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    while start.elapsed() < limit {
        if route_code(ns, topic).await == response_code::SUCCESS {
            return start.elapsed();
        }
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
    panic!("name server {ns} did not learn topic {topic} within {limit:?}");
}

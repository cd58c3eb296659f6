//! What every workload sets up before it sends: the topic on every master, a producer for it, and
//! the masters that serve the topic's queues.

use std::collections::BTreeMap;
use std::rc::Rc;

use client::{NameServer, Producer, ProducerConfig, TopicRoute};

use super::WorkloadArgs;
use crate::topic_setup::create_and_route;

/// Creates `--topic` with `--create-queues` queues, then a producer of `group` with `--timeout`
/// for its sends and connects.
pub async fn producer(args: &WorkloadArgs, group: &str) -> Result<Rc<Producer>, String> {
    let ns = NameServer::from_list(&args.namesrv, args.timeout).map_err(|e| e.to_string())?;
    create_and_route(&ns, &args.topic, args.create_queues).await?;
    Ok(Rc::new(Producer::new(
        ns,
        ProducerConfig {
            group: group.to_owned(),
            send_timeout: args.timeout,
            connect_timeout: args.timeout,
            ..ProducerConfig::default()
        },
    )))
}

/// The route of `topic` as `producer` knows it.
pub async fn route(producer: &Producer, topic: &str) -> Result<Rc<TopicRoute>, String> {
    producer
        .route(topic)
        .await
        .map_err(|e| format!("route of {topic}: {e}"))
}

/// Broker name -> master address, of every broker with a readable queue in `route`.
pub fn masters(route: &TopicRoute) -> BTreeMap<String, String> {
    route
        .read_queues()
        .iter()
        .filter_map(|q| {
            Some((
                q.broker_name.clone(),
                route.master_addr(&q.broker_name).ok()?.to_owned(),
            ))
        })
        .collect()
}

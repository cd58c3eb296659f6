//! `--create-queues`: creates the topic on every broker master before a run, on a short-lived executor.

use std::time::Duration;

use client::NameServer;
use glommio::LocalExecutorBuilder;

use crate::cli::CommonArgs;

/// How long to wait for the name server to route a topic just created.
const ROUTE_WAIT: Duration = Duration::from_secs(35);

pub fn create_topic(common: &CommonArgs, queues: i32) -> Result<(), String> {
    if queues <= 0 {
        return Err("--create-queues must be positive".into());
    }
    let (namesrv, topic, timeout) = (common.namesrv.clone(), common.topic.clone(), common.timeout);
    let handle = LocalExecutorBuilder::default()
        .name("loadgen-setup")
        .spawn(move || async move {
            let ns = NameServer::from_list(&namesrv, timeout).map_err(|e| e.to_string())?;
            create_and_route(&ns, &topic, queues).await
        })
        .map_err(|e| format!("cannot start setup executor: {e}"))?;
    handle.join().map_err(|e| e.to_string())?
}

/// Creates `topic` with `queues` queues on every master and waits for the name server to route it.
pub async fn create_and_route(ns: &NameServer, topic: &str, queues: i32) -> Result<(), String> {
    ns.create_topic(topic, queues, None, ROUTE_WAIT)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot create topic {topic}: {e}"))
}

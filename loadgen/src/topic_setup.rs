//! `--create-queues`: creates the topic on every broker master before a run, on a short-lived executor.

use std::time::Duration;

use client::NameServer;
use glommio::LocalExecutorBuilder;

/// How long to wait for the name server to route a topic just created.
const ROUTE_WAIT: Duration = Duration::from_secs(35);

/// Creates `topic` with `queues` queues through the name servers at `namesrv`, on an executor of its
/// own (the run's executors have not started yet).
pub fn create_topic(
    namesrv: String,
    topic: String,
    timeout: Duration,
    queues: i32,
) -> Result<(), String> {
    if queues <= 0 {
        return Err("--create-queues must be positive".into());
    }
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

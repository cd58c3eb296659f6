//! The workload's topics, as OMB means partitionsPerTopic: the queues of a topic in all. They are
//! dealt out over the cluster's broker masters as evenly as they go (with 16 over 3 masters: 6, 5,
//! 5), each master's share created on it (UPDATE_AND_CREATE_TOPIC), on a short-lived executor before
//! the run; then the name server must route all of them.

use std::time::{Duration, Instant};

use client::NameServer;
use glommio::LocalExecutorBuilder;
use remoting::Client;

/// How long to wait for the name server to route a topic just created.
const ROUTE_WAIT: Duration = Duration::from_secs(35);

/// Queues each of `masters` masters gets so that the topic has `partitions` in all (0: none there).
pub fn shares(partitions: u32, masters: usize) -> Vec<i32> {
    let n = u32::try_from(masters).unwrap_or(u32::MAX).max(1);
    (0..masters)
        .map(|i| {
            let extra = u32::from((i as u32) < partitions % n);
            i32::try_from(partitions / n + extra).unwrap_or(i32::MAX)
        })
        .collect()
}

/// Creates every topic with `partitions` queues in all.
pub fn create(
    namesrv: &str,
    timeout: Duration,
    topics: &[String],
    partitions: u32,
) -> Result<(), String> {
    let (namesrv, topics) = (namesrv.to_owned(), topics.to_vec());
    let handle = LocalExecutorBuilder::default()
        .name("loadgen-omb-setup")
        .spawn(move || async move {
            let ns = NameServer::from_list(&namesrv, timeout).map_err(|e| e.to_string())?;
            let info = ns
                .cluster_info()
                .await
                .map_err(|e| format!("cluster info from {namesrv}: {e}"))?;
            let mut masters: Vec<String> = info
                .broker_addr_table
                .values()
                .filter_map(|b| b.master_addr().map(str::to_owned))
                .collect();
            masters.sort();
            if masters.is_empty() {
                return Err(format!("no broker master is registered with {namesrv}"));
            }
            for topic in &topics {
                for (addr, queues) in masters.iter().zip(shares(partitions, masters.len())) {
                    if queues == 0 {
                        continue;
                    }
                    let target = remoting::resolve(addr)
                        .map_err(|e| format!("broker address {addr}: {e}"))?;
                    let client = Client::connect(target, timeout)
                        .await
                        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
                    client::broker_api::create_topic(&client, topic, queues, timeout)
                        .await
                        .map_err(|e| format!("cannot create topic {topic} on {addr}: {e}"))?;
                }
                wait_for_route(&ns, topic, partitions).await?;
            }
            Ok(())
        })
        .map_err(|e| format!("cannot start setup executor: {e}"))?;
    handle.join().map_err(|e| e.to_string())?
}

/// Waits until the name server routes `partitions` read queues of `topic`.
async fn wait_for_route(ns: &NameServer, topic: &str, partitions: u32) -> Result<(), String> {
    let deadline = Instant::now() + ROUTE_WAIT;
    loop {
        let queues = match ns.topic_route(topic).await {
            Ok(route) => route
                .queue_datas
                .iter()
                .map(|q| u64::try_from(q.read_queue_nums).unwrap_or(0))
                .sum::<u64>(),
            Err(_) => 0,
        };
        if queues == u64::from(partitions) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "topic {topic}: the name server routes {queues} queues, not {partitions}, after {}s",
                ROUTE_WAIT.as_secs()
            ));
        }
        glommio::timer::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_dealt_out_over_masters() {
        assert_eq!(shares(16, 1), vec![16]);
        assert_eq!(shares(16, 4), vec![4, 4, 4, 4]);
        assert_eq!(shares(16, 3), vec![6, 5, 5]);
        assert_eq!(shares(2, 3), vec![1, 1, 0]);
        assert_eq!(shares(16, 3).iter().sum::<i32>(), 16);
    }
}

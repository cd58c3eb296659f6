//! What a broker name given for `-b` stands for: Apache's `-b` is an address, ours also takes the name
//! in a broker's config, which for a process of several shard-brokers means every one of them.

use client::ClientError;

use crate::admin::Admin;

/// The shard id of `broker` when it is `name-<decimal id>`.
fn shard_of(broker: &str, name: &str) -> Option<u32> {
    let id = broker.strip_prefix(name)?.strip_prefix('-')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

impl Admin {
    /// The addresses a broker name given for `-b` stands for: the master (else the lowest id) of the
    /// broker registered under that name; otherwise every shard-broker (`NAME-<shard>`) of the broker
    /// process configured as NAME, in shard order, each confirmed by its runtime info
    /// (`processBrokerName`). Refused, with the names, when none is registered or a candidate does not
    /// answer.
    pub async fn resolve_broker_name(&self, name: &str) -> Result<Vec<String>, ClientError> {
        let info = self.cluster_info().await?;
        let addr_of = |data: &protocol::body::BrokerData| {
            data.master_addr()
                .map(str::to_owned)
                .or_else(|| data.broker_addrs.values().next().cloned())
        };
        if let Some(addr) = info.broker_addr_table.get(name).and_then(addr_of) {
            return Ok(vec![addr]);
        }
        let mut candidates: Vec<(u32, String, String)> = info
            .broker_addr_table
            .iter()
            .filter_map(|(broker, data)| {
                Some((shard_of(broker, name)?, broker.clone(), addr_of(data)?))
            })
            .collect();
        candidates.sort();
        if candidates.is_empty() {
            return Err(ClientError::Invalid(format!(
                "no broker named {name} is registered, nor shard-brokers {name}-0 ..; -b takes a \
             broker address (host:port) or a broker name"
            )));
        }
        let mut shards = Vec::new();
        let mut others = Vec::new();
        for (_, broker, addr) in candidates {
            let kv = self.runtime_info(&addr).await.map_err(|e| {
                ClientError::Invalid(format!(
                    "cannot tell whether {broker} ({addr}) is a shard-broker of {name}: {e}"
                ))
            })?;
            if kv.table.get("processBrokerName").map(String::as_str) == Some(name) {
                shards.push(addr);
            } else {
                others.push(broker);
            }
        }
        if shards.is_empty() {
            return Err(ClientError::Invalid(format!(
                "no broker named {name} is registered, and {} are not shard-brokers of a process \
             named {name}: name one of them",
                others.join(", ")
            )));
        }
        Ok(shards)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::is_broker_name;

    #[test]
    fn names_and_addresses_and_shard_ids() {
        assert!(is_broker_name("broker-a"));
        assert!(!is_broker_name("127.0.0.1:10911"));
        assert_eq!(shard_of("broker-a-1", "broker-a"), Some(1));
        assert_eq!(shard_of("broker-a-12", "broker-a"), Some(12));
        assert_eq!(shard_of("broker-ab-0", "broker-a"), None);
        assert_eq!(shard_of("broker-a-", "broker-a"), None);
        assert_eq!(shard_of("broker-a-0-1", "broker-a"), None);
        assert_eq!(shard_of("broker-a", "broker-a"), None);
    }
}

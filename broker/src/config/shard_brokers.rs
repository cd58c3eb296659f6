//! How clients see the shards: `shardRouting = direct` (default) makes every shard a broker of its
//! own in the route table (its own brokerName and ports), so a client's send or pull reaches the core
//! that owns the queue; `forward` keeps one brokerName for the process and hops to the owner.
//!
//! Shard `i` of broker `broker-a` is `broker-a-i`, listening on `listenPort + 4i` (and its fast "VIP"
//! port `fastListenPort + 4i`, i.e. its own port - 2 by default). A step of 4 leaves `listenPort + 1`
//! (the HA port) free. With one shard, or in `forward` mode, there is one broker: the configured
//! name and ports, unchanged.

use super::keys::{BrokerConfig, ShardRouting};

/// Port distance between consecutive shard-brokers of one process.
pub const SHARD_PORT_STEP: u16 = 4;

/// What one shard is to clients: a broker name and the ports it accepts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardBroker {
    pub broker_name: String,
    pub listen_port: u16,
    /// 0 when the fast port is off.
    pub fast_listen_port: u16,
    /// `brokerIP1:listenPort` of this shard-broker.
    pub broker_addr: String,
}

impl BrokerConfig {
    /// Whether each of `shards` shards is a broker of its own.
    pub fn shards_are_brokers(&self, shards: usize) -> bool {
        self.shard_routing == ShardRouting::Direct && shards > 1
    }

    /// The broker shard `shard` of `shards` presents to clients. `None` when its ports would pass 65535.
    pub fn shard_broker(&self, shard: usize, shards: usize) -> Option<ShardBroker> {
        if !self.shards_are_brokers(shards) {
            return Some(ShardBroker {
                broker_name: self.broker_name.clone(),
                listen_port: self.listen_port,
                fast_listen_port: self.fast_port(),
                broker_addr: self.broker_addr(),
            });
        }
        let offset = u16::try_from(shard)
            .ok()
            .and_then(|s| s.checked_mul(SHARD_PORT_STEP))?;
        let listen_port = self.listen_port.checked_add(offset)?;
        let fast_listen_port = match self.fast_port() {
            0 => 0,
            p => p.checked_add(offset)?,
        };
        Some(ShardBroker {
            broker_name: format!("{}-{shard}", self.broker_name),
            listen_port,
            fast_listen_port,
            broker_addr: format!("{}:{listen_port}", self.broker_ip1),
        })
    }

    /// The fast port, 0 when it is off or the same as the listen port.
    fn fast_port(&self) -> u16 {
        if self.fast_listen_port == self.listen_port {
            0
        } else {
            self.fast_listen_port
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(routing: ShardRouting) -> BrokerConfig {
        BrokerConfig {
            broker_name: "broker-a".into(),
            broker_ip1: "10.0.0.5".into(),
            shard_routing: routing,
            ..BrokerConfig::default()
        }
    }

    #[test]
    fn direct_shards_get_names_and_ports_of_their_own() {
        let c = cfg(ShardRouting::Direct);
        let b1 = c.shard_broker(1, 4).unwrap();
        assert_eq!(b1.broker_name, "broker-a-1");
        assert_eq!((b1.listen_port, b1.fast_listen_port), (10915, 10913));
        assert_eq!(b1.broker_addr, "10.0.0.5:10915");
        let b0 = c.shard_broker(0, 4).unwrap();
        assert_eq!(
            (b0.broker_name.as_str(), b0.listen_port),
            ("broker-a-0", 10911)
        );
        // No shard-broker's ports meet another's or the HA port.
        let mut ports: Vec<u16> = (0..4)
            .map(|i| c.shard_broker(i, 4).unwrap())
            .flat_map(|b| [b.listen_port, b.fast_listen_port])
            .chain([c.ha_listen_port])
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 9);
    }

    #[test]
    fn one_shard_or_forward_keeps_the_configured_broker() {
        for (c, shards) in [
            (cfg(ShardRouting::Direct), 1),
            (cfg(ShardRouting::Forward), 4),
        ] {
            let b = c.shard_broker(0, shards).unwrap();
            assert_eq!(b.broker_name, "broker-a");
            assert_eq!((b.listen_port, b.fast_listen_port), (10911, 10909));
            assert!(!c.shards_are_brokers(shards));
        }
    }

    #[test]
    fn ports_past_65535_are_refused() {
        let mut c = cfg(ShardRouting::Direct);
        c.listen_port = 65530;
        assert!(c.shard_broker(1, 2).is_some());
        assert!(c.shard_broker(2, 3).is_none());
        assert_eq!(
            ShardRouting::parse(" Forward "),
            Some(ShardRouting::Forward)
        );
        assert_eq!(ShardRouting::parse("both"), None);
    }
}

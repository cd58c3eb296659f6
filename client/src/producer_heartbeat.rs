//! A producer's heartbeat, as the Java client sends it: HEART_BEAT with its producer group in
//! `producerDataSet` to every master it sends to, when it first learns of the master (the Java
//! client's heartbeat at start) and every 30 s after, so the brokers list it in
//! `producerConnection` and can reach it (transaction checks). Runs beside the sends, never on
//! their path: a send only looks up its cached route.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::{Rc, Weak};
use std::time::Duration;

use protocol::body::{HeartbeatData, ProducerData};

use crate::broker_api;
use crate::connections::BrokerConnections;

/// The Java client's `heartbeatBrokerInterval`.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// The masters a producer knows and the heartbeat it sends them.
pub(crate) struct ProducerHeartbeat {
    data: HeartbeatData,
    connections: Rc<BrokerConnections>,
    timeout: Duration,
    masters: RefCell<BTreeSet<String>>,
    timer_started: Cell<bool>,
}

impl ProducerHeartbeat {
    pub(crate) fn new(
        client_id: String,
        group: &str,
        connections: Rc<BrokerConnections>,
        timeout: Duration,
    ) -> Rc<ProducerHeartbeat> {
        Rc::new(ProducerHeartbeat {
            data: HeartbeatData {
                client_id,
                producer_data_set: vec![ProducerData {
                    group_name: group.to_owned(),
                }],
                ..HeartbeatData::default()
            },
            connections,
            timeout,
            masters: RefCell::new(BTreeSet::new()),
            timer_started: Cell::new(false),
        })
    }

    /// The client id the heartbeats carry.
    pub(crate) fn client_id(&self) -> &str {
        &self.data.client_id
    }

    /// Records the masters of a route just fetched: new ones get a heartbeat now (in the
    /// background), and the 30 s timer starts with the first one.
    pub(crate) fn note_masters<'a>(self: &Rc<Self>, masters: impl Iterator<Item = &'a str>) {
        let fresh: Vec<String> = {
            let mut known = self.masters.borrow_mut();
            masters
                .filter(|addr| known.insert((*addr).to_owned()))
                .map(str::to_owned)
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let me = self.clone();
        glommio::spawn_local(async move { me.beat(&fresh).await }).detach();
        if !self.timer_started.replace(true) {
            let weak = Rc::downgrade(self);
            glommio::spawn_local(every_interval(weak)).detach();
        }
    }

    /// One heartbeat to each of `addrs`; a failure is left for the next round.
    async fn beat(&self, addrs: &[String]) {
        for addr in addrs {
            let sent = async {
                // Slot 0: leaves the send rotation of the pool untouched.
                let conn = self.connections.get_slot(addr, 0).await?;
                broker_api::heartbeat(&conn, &self.data, self.timeout).await
            };
            if let Err(e) = sent.await {
                tracing::debug!(
                    "producer heartbeat of group {:?} to {addr} failed: {e}",
                    self.data
                        .producer_data_set
                        .first()
                        .map(|p| p.group_name.as_str())
                );
            }
        }
    }
}

/// Heartbeats every known master each interval, until the producer is dropped.
async fn every_interval(weak: Weak<ProducerHeartbeat>) {
    loop {
        glommio::timer::sleep(HEARTBEAT_INTERVAL).await;
        let Some(me) = weak.upgrade() else {
            return;
        };
        let addrs: Vec<String> = me.masters.borrow().iter().cloned().collect();
        me.beat(&addrs).await;
    }
}

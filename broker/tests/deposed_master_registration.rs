//! Controller mode and the name server: a broker's registration carries the master epoch it last
//! learnt as its topic config DataVersion's `stateVersion`, and the name server keeps brokerId 0 for
//! the newest master.
//!
//! A controller (a child process of this test binary), an in-process name server and two brokers of
//! one group. The name server's stored DataVersion of the master (QUERY_DATA_VERSION) carries the
//! controller's epoch; after the master is SIGKILLed its successor registers the next epoch. A
//! registration as brokerId 0 from the old master's address with the old epoch (what a deposed master
//! that has not learnt of its successor sends) leaves the new master named; the old master,
//! restarted, follows at the new epoch under its own brokerId.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{run_local, Broker, ControllerProc};
use protocol::body::{ClusterInfo, DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper};
use protocol::header::{CommandHeader, QueryDataVersionRequestHeader, RegisterBrokerRequestHeader};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;

const GROUP: &str = "broker-t";
const CLUSTER: &str = "TestCluster";
const TIMEOUT: Duration = Duration::from_secs(2);

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn controller_helper_process() {
    common::serve_controller_if_asked();
}

/// The group's master address and epoch, as the controller says (None before it has one).
fn master(controller: &ControllerProc) -> Option<(String, i64)> {
    let resp = controller.replica_info(GROUP)?;
    let addr = resp.ext("masterAddress").filter(|a| !a.is_empty())?;
    Some((addr.to_owned(), resp.ext("masterEpoch")?.parse().ok()?))
}

/// The SyncStateSet's size.
fn in_sync(controller: &ControllerProc) -> usize {
    controller
        .replica_info(GROUP)
        .and_then(|r| ControllerProc::sync_state_set(&r))
        .map_or(0, |set| set.len())
}

/// One request on a fresh connection; None when it fails or is not answered SUCCESS.
fn invoke(addr: &str, req: RemotingCommand) -> Option<RemotingCommand> {
    let addr = addr.to_owned();
    run_local(async move {
        let c = Client::connect_str(&addr, TIMEOUT).await.ok()?;
        let resp = c.invoke(req, TIMEOUT).await.ok()?;
        (resp.code == response_code::SUCCESS).then_some(resp)
    })
}

/// The name server's brokerId -> address of the group.
fn named(ns: SocketAddr) -> Vec<(i64, String)> {
    invoke(
        &ns.to_string(),
        RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO),
    )
    .and_then(|r| protocol::body::from_fastjson::<ClusterInfo>(&r.body).ok())
    .and_then(|info| info.broker_addr_table.get(GROUP).cloned())
    .map(|group| group.broker_addrs.into_iter().collect())
    .unwrap_or_default()
}

/// The `stateVersion` the name server holds for `broker_addr` (QUERY_DATA_VERSION answers the stored
/// DataVersion).
fn stored_state_version(ns: SocketAddr, broker_addr: &str) -> Option<i64> {
    let header = QueryDataVersionRequestHeader {
        broker_name: GROUP.to_owned(),
        broker_addr: broker_addr.to_owned(),
        cluster_name: CLUSTER.to_owned(),
        broker_id: 0,
    };
    let probe = DataVersion {
        counter: -1,
        state_version: -1,
        timestamp: -1,
    };
    let resp = invoke(
        &ns.to_string(),
        RemotingCommand::request(request_code::QUERY_DATA_VERSION)
            .with_ext_fields(header.to_ext_fields())
            .with_body(protocol::body::to_json(&probe)),
    )?;
    protocol::body::from_json::<DataVersion>(&resp.body)
        .ok()
        .map(|v| v.state_version)
}

#[test]
fn the_state_version_follows_the_master_epoch_and_a_stale_master_does_not_replace_the_new_one() {
    let ns = common::start_namesrv_in_process();
    let controller = ControllerProc::start("controller_helper_process");
    let extra = format!(
        "shardCount = 1\nenableControllerMode = true\ncontrollerAddr = \"{}\"\n\
         namesrvAddr = \"{ns}\"\nregisterNameServerPeriod = 1000\nslaveReadEnable = true\n",
        controller.addr
    );
    let mut old = Broker::start(&extra);
    let old_addr = old.addr().to_string();
    let epoch = controller.wait_until("the first broker to be master", &[&old], || {
        master(&controller)
            .filter(|(addr, _)| *addr == old_addr)
            .map(|(_, epoch)| epoch)
    });
    let new = Broker::start(&extra);
    let new_addr = new.addr().to_string();
    controller.wait_until("2 replicas in sync", &[&old, &new], || {
        (in_sync(&controller) == 2).then_some(())
    });
    // The master registered its epoch; the slave too, under its own brokerId.
    controller.wait_until(
        "the master's registration at its epoch",
        &[&old, &new],
        || {
            (named(ns).contains(&(0, old_addr.clone()))
                && stored_state_version(ns, &old_addr) == Some(epoch)
                && stored_state_version(ns, &new_addr) == Some(epoch))
            .then_some(())
        },
    );

    old.kill9();
    let new_epoch = controller.wait_until("the second broker elected", &[&new], || {
        master(&controller)
            .filter(|(addr, e)| *addr == new_addr && *e > epoch)
            .map(|(_, e)| e)
    });
    controller.wait_until(
        "the new master's registration at the new epoch",
        &[&new],
        || {
            (named(ns) == vec![(0, new_addr.clone())]
                && stored_state_version(ns, &new_addr) == Some(new_epoch))
            .then_some(())
        },
    );

    // What the old master would send had it been cut off and come back before learning of the
    // election: brokerId 0 at its old epoch.
    let mut topics = TopicConfigSerializeWrapper::default();
    topics.data_version.state_version = epoch;
    topics.data_version.counter = 1_000;
    let header = RegisterBrokerRequestHeader {
        broker_name: GROUP.to_owned(),
        broker_addr: old_addr.clone(),
        cluster_name: CLUSTER.to_owned(),
        ha_server_addr: old.ha_addr().to_string(),
        broker_id: 0,
        heartbeat_timeout_millis: None,
        enable_acting_master: None,
        compressed: Some(false),
        body_crc32: None,
    };
    let stale = invoke(
        &ns.to_string(),
        RemotingCommand::request(request_code::REGISTER_BROKER)
            .with_ext_fields(header.to_ext_fields())
            .with_body(protocol::body::to_json(&RegisterBrokerBody::new(
                topics,
                Vec::new(),
            ))),
    )
    .expect("the name server answers the stale registration");
    assert_eq!(stale.ext("masterAddr"), None);
    assert_eq!(
        named(ns),
        vec![(0, new_addr.clone())],
        "a registration at epoch {epoch} replaced the master of epoch {new_epoch}"
    );
    assert_eq!(stored_state_version(ns, &old_addr), None);

    // The old master restarted learns the new epoch and registers as a slave.
    old.restart();
    let followed = controller.wait_until(
        "the old master registered as a slave",
        &[&old, &new],
        || {
            let named = named(ns);
            let id = named
                .iter()
                .find(|(_, addr)| *addr == old_addr)
                .map(|(id, _)| *id)?;
            (named.contains(&(0, new_addr.clone()))
                && stored_state_version(ns, &old_addr) == Some(new_epoch))
            .then_some(id)
        },
    );
    assert_ne!(followed, 0, "the old master must not be named master again");
}

//! `haStatus` and `getBrokerEpoch` on a controller-mode trio (one controller, three replicas of
//! `broker-t`): GET_BROKER_EPOCH_CACHE (1007) answers Apache's EpochEntryCache on every replica
//! (master brokerId 0, the slaves their controller ids, the same epochs everywhere, the last one open),
//! GET_BROKER_HA_STATUS (907) on the master lists both slaves in sync (the SyncStateSet's rule), and
//! Apache's mqadmin 5.5.0 prints them (skipped, with a message, when Maven or Java cannot provide it).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mqadmin_kit;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use common::*;
use mqadmin_kit::{ready_kit, Admin, MQADMIN_5};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::Client;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
#[ignore = "not a test: the controller process the test starts"]
fn ha_admin_controller_process() {
    serve_controller_if_asked();
}

/// The controller's SyncStateSet size and master address for `broker-t`, if it answers.
fn replica_info(controller: &ControllerProc) -> Option<(usize, String)> {
    let resp = controller.replica_info("broker-t")?;
    Some((
        ControllerProc::sync_state_set(&resp)?.len(),
        resp.ext("masterAddress").unwrap_or_default().to_owned(),
    ))
}

fn call(addr: SocketAddr, req: RemotingCommand) -> RemotingCommand {
    run_local(async move {
        let c = Client::connect(addr, TIMEOUT).await.unwrap();
        c.invoke(req, TIMEOUT).await.unwrap()
    })
}

fn json(resp: &RemotingCommand) -> Value {
    assert_eq!(resp.code, response_code::SUCCESS, "{:?}", resp.remark);
    serde_json::from_slice(&resp.body).unwrap()
}

#[test]
fn epochs_and_ha_status_of_a_controller_mode_trio() {
    let ns = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    common::start_namesrv_in_process_with(common::namesrv_config(ns));
    let controller = ControllerProc::start("ha_admin_controller_process");
    let extra = format!(
        "enableControllerMode = true\ncontrollerAddr = \"{}\"\nnamesrvAddr = \"{ns}\"\n\
         registerNameServerPeriod = 1000\nslaveReadEnable = true\ndiskMaxUsedSpaceRatio = 99\n",
        controller.addr
    );
    let mut brokers = vec![Broker::start(&extra)];
    let first = brokers[0].addr().to_string();
    let wait = |what: &str, ok: &dyn Fn(usize, &str) -> bool| {
        let start = Instant::now();
        loop {
            if let Some((n, master)) = replica_info(&controller) {
                if ok(n, &master) {
                    return master;
                }
            }
            assert!(start.elapsed() < LIMIT, "{what}: not within {LIMIT:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait("the first broker to be master", &|_, m| m == first);
    brokers.push(Broker::start(&extra));
    brokers.push(Broker::start(&extra));
    wait("3 replicas in sync", &|n, _| n == 3);
    let master = brokers[0].addr();
    run_local(async {
        let c = connect(master).await;
        for i in 0..4 {
            let r = send(&c, "EpochTopic", 0, format!("e{i}").as_bytes(), "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
    });
    // Every replica holds the master's log end before the epochs are compared.
    let master_end = {
        let cache = json(&call(
            master,
            RemotingCommand::request(request_code::GET_BROKER_EPOCH_CACHE),
        ));
        cache["maxOffset"].as_i64().unwrap()
    };
    assert!(master_end > 0);
    let start = Instant::now();
    let caches: Vec<Value> = loop {
        let caches: Vec<Value> = brokers
            .iter()
            .map(|b| {
                json(&call(
                    b.addr(),
                    RemotingCommand::request(request_code::GET_BROKER_EPOCH_CACHE),
                ))
            })
            .collect();
        if caches
            .iter()
            .all(|c| c["maxOffset"].as_i64() == Some(master_end))
        {
            break caches;
        }
        assert!(
            start.elapsed() < LIMIT,
            "replicas did not catch up: {caches:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for (i, cache) in caches.iter().enumerate() {
        let mut keys: Vec<&String> = cache.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "brokerId",
                "brokerName",
                "clusterName",
                "epochList",
                "maxOffset"
            ]
        );
        assert_eq!(cache["clusterName"], "TestCluster");
        assert_eq!(cache["brokerName"], "broker-t-0");
        let id = cache["brokerId"].as_i64().unwrap();
        if i == 0 {
            assert_eq!(id, 0, "the master's brokerId");
        } else {
            assert!(id > 0, "a slave's controller id: {cache}");
        }
        let list = cache["epochList"].as_array().unwrap();
        assert!(!list.is_empty(), "{cache}");
        assert_eq!(
            list,
            caches[0]["epochList"].as_array().unwrap(),
            "same history"
        );
        assert_eq!(list[0]["startOffset"], 0);
        assert!(list[0]["epoch"].as_i64().unwrap() >= 1);
        assert_eq!(list.last().unwrap()["endOffset"].as_i64(), Some(i64::MAX));
    }
    let ha = json(&call(
        master,
        RemotingCommand::request(request_code::GET_BROKER_HA_STATUS),
    ));
    assert_eq!(ha["master"], true);
    assert_eq!(
        ha["haConnectionInfo"].as_array().map(Vec::len),
        Some(2),
        "{ha}"
    );
    assert_eq!(ha["inSyncSlaveNums"], 2, "{ha}");
    let slave = json(&call(
        brokers[1].addr(),
        RemotingCommand::request(request_code::GET_BROKER_HA_STATUS),
    ));
    assert_eq!(slave["master"], false);
    assert_eq!(
        slave["haClientRuntimeInfo"]["maxOffset"].as_i64(),
        Some(master_end)
    );

    let Some(kit) = ready_kit(MQADMIN_5) else {
        return;
    };
    let admin = Admin { kit, ns };
    let out = admin.run(&["getBrokerEpoch", "-b", "broker-t-0"]);
    assert!(!out.contains("command failed"), "{out}");
    assert_eq!(out.matches("#brokerName\tbroker-t-0").count(), 3, "{out}");
    let epoch = caches[0]["epochList"][0]["epoch"].as_i64().unwrap();
    let last =
        format!("#Epoch: EpochEntry{{epoch={epoch}, startOffset=0, endOffset={master_end}}}");
    assert!(out.contains(&last), "no {last:?} in:\n{out}");
    let out = admin.run(&["haStatus", "-b", &first]);
    assert!(
        out.contains("#SlaveNum\t2") && out.contains("#InSyncSlaveNum\t2"),
        "{out}"
    );
}

//! `shardRouting`: in `direct` mode (the default) each shard is a broker of its own, registered with
//! the name server under `<brokerName>-<shard>` with its own ports, and serves its queues on its own
//! core; `forward` keeps one broker per process. A store refuses to start in the other mode.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use protocol::body::TopicRouteData;
use protocol::message::msgid;
use protocol::{request_code, response_code, RemotingCommand};

async fn route(ns: SocketAddr, topic: &str) -> Option<TopicRouteData> {
    let client = remoting::Client::connect(ns, TIMEOUT).await.unwrap();
    let r = client
        .invoke(
            RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic),
            TIMEOUT,
        )
        .await
        .unwrap();
    (r.code == response_code::SUCCESS).then(|| protocol::body::from_json(&r.body).unwrap())
}

/// The route of `topic` once it names `brokers` brokers.
async fn wait_route(ns: SocketAddr, topic: &str, brokers: usize) -> TopicRouteData {
    for _ in 0..200 {
        if let Some(data) = route(ns, topic).await {
            if data.broker_datas.len() == brokers {
                return data;
            }
        }
        glommio::timer::sleep(Duration::from_millis(50)).await;
    }
    panic!("the route of {topic} never named {brokers} brokers");
}

fn at(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn each_shard_is_a_broker_with_its_own_name_ports_and_queues() {
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!("namesrvAddr = \"{ns}\""));
    let ports = [broker.port, shard_broker_port(broker.port, 1)];
    run_local(async {
        let data = wait_route(ns, "TBW102", 2).await;
        let mut names: Vec<(String, String)> = data
            .broker_datas
            .iter()
            .map(|b| (b.broker_name.clone(), b.master_addr().unwrap().to_owned()))
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                ("broker-t-0".to_owned(), format!("127.0.0.1:{}", ports[0])),
                ("broker-t-1".to_owned(), format!("127.0.0.1:{}", ports[1])),
            ]
        );
        assert!(data.broker_datas.iter().all(|b| b.cluster == "TestCluster"));

        // The same queue id on each shard-broker is a queue of its own.
        for (shard, port) in ports.iter().enumerate() {
            let client = connect(at(*port)).await;
            for i in 0..3 {
                let r = send(&client, "Direct", 1, format!("s{shard}-{i}").as_bytes(), "").await;
                assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                // The offsetMsgId names the shard-broker that stored it, so a lookup goes there.
                let (host, _) = msgid::parse_offset_msg_id(r.ext("msgId").unwrap()).unwrap();
                assert_eq!(host.port(), *port);
            }
        }
        for (shard, port) in ports.iter().enumerate() {
            let client = connect(at(*port)).await;
            let bodies: Vec<String> = pull_all(&client, "Direct", 1)
                .await
                .iter()
                .map(|r| String::from_utf8_lossy(&r.body).into_owned())
                .collect();
            assert_eq!(
                bodies,
                (0..3).map(|i| format!("s{shard}-{i}")).collect::<Vec<_>>()
            );
            // Each shard-broker's figures are its own: its shard stored these three and nothing else.
            let info = runtime_info(at(*port)).await;
            assert_eq!(info_i64(&info, "msgPutTotalTodayNow"), Some(3), "{info:?}");
        }
        // The fast ("VIP") port of shard-broker 1 is its own port - 2.
        let vip = connect(at(ports[1] - 2)).await;
        assert_eq!(pull_all(&vip, "Direct", 1).await.len(), 3);

        // The auto-created topic is routed on both shard-brokers with its queues on each.
        let data = wait_route(ns, "Direct", 2).await;
        for q in &data.queue_datas {
            assert_eq!(q.write_queue_nums, 4, "{q:?}");
        }
    });
}

#[test]
fn forward_mode_is_one_broker_that_hops_to_the_owner() {
    let ns = start_namesrv_in_process();
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns}\"\nshardRouting = \"forward\""
    ));
    run_local(async {
        let data = wait_route(ns, "TBW102", 1).await;
        assert_eq!(data.broker_datas[0].broker_name, "broker-t");
        let client = connect(broker.addr()).await;
        for q in 0..4 {
            let r = send(&client, "Forwarded", q, format!("q{q}").as_bytes(), "").await;
            assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        }
        // Queues live on both shards; one connection reaches them all.
        for q in 0..4 {
            let got = pull_all(&client, "Forwarded", q).await;
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].queue_id, q);
        }
        // Two of the four queues are the other shard's: their puts and pulls crossed a core, and
        // the mesh counted them by request kind.
        let info = runtime_info(broker.addr()).await;
        let sent = |kind: &str| -> u64 {
            (0..2)
                .filter_map(|s| info.get(&format!("shard{s}.requestsSent.{kind}")))
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        };
        assert!(sent("put") >= 2, "puts across cores: {info:?}");
        assert!(sent("process") >= 2, "pulls across cores: {info:?}");
        // Nobody listens on a shard-broker port in forward mode.
        let shard1 = at(shard_broker_port(broker.port, 1));
        assert!(
            remoting::Client::connect(shard1, Duration::from_millis(500))
                .await
                .is_err()
        );
    });
}

#[test]
fn a_store_refuses_the_other_routing_mode() {
    let mut broker = Broker::start("");
    broker.stop();
    let text = std::fs::read_to_string(&broker.config).unwrap();
    std::fs::write(
        &broker.config,
        format!("{text}\nshardRouting = \"forward\"\n"),
    )
    .unwrap();
    let (status, output) = broker.run_expecting_exit();
    assert!(!status.success());
    assert!(
        output.contains("shardRouting = direct"),
        "the refusal says which mode the store has: {output}"
    );
    // Back in its own mode the store starts and keeps its messages.
    std::fs::write(&broker.config, text).unwrap();
    broker.restart();
}

#[test]
fn a_sigkilled_direct_broker_keeps_every_acknowledged_message_on_each_shard() {
    let mut broker = Broker::start("flushDiskType = \"SYNC_FLUSH\"");
    let ports = [broker.port, shard_broker_port(broker.port, 1)];
    let per_queue = 50;
    run_local(async {
        for port in ports {
            let client = connect(at(port)).await;
            for q in 0..2 {
                for i in 0..per_queue {
                    let r = send(
                        &client,
                        "Durable",
                        q,
                        format!("{port}-{q}-{i}").as_bytes(),
                        "",
                    )
                    .await;
                    assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
                }
            }
        }
    });
    broker.kill9();
    broker.restart();
    run_local(async {
        for port in ports {
            let client = connect(at(port)).await;
            for q in 0..2 {
                let bodies: Vec<String> = pull_all(&client, "Durable", q)
                    .await
                    .iter()
                    .map(|r| String::from_utf8_lossy(&r.body).into_owned())
                    .collect();
                let want: Vec<String> = (0..per_queue).map(|i| format!("{port}-{q}-{i}")).collect();
                assert_eq!(bodies, want, "shard-broker on {port}, queue {q}");
            }
        }
    });
}

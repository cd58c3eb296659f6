//! The broker registers its topics with every name server at start and after topic changes, and
//! unregisters at shutdown (the real name server runs in this process).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use protocol::body::TopicRouteData;
use protocol::{request_code, response_code, RemotingCommand};

async fn route(ns: SocketAddr, topic: &str) -> RemotingCommand {
    let client = remoting::Client::connect(ns, TIMEOUT).await.unwrap();
    client
        .invoke(
            RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic),
            TIMEOUT,
        )
        .await
        .unwrap()
}

async fn wait_route(ns: SocketAddr, topic: &str, want: i32) -> RemotingCommand {
    for _ in 0..100 {
        let r = route(ns, topic).await;
        if r.code == want {
            return r;
        }
        glommio::timer::sleep(Duration::from_millis(50)).await;
    }
    panic!("route of {topic} never answered code {want}");
}

#[test]
fn registers_topics_with_every_name_server_and_unregisters_at_shutdown() {
    let ns1 = start_namesrv_in_process();
    let ns2 = start_namesrv_in_process();
    let mut broker = Broker::start(&format!("namesrvAddr = \"{ns1};{ns2}\""));
    run_local(async {
        for ns in [ns1, ns2] {
            let r = wait_route(ns, "TBW102", response_code::SUCCESS).await;
            let data: TopicRouteData = protocol::body::from_json(&r.body).unwrap();
            // Each shard is a broker of its own; shard-broker 0 is on the configured port.
            let first = data
                .broker_datas
                .iter()
                .find(|b| b.broker_name == "broker-t-0")
                .expect("shard-broker 0 registered");
            assert_eq!(
                first.master_addr(),
                Some(broker.addr().to_string().as_str())
            );
            assert_eq!(data.queue_datas[0].write_queue_nums, 4);
        }
        // An auto-created topic is registered right away (not only at the next 30 s round).
        let client = connect(broker.addr()).await;
        assert_eq!(
            send(&client, "Routed", 0, b"x", "").await.code,
            response_code::SUCCESS
        );
        let r = wait_route(ns1, "Routed", response_code::SUCCESS).await;
        let data: TopicRouteData = protocol::body::from_json(&r.body).unwrap();
        assert_eq!(data.queue_datas[0].read_queue_nums, 4);
    });
    assert!(broker.stop().success());
    run_local(async {
        wait_route(ns1, "Routed", response_code::TOPIC_NOT_EXIST).await;
        wait_route(ns2, "TBW102", response_code::TOPIC_NOT_EXIST).await;
    });
}

//! The library runs in a caller's own glommio executor: `bind` + `serve` with a caller-made stop.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use common::*;
use namesrv::{NameServer, NamesrvConfig};
use protocol::response_code;

#[test]
fn serve_answers_in_process_and_stops_when_asked() {
    run_local(|| async {
        let listener = namesrv::bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let stop = Rc::new(Cell::new(false));
        let server_stop = stop.clone();
        let server = glommio::spawn_local(namesrv::serve(
            listener,
            Rc::new(NameServer::new(NamesrvConfig::default()).expect("name server")),
            async move {
                while !server_stop.get() {
                    glommio::timer::sleep(Duration::from_millis(10)).await;
                }
            },
        ));

        let client = connect(addr).await;
        let broker = BrokerIdentity {
            cluster: "C",
            name: "b",
            addr: "127.0.0.1:1",
            id: 0,
            ha_addr: "127.0.0.1:2",
        };
        let response = invoke(
            &client,
            register_request(&broker, topic_table(&[("T", 2)], 1)),
        )
        .await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let route = body_json(&invoke(&client, route_request("T")).await);
        assert_eq!(route["queueDatas"][0]["writeQueueNums"], 2);

        stop.set(true);
        let stopped = remoting::with_timeout(Duration::from_secs(2), async {
            server.await;
            Ok(())
        })
        .await;
        assert!(
            stopped.is_ok(),
            "serve returns once the stop future completes"
        );
        // Let the reactor finish cancelling the pending accept, which holds the socket open.
        glommio::timer::sleep(Duration::from_millis(100)).await;
        let refused = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500))
            .err()
            .map(|e| e.kind());
        assert_eq!(
            refused,
            Some(std::io::ErrorKind::ConnectionRefused),
            "the listener is closed after serve returns"
        );
    });
}

/// glommio keeps one waker clone per poll of a pending accept and panics once a task holds 32,767 of
/// them: a server whose stop future woke its task every 50 ms stopped accepting after 27 minutes.
/// Here the stop future wakes 40,000 times before the server must still answer.
#[test]
fn serve_keeps_accepting_while_its_stop_future_wakes_often() {
    run_local(|| async {
        let listener = namesrv::bind(SocketAddr::from(([127, 0, 0, 1], 0))).expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let stop = Rc::new(Cell::new(false));
        let wakes = Rc::new(Cell::new(0u32));
        let (server_stop, server_wakes) = (stop.clone(), wakes.clone());
        let server = glommio::spawn_local(namesrv::serve(
            listener,
            Rc::new(NameServer::new(NamesrvConfig::default()).expect("name server")),
            async move {
                while !server_stop.get() {
                    glommio::timer::sleep(Duration::from_micros(10)).await;
                    server_wakes.set(server_wakes.get() + 1);
                }
            },
        ));
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while wakes.get() < 40_000 {
            assert!(
                std::time::Instant::now() < deadline,
                "only {} wakes in 60 s",
                wakes.get()
            );
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        let answered = remoting::with_timeout(Duration::from_secs(5), async {
            let client = connect(addr).await;
            Ok(invoke(&client, route_request("T")).await)
        })
        .await;
        let response = answered.expect("the name server answers after 40,000 wakes");
        assert_eq!(response.code, response_code::TOPIC_NOT_EXIST);
        stop.set(true);
        server.await;
    });
}

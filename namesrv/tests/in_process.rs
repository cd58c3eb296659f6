//! The library runs in a caller's own glommio executor: `bind` + `serve` with a caller-made stop.

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
            Rc::new(NameServer::new(NamesrvConfig::default())),
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

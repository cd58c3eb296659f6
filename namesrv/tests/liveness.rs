//! Broker liveness against the real binary: connection close, silence expiry, garbage input, SIGTERM.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use protocol::{request_code, response_code, RemotingCommand};

fn broker(name: &'static str, addr: &'static str) -> BrokerIdentity<'static> {
    BrokerIdentity {
        cluster: "DefaultCluster",
        name,
        addr,
        id: 0,
        ha_addr: "127.0.0.1:10912",
    }
}

#[test]
fn closing_the_registration_connection_removes_the_broker() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let mut raw = RawConnection::connect(addr);
        let response = raw.invoke(register_request(
            &broker("broker-a", "127.0.0.1:10911"),
            topic_table(&[("T", 4)], 1),
        ));
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "{:?}",
            response.remark
        );
        let response = invoke(
            &client,
            register_request(
                &broker("broker-b", "127.0.0.2:10911"),
                topic_table(&[("T", 4)], 1),
            ),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        assert_eq!(
            body_json(&invoke(&client, route_request("T")).await)["queueDatas"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );

        drop(raw);
        let gone = eventually(TIMEOUT, || {
            let client = client.clone();
            async move { registered_broker_names(&client).await == vec!["broker-b".to_owned()] }
        })
        .await;
        assert!(
            gone,
            "broker-a should be removed when its connection closes"
        );
        let route = body_json(&invoke(&client, route_request("T")).await);
        assert_eq!(route["queueDatas"].as_array().map(Vec::len), Some(1));
        assert_eq!(route["queueDatas"][0]["brokerName"], "broker-b");
    });
}

#[test]
fn silent_brokers_expire_and_data_version_queries_keep_a_broker_alive() {
    let server =
        NameServerProcess::start(&["--broker-expire-ms", "800", "--scan-interval-ms", "50"]);
    let addr = server.addr;
    run_local(move || async move {
        let silent = connect(addr).await;
        let chatty = connect(addr).await;
        let response = invoke(
            &silent,
            register_request(
                &broker("broker-silent", "127.0.0.1:10911"),
                topic_table(&[("S", 1)], 1),
            ),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        let response = invoke(
            &chatty,
            register_request(
                &broker("broker-chatty", "127.0.0.2:10911"),
                topic_table(&[("C", 1)], 7),
            ),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);
        let mut names = registered_broker_names(&chatty).await;
        names.sort();
        assert_eq!(
            names,
            vec!["broker-chatty".to_owned(), "broker-silent".to_owned()]
        );

        // 1.6 s of the chatty broker asking about an unchanged data version every 100 ms.
        for _ in 0..16 {
            glommio::timer::sleep(Duration::from_millis(100)).await;
            let query = RemotingCommand::request(request_code::QUERY_DATA_VERSION)
                .with_ext("brokerName", "broker-chatty")
                .with_ext("brokerAddr", "127.0.0.2:10911")
                .with_ext("clusterName", "DefaultCluster")
                .with_ext("brokerId", "0")
                .with_body(protocol::body::to_json(&topic_table(&[], 7).data_version));
            let response = invoke(&chatty, query).await;
            assert_eq!(response.ext("changed"), Some("false"));
        }
        assert_eq!(
            registered_broker_names(&chatty).await,
            vec!["broker-chatty".to_owned()]
        );
        assert_eq!(
            invoke(&chatty, route_request("S")).await.code,
            response_code::TOPIC_NOT_EXIST
        );
        assert_eq!(
            invoke(&chatty, route_request("C")).await.code,
            response_code::SUCCESS
        );
        // Expiry removed it (its connection stayed open until then), and the name server then
        // closed the expired broker's channel, as RocketMQ's does.
        assert!(
            silent.is_closed(),
            "the expired broker's connection should be closed"
        );
    });
}

#[test]
fn an_expired_broker_does_not_take_a_live_one_on_its_connection_with_it() {
    // The shard-brokers of one process register on one connection: one of them going silent must
    // not drop the others, which keep registering on it.
    let server =
        NameServerProcess::start(&["--broker-expire-ms", "800", "--scan-interval-ms", "50"]);
    let addr = server.addr;
    run_local(move || async move {
        let shared = connect(addr).await;
        let observer = connect(addr).await;
        for (name, broker_addr, topic) in [
            ("broker-silent", "127.0.0.1:10911", "S"),
            ("broker-live", "127.0.0.1:10915", "L"),
        ] {
            let response = invoke(
                &shared,
                register_request(&broker(name, broker_addr), topic_table(&[(topic, 1)], 1)),
            )
            .await;
            assert_eq!(response.code, response_code::SUCCESS);
        }
        // 1.6 s of broker-live re-registering every 100 ms on the shared connection.
        for i in 0..16 {
            glommio::timer::sleep(Duration::from_millis(100)).await;
            let response = shared
                .invoke(
                    register_request(
                        &broker("broker-live", "127.0.0.1:10915"),
                        topic_table(&[("L", 1)], 1),
                    ),
                    TIMEOUT,
                )
                .await;
            assert!(
                matches!(&response, Ok(r) if r.code == response_code::SUCCESS),
                "re-registration {i} of the live broker on the shared connection: {response:?}"
            );
        }
        assert_eq!(
            registered_broker_names(&observer).await,
            vec!["broker-live".to_owned()],
            "the silent broker expires, the live one stays"
        );
        assert_eq!(
            invoke(&observer, route_request("L")).await.code,
            response_code::SUCCESS
        );
        assert!(
            !shared.is_closed(),
            "the live broker's connection was closed"
        );
    });
}

#[test]
fn a_late_registration_on_a_replaced_connection_does_not_drop_the_broker_at_its_close() {
    // A broker's registration timed out on its first connection; it registered again on a second
    // one, then closed the first. The first one's registration, held up by retransmissions, arrives
    // only now, just before that close.
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let observer = connect(addr).await;
        let mut old = RawConnection::connect(addr);
        let new = connect(addr).await;
        let register = || {
            register_request(
                &broker("broker-a", "127.0.0.1:10911"),
                topic_table(&[("T", 4)], 1),
            )
        };
        assert_eq!(invoke(&new, register()).await.code, response_code::SUCCESS);
        assert_eq!(old.invoke(register()).code, response_code::SUCCESS);
        drop(old);
        glommio::timer::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            registered_broker_names(&observer).await,
            vec!["broker-a".to_owned()],
            "the broker was dropped with the connection it had replaced"
        );
        // Its current connection still counts: closing that one removes it.
        drop(new);
        let gone = eventually(TIMEOUT, || {
            let observer = observer.clone();
            async move { registered_broker_names(&observer).await.is_empty() }
        })
        .await;
        assert!(
            gone,
            "closing the broker's current connection should remove it"
        );
    });
}

#[test]
fn garbage_bytes_close_only_that_connection() {
    let server = NameServerProcess::start(&[]);
    let addr = server.addr;
    run_local(move || async move {
        let client = connect(addr).await;
        let response = invoke(
            &client,
            register_request(
                &broker("broker-a", "127.0.0.1:10911"),
                topic_table(&[("T", 4)], 1),
            ),
        )
        .await;
        assert_eq!(response.code, response_code::SUCCESS);

        // A negative frame length, then an unparsable JSON header in a well-formed frame.
        let garbage: [&[u8]; 2] = [
            b"\xff\xff\xff\xffGET / HTTP/1.1\r\n\r\n",
            b"\x00\x00\x00\x0d\x00\x00\x00\x09not json!",
        ];
        for bytes in garbage {
            let mut raw = RawConnection::connect(addr);
            raw.stream.write_all(bytes).expect("write garbage");
            assert!(
                raw.receive().is_none(),
                "the server closes a connection sending {bytes:?}"
            );
        }

        assert!(!client.is_closed());
        let response = invoke(&client, route_request("T")).await;
        assert_eq!(
            response.code,
            response_code::SUCCESS,
            "other connections keep being served"
        );
        assert_eq!(
            registered_broker_names(&client).await,
            vec!["broker-a".to_owned()]
        );
    });
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let mut server = NameServerProcess::start(&[]);
    let pid = libc::pid_t::try_from(server.child.id()).expect("pid");
    // SAFETY: signalling a child process this test started and still owns.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = server
        .wait_exit(Duration::from_secs(5))
        .expect("namesrv exits after SIGTERM");
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn a_second_name_server_on_a_taken_port_fails_to_start() {
    let first = NameServerProcess::start(&[]);
    let port = first.addr.to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_namesrv"))
        .args(["--listen", &port])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run a second namesrv");
    assert!(
        !output.status.success(),
        "second namesrv must not share port {port}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot listen on"), "stderr: {stderr}");
}

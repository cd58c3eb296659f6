//! `--enableControllerInNamesrv true`: the name server answers controller requests on its own port
//! (a one-controller raft group here) and keeps answering route requests; a missing controller
//! config stops the start with a message.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[path = "../../broker/tests/common/ports.rs"]
#[allow(dead_code)]
mod ports;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{NameServerProcess, RawConnection};
use protocol::{request_code, response_code, RemotingCommand};

fn ask(conn: &mut RawConnection, cmd: RemotingCommand) -> RemotingCommand {
    conn.send(&cmd);
    conn.receive().expect("an answer")
}

/// A name server with a one-controller raft group embedded, once that controller leads.
fn start_embedded(dir: &tempfile::TempDir) -> NameServerProcess {
    let port = ports::free_port();
    let conf = dir.path().join("controller.conf");
    std::fs::write(
        &conf,
        format!(
            "controllerDLegerGroup = ns-group\ncontrollerDLegerPeers = n0-127.0.0.1:{port}\ncontrollerDLegerSelfId = n0\ncontrollerStorePath = {}\n",
            dir.path().join("store").display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_namesrv"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--enableControllerInNamesrv", "true", "--controllerConfig"])
        .arg(&conf)
        .args(["--kvConfigPath"])
        .arg(dir.path().join("kv.json"))
        .args(["--configStorePath"])
        .arg(dir.path().join("namesrv.properties"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("namesrv listening on ")
        .unwrap()
        .parse()
        .unwrap();
    let ns = NameServerProcess { child, addr };
    let mut conn = RawConnection::connect(ns.addr);
    let start = Instant::now();
    let mut opaque = 1;
    loop {
        opaque += 1;
        let r = ask(
            &mut conn,
            RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO)
                .with_opaque(opaque),
        );
        assert_eq!(r.code, response_code::SUCCESS, "{r:?}");
        if r.ext("isLeader") == Some("true") {
            assert_eq!(r.ext("group"), Some("ns-group"));
            return ns;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "embedded controller never leads: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn request(code: i32, opaque: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code).with_opaque(opaque);
    for (k, v) in fields {
        r.set_ext(k, v);
    }
    r
}

#[test]
fn name_server_serves_an_embedded_controller() {
    let dir = tempfile::tempdir().unwrap();
    let ns = start_embedded(&dir);
    let mut conn = RawConnection::connect(ns.addr);
    let mut apply =
        RemotingCommand::request(request_code::CONTROLLER_APPLY_BROKER_ID).with_opaque(100);
    for (k, v) in [
        ("clusterName", "c"),
        ("brokerName", "broker-a"),
        ("appliedBrokerId", "1"),
        ("registerCheckCode", "127.0.0.1:1001;1"),
    ] {
        apply.set_ext(k, v);
    }
    let r = ask(&mut conn, apply);
    assert_eq!(r.code, response_code::SUCCESS, "{r:?}");
    let mut elect =
        RemotingCommand::request(request_code::CONTROLLER_ELECT_MASTER).with_opaque(101);
    for (k, v) in [
        ("clusterName", "c"),
        ("brokerName", "broker-a"),
        ("brokerId", "1"),
    ] {
        elect.set_ext(k, v);
    }
    let r = ask(&mut conn, elect);
    assert_eq!(
        (r.code, r.ext("masterEpoch")),
        (response_code::SUCCESS, Some("1")),
        "{r:?}"
    );
    // The name server itself still answers.
    let r = ask(
        &mut conn,
        RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO).with_opaque(102),
    );
    assert_eq!(r.code, response_code::SUCCESS, "{r:?}");
}

/// A master's heartbeat connection closing (its process killed) makes the embedded controller elect
/// at once, as a standalone one does; the heartbeat timeout is 30 s, so only the close explains it.
#[test]
fn a_closed_master_connection_elects_at_once_in_the_embedded_controller() {
    let dir = tempfile::tempdir().unwrap();
    let ns = start_embedded(&dir);
    let mut brokers: Vec<RawConnection> = Vec::new();
    for id in ["1", "2"] {
        let mut b = RawConnection::connect(ns.addr);
        let check = format!("127.0.0.1:100{id};{id}");
        let addr = format!("127.0.0.1:100{id}");
        let base = [("clusterName", "c"), ("brokerName", "broker-a")];
        let mut fields = base.to_vec();
        fields.extend([
            ("appliedBrokerId", id),
            ("registerCheckCode", check.as_str()),
        ]);
        let r = ask(
            &mut b,
            request(request_code::CONTROLLER_APPLY_BROKER_ID, 1, &fields),
        );
        assert_eq!(r.code, response_code::SUCCESS, "{r:?}");
        let mut fields = base.to_vec();
        fields.extend([
            ("brokerAddr", addr.as_str()),
            ("brokerId", id),
            ("epoch", "1"),
            ("maxOffset", "100"),
            ("heartbeatTimeoutMills", "30000"),
        ]);
        let r = ask(&mut b, request(request_code::BROKER_HEARTBEAT, 2, &fields));
        assert_eq!(r.code, response_code::SUCCESS, "{r:?}");
        brokers.push(b);
    }
    let elect = [
        ("clusterName", "c"),
        ("brokerName", "broker-a"),
        ("brokerId", "1"),
    ];
    let r = ask(
        &mut brokers[0],
        request(request_code::CONTROLLER_ELECT_MASTER, 3, &elect),
    );
    assert_eq!(r.ext("masterBrokerId"), Some("1"), "{r:?}");
    let mut alter = request(
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
        4,
        &[
            ("brokerName", "broker-a"),
            ("masterBrokerId", "1"),
            ("masterEpoch", "1"),
        ],
    );
    alter.set_body(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#);
    let r = ask(&mut brokers[0], alter);
    assert_eq!(r.code, response_code::SUCCESS, "{r:?}");

    let closed = Instant::now();
    drop(brokers.remove(0));
    let mut admin = RawConnection::connect(ns.addr);
    let mut opaque = 10;
    loop {
        opaque += 1;
        let info = request(
            request_code::CONTROLLER_GET_REPLICA_INFO,
            opaque,
            &[("brokerName", "broker-a")],
        );
        let r = ask(&mut admin, info);
        if r.ext("masterBrokerId") == Some("2") {
            break;
        }
        assert!(
            closed.elapsed() < Duration::from_secs(2),
            "no new master 2 s after the master's connection closed: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn embedding_without_a_controller_config_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_namesrv"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--enableControllerInNamesrv",
            "true",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs --controllerConfig"), "{err}");
}

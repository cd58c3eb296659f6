//! cleanBrokerMetadata (Apache's flags, `-bn` included) against a real controller process holding
//! a broker group of two replicas, one of them heartbeating: cleaning while a replica lives is
//! refused, cleaning the silent replica by id removes only it, `-l` removes the whole group. The
//! controller's next broker id shows what is left.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{run_with_timeout, MQADMIN};
use controller::raft::peer_client::PeerClient;
use protocol::{request_code, RemotingCommand};

struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mqadmin(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(MQADMIN);
    cmd.args(args);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn req(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_ext(k, v);
    }
    r
}

fn heartbeat_on(
    rt: &tokio::runtime::Runtime,
    client: &mut PeerClient,
    r: RemotingCommand,
) -> RemotingCommand {
    rt.block_on(client.call(r, Duration::from_secs(5))).unwrap()
}

fn call(rt: &tokio::runtime::Runtime, addr: &str, r: RemotingCommand) -> RemotingCommand {
    rt.block_on(PeerClient::new(addr.to_owned()).call(r, Duration::from_secs(5)))
        .unwrap()
}

/// The id the controller would give broker-a's next replica (1 when it knows no replica).
fn next_id(rt: &tokio::runtime::Runtime, addr: &str) -> String {
    let r = call(
        rt,
        addr,
        req(
            request_code::CONTROLLER_GET_NEXT_BROKER_ID,
            &[
                ("clusterName", "c".into()),
                ("brokerName", "broker-a".into()),
            ],
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    r.ext("nextBrokerId").unwrap().to_owned()
}

#[test]
fn clean_broker_metadata_on_a_controller() {
    let exe = std::env::current_exe().unwrap();
    let controller_bin = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("controller");
    assert!(
        controller_bin.is_file(),
        "{} is missing: build it first (`cargo build -p controller`)",
        controller_bin.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("controller.conf");
    std::fs::write(
        &conf,
        format!(
            "controllerDLegerGroup = g1\ncontrollerDLegerPeers = n0-{addr}\ncontrollerDLegerSelfId = n0\ncontrollerStorePath = {}\n",
            dir.path().join("store").display()
        ),
    )
    .unwrap();
    let _controller = Controller(
        Command::new(controller_bin)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    loop {
        let (ok, out, _) = mqadmin(&["getControllerMetaData", "-a", &addr, "--json"]);
        if ok && out.contains("\"isLeader\": true") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "controller not leading"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for id in 1..=2u64 {
        let r = call(
            &rt,
            &addr,
            req(
                request_code::CONTROLLER_APPLY_BROKER_ID,
                &[
                    ("clusterName", "c".into()),
                    ("brokerName", "broker-a".into()),
                    ("appliedBrokerId", id.to_string()),
                    ("registerCheckCode", format!("127.0.0.1:{};{id}", 1000 + id)),
                ],
            ),
        );
        assert_eq!(r.code, 0, "{r:?}");
    }
    // Replica 1 lives (a heartbeat good for a minute, on a connection kept open: the controller, as
    // Apache's, takes a broker whose heartbeat connection closed for gone); replica 2 is silent.
    let mut replica_1 = PeerClient::new(addr.clone());
    let r = heartbeat_on(
        &rt,
        &mut replica_1,
        req(
            request_code::BROKER_HEARTBEAT,
            &[
                ("clusterName", "c".into()),
                ("brokerName", "broker-a".into()),
                ("brokerAddr", "127.0.0.1:1001".into()),
                ("brokerId", "1".into()),
                ("heartbeatTimeoutMills", "60000".into()),
            ],
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(next_id(&rt, &addr), "3");

    // The whole group while replica 1 lives: refused, nothing removed.
    let (ok, out, err) = mqadmin(&[
        "cleanBrokerMetadata",
        "-a",
        &addr,
        "-bn",
        "broker-a",
        "-c",
        "c",
    ]);
    assert!(!ok && err.contains("still alive"), "{out}\n{err}");
    assert_eq!(next_id(&rt, &addr), "3");

    // The silent replica 2 alone.
    let (ok, out, err) = mqadmin(&[
        "cleanBrokerMetadata",
        "-a",
        &addr,
        "-bn",
        "broker-a",
        "-c",
        "c",
        "-b",
        "2",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim_end(),
        "clear broker broker-a metadata from controller success!"
    );
    assert_eq!(next_id(&rt, &addr), "2");

    // -l: the living one too, so the group is gone.
    let (ok, _, err) = mqadmin(&["cleanBrokerMetadata", "-a", &addr, "--bn", "broker-a", "-l"]);
    assert!(ok, "{err}");
    assert_eq!(next_id(&rt, &addr), "1");
}

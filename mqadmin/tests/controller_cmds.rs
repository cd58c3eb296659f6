//! getControllerMetaData, getSyncStateSet, electMaster, getControllerConfig and
//! updateControllerConfig against a real controller process (a one-controller raft group) that
//! holds a broker group of two heartbeating replicas.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

fn mqadmin_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (ok, out, err) = mqadmin(&all);
    assert!(ok, "mqadmin {args:?} failed: {err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("mqadmin {args:?}: not JSON ({e}): {out}"))
}

fn req(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_ext(k, v);
    }
    r
}

fn call(rt: &tokio::runtime::Runtime, addr: &str, r: RemotingCommand) -> RemotingCommand {
    rt.block_on(PeerClient::new(addr.to_owned()).call(r, Duration::from_secs(5)))
        .unwrap()
}

#[test]
fn controller_commands() {
    // target/<profile>/controller, next to this test executable's deps/.
    let exe = std::env::current_exe().unwrap();
    let controller_bin = exe
        .parent()
        .and_then(|d| d.parent())
        .unwrap()
        .join("controller");
    assert!(
        controller_bin.is_file(),
        "{} is missing: build it first (`cargo build -p controller`; `cargo test --workspace` does)",
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
    // Wait until it leads its one-member group.
    let start = Instant::now();
    let meta = loop {
        let (ok, out, _) = mqadmin(&["getControllerMetaData", "-a", &addr, "--json"]);
        if ok {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            if v["isLeader"] == true {
                break v;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "controller not leading"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(meta["group"], "g1");
    assert_eq!(meta["controllerLeaderAddress"], addr.as_str());
    let (ok, text, _) = mqadmin(&["getControllerMetaData", "-a", &addr]);
    assert!(
        ok && text.contains("#ControllerLeaderAddress") && text.contains(&format!("n0-{addr}")),
        "{text}"
    );

    // Two replicas of broker-a heartbeat; 1 becomes master, then the SyncStateSet is {1, 2}.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let beating = Arc::new(AtomicBool::new(true));
    let beat_addr = addr.clone();
    let beat_flag = beating.clone();
    let beats = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // One connection per replica, kept open: the controller, as Apache's, takes a broker whose
        // heartbeat connection closed for gone.
        let mut clients: Vec<PeerClient> =
            (0..2).map(|_| PeerClient::new(beat_addr.clone())).collect();
        while beat_flag.load(Ordering::SeqCst) {
            for (id, client) in (1..=2u64).zip(clients.iter_mut()) {
                let r = req(
                    request_code::BROKER_HEARTBEAT,
                    &[
                        ("clusterName", "c".into()),
                        ("brokerName", "broker-a".into()),
                        ("brokerAddr", format!("127.0.0.1:{}", 1000 + id)),
                        ("brokerId", id.to_string()),
                        ("heartbeatTimeoutMills", "10000".into()),
                    ],
                );
                let _ = rt.block_on(client.call(r, Duration::from_secs(2)));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
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
    let r = call(
        &rt,
        &addr,
        req(
            request_code::CONTROLLER_ELECT_MASTER,
            &[
                ("clusterName", "c".into()),
                ("brokerName", "broker-a".into()),
                ("brokerId", "1".into()),
            ],
        ),
    );
    assert_eq!(r.code, 0, "{r:?}");
    std::thread::sleep(Duration::from_millis(500));
    let mut alter = req(
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
        &[
            ("brokerName", "broker-a".into()),
            ("masterBrokerId", "1".into()),
            ("masterEpoch", "1".into()),
        ],
    );
    alter.set_body(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#);
    let r = call(&rt, &addr, alter);
    assert_eq!(r.code, 0, "{r:?}");

    let v = mqadmin_json(&["getSyncStateSet", "-a", &addr, "-b", "broker-a"]);
    let group = &v["replicasInfoTable"]["broker-a"];
    assert_eq!(
        (
            group["masterBrokerId"].as_u64(),
            group["masterEpoch"].as_i64()
        ),
        (Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(group["inSyncReplicas"].as_array().unwrap().len(), 2, "{v}");
    let (ok, text, _) = mqadmin(&["getSyncStateSet", "-a", &addr, "-b", "broker-a"]);
    assert!(
        ok && text.contains("#SyncStateSetNums\t2") && text.contains("alive=true"),
        "{text}"
    );

    // electMaster moves the master to 2 and bumps the epoch; an unknown replica is refused.
    let elect = |id: &'static str| {
        [
            "electMaster",
            "-a",
            addr.as_str(),
            "-c",
            "c",
            "-b",
            "broker-a",
            "-i",
            id,
        ]
    };
    let v = mqadmin_json(&elect("2"));
    assert_eq!(
        (v["masterBrokerId"].as_str(), v["masterEpoch"].as_str()),
        (Some("2"), Some("2")),
        "{v}"
    );
    let v = mqadmin_json(&["getSyncStateSet", "-a", &addr, "-b", "broker-a"]);
    assert_eq!(
        v["replicasInfoTable"]["broker-a"]["masterBrokerId"], 2,
        "{v}"
    );
    let (ok, _, err) = mqadmin(&elect("7"));
    assert!(
        !ok && err.contains("CONTROLLER_ELECT_MASTER_FAILED"),
        "{err}"
    );

    // Config: read, change, read back; unknown keys are refused.
    let v = mqadmin_json(&["getControllerConfig", "-a", &addr]);
    assert_eq!(v[addr.as_str()]["enableElectUncleanMaster"], "false", "{v}");
    let (ok, _, err) = mqadmin(&[
        "updateControllerConfig",
        "-a",
        &addr,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ]);
    assert!(ok, "{err}");
    let v = mqadmin_json(&["getControllerConfig", "-a", &addr]);
    assert_eq!(v[addr.as_str()]["enableElectUncleanMaster"], "true", "{v}");
    let (ok, _, err) = mqadmin(&[
        "updateControllerConfig",
        "-a",
        &addr,
        "-k",
        "noSuchKey",
        "-v",
        "1",
    ]);
    assert!(!ok && err.contains("unknown controller setting"), "{err}");

    beating.store(false, Ordering::SeqCst);
    beats.join().unwrap();
}

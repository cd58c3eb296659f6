//! The broker starts from a RocketMQ `broker.properties` file as it is, reports keys it does not use,
//! and answers in the serialize type of each request (JSON or ROCKETMQ binary headers).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use protocol::{response_code, SerializeType};

#[test]
fn properties_file_with_unknown_keys_starts_and_reports_them() {
    let mut broker = Broker::builder()
        .config_file("broker-a.properties", |port, dir| {
            format!(
                "# a broker-a.properties from an existing cluster\nbrokerClusterName=DefaultCluster\nbrokerName=broker-a\n\
                 brokerId=0\ndeleteWhen=04\nfileReservedTime=48\nbrokerRole=ASYNC_MASTER\nflushDiskType=ASYNC_FLUSH\n\
                 listenPort={port}\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nstorePathCommitLog={}/commitlog\n\
                 mapedFileSizeCommitLog=4194304\nmaxMessageSize=1048576\nshardCount=2\nnoSuchKey=1\n\
                 serverWorkerThreads=8\nauthenticationEnabled=false\n",
                dir.join("store").display(),
                dir.join("store").display()
            )
        })
        .start();
    let log = broker.log();
    assert!(log.contains("unknown config key `noSuchKey`"), "{log}");
    // An Apache key this broker does not use is told apart from a typo, with its reason.
    assert!(
        log.contains(
            "config key `serverWorkerThreads` is accepted but not used: Netty/epoll tuning"
        ),
        "{log}"
    );
    assert!(!log.contains("`authenticationEnabled`"), "{log}");
    assert!(log.contains("storePathCommitLog"), "{log}");
    run_local(async {
        let client = connect(broker.addr()).await;
        // A request with a ROCKETMQ binary header is answered in kind.
        let req =
            send_request("Binary", 0, b"bin", "").with_serialize_type(SerializeType::RocketMq);
        let r = client.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, response_code::SUCCESS, "{:?}", r.remark);
        assert_eq!(r.serialize_type, SerializeType::RocketMq);
        assert!(r.ext("msgId").is_some());
        let p = client
            .invoke(
                pull_request("g", "Binary", 0, 0, 0, None)
                    .with_serialize_type(SerializeType::RocketMq),
                TIMEOUT,
            )
            .await
            .unwrap();
        assert_eq!(p.serialize_type, SerializeType::RocketMq);
        assert_eq!(&decode_records(&p.body)[0].body[..], b"bin");
    });
    assert!(broker.stop().success());
}

/// Starts the binary on `config` (a properties text) and answers its exit status and stderr; a
/// broker that is still running after 20 s is killed and fails the test.
fn start_refused(config: &str) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broker.properties");
    std::fs::write(&file, config).unwrap();
    let mut child = std::process::Command::new(broker_bin())
        .arg("--config")
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let Some(status) = wait_exit(&mut child, std::time::Duration::from_secs(20)) else {
        let _ = child.kill();
        panic!("the broker started with {config}");
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

#[test]
fn store_paths_apart_from_the_root_and_dledger_are_refused_at_start() {
    let (status, err) = start_refused(
        "brokerIP1=127.0.0.1\nlistenPort=1\nstorePathRootDir=/tmp/nowhere-store\n\
         storePathCommitLog=/fast-disk/commitlog\n",
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("storePathCommitLog"), "{err}");
    assert!(
        err.contains("/tmp/nowhere-store/shard-<N>/commitlog"),
        "{err}"
    );
    let (status, err) = start_refused(
        "brokerIP1=127.0.0.1\nlistenPort=1\nstorePathRootDir=/tmp/nowhere-store\n\
         enableDLegerCommitLog=true\n",
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("master/slave"), "{err}");
}

/// ACL 2.0 in a 5.3 broker.conf is enforced (broker/tests/auth_enforcement.rs); what this broker
/// cannot do with it, a provider class of the user's own, stops the start naming the key.
#[test]
fn acl_2_with_a_provider_this_broker_lacks_is_refused_at_start() {
    let (status, err) = start_refused(
        "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=ASYNC_MASTER\n\
         brokerIP1=127.0.0.1\nlistenPort=1\nstorePathRootDir=/tmp/nowhere-store\n\
         authenticationEnabled=true\nauthenticationProvider=com.example.auth.LdapAuthenticationProvider\n\
         initAuthenticationUser={\"username\":\"rocketmq\",\"password\":\"12345678\"}\n",
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("authenticationProvider"), "{err}");
    assert!(err.contains("DefaultAuthenticationProvider"), "{err}");
}

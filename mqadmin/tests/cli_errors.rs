//! mqadmin fails cleanly (exit status 1, one `mqadmin:` line on stderr, no panic) when the name
//! server is unreachable or an argument is bad, and clap rejects missing required flags.

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use common::{run_with_timeout, MQADMIN};

fn mqadmin(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(MQADMIN);
    cmd.args(args).env_remove("NAMESRV_ADDR");
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn failures_are_reported_not_panicked() {
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ns = format!("127.0.0.1:{port}");
    for args in [
        vec!["topicList", "-n", &ns],
        vec!["topicRoute", "-n", &ns, "-t", "T"],
        vec!["clusterList", "-n", &ns, "--timeout-ms", "2000"],
    ] {
        let (code, err) = mqadmin(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("mqadmin: ") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    let (code, err) = mqadmin(&["updateTopic", "-n", &ns, "-b", &ns, "-t", "bad topic!"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("topic name"), "{err}");
    let (code, err) = mqadmin(&[
        "resetOffsetByTime",
        "-n",
        &ns,
        "-g",
        "G",
        "-t",
        "T",
        "-s",
        "yesterday",
    ]);
    assert_eq!(code, Some(1));
    assert!(err.contains("timestamp"), "{err}");
    let (code, err) = mqadmin(&["queryMsgById", "-n", &ns, "-i", "not-an-id"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("not-an-id"), "{err}");
    // Required flags: clap's usage error (exit 2).
    let (code, err) = mqadmin(&["updateTopic", "-n", &ns, "-t", "T"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _) = mqadmin(&["topicRoute"]);
    assert_eq!(code, Some(2));
    // Apache's required flags and pairings on the newer commands.
    for args in [
        vec!["wipeWritePerm", "-n", &ns],
        vec![
            "updateBrokerConfig",
            "-n",
            &ns,
            "-b",
            &ns,
            "-k",
            "brokerPermission",
        ],
        vec!["getBrokerConfig", "-n", &ns],
        vec!["sendMessage", "-n", &ns, "-t", "T", "-p", "x", "-i", "0"],
        vec!["consumeMessage", "-n", &ns, "-t", "T", "-i", "0"],
        vec![
            "resetOffsetByTime",
            "-n",
            &ns,
            "-g",
            "G",
            "-t",
            "T",
            "-s",
            "now",
            "-q",
            "0",
        ],
        vec!["cloneGroupOffset", "-n", &ns, "-s", "A", "-d", "B"],
        vec!["updateKvConfig", "-n", &ns, "-s", "NS", "-k", "k"],
    ] {
        let (code, err) = mqadmin(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
    let (code, err) = mqadmin(&["wipeWritePerm", "-n", &ns, "-b", "broker-a"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("mqadmin: "), "{err}");
}

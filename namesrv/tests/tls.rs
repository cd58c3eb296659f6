//! TLS on the name server's port, with the real binary and its `-c` file: permissive (the default)
//! serves TLS and plaintext clients, enforcing closes plaintext ones, bad TLS settings stop the
//! start with the key named.

// Test code: a broken expectation panics, also in the harness's helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{run_local, NameServerProcess, TIMEOUT};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::tls::{client_config, TlsSettings};
use remoting::Client;

/// Asks for the cluster info over TLS (`tls`) or plaintext; `Err` when the connection is refused.
async fn ask(addr: std::net::SocketAddr, tls: bool) -> Result<i32, String> {
    let config = tls.then(|| client_config(&TlsSettings::default()).expect("client config"));
    let client = Client::connect_tls(addr, TIMEOUT, None, config)
        .await
        .map_err(|e| e.to_string())?;
    let req = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
    client
        .invoke(req, Duration::from_secs(3))
        .await
        .map(|r| r.code)
        .map_err(|e| e.to_string())
}

fn start_with(dir: &tempfile::TempDir, lines: &str) -> NameServerProcess {
    let path = dir.path().join("namesrv.properties");
    std::fs::write(
        &path,
        format!(
            "kvConfigPath={}\nconfigStorePath={}\n{lines}",
            dir.path().join("kv.json").display(),
            dir.path().join("ns.properties").display()
        ),
    )
    .expect("write config");
    NameServerProcess::start(&["-c", path.to_str().expect("path")])
}

#[test]
fn permissive_by_default_serves_tls_and_plaintext() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ns = start_with(&dir, "");
    let addr = ns.addr;
    run_local(move || async move {
        assert_eq!(ask(addr, true).await, Ok(response_code::SUCCESS));
        assert_eq!(ask(addr, false).await, Ok(response_code::SUCCESS));
    });
}

#[test]
fn enforcing_closes_plaintext_connections() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ns = start_with(&dir, "tls.server.mode=enforcing\n");
    let addr = ns.addr;
    run_local(move || async move {
        assert_eq!(ask(addr, true).await, Ok(response_code::SUCCESS));
        let plain = ask(addr, false).await;
        assert!(plain.is_err(), "{plain:?}");
        // Still serving TLS after refusing one.
        assert_eq!(ask(addr, true).await, Ok(response_code::SUCCESS));
    });
}

#[test]
fn bad_tls_settings_stop_the_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (lines, expected) in [
        ("tls.test.mode.enable=false\n", "tls.server.certPath"),
        ("tls.server.mod=enforcing\n", "tls.server.mod"),
        ("tls.enable=true\n", "tls.enable"),
        ("tls.server.keyPassword=secret\n", "encrypted"),
    ] {
        let path = dir.path().join("bad.properties");
        std::fs::write(&path, lines).expect("write config");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_namesrv"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "-c",
                path.to_str().expect("path"),
            ])
            .output()
            .expect("run namesrv");
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{lines}: started\n{text}");
        assert!(text.contains(expected), "{lines}: {text}");
    }
}

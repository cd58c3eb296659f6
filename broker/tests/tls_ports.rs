//! TLS on the broker's remoting ports, with the real binary: permissive (the default) serves TLS and
//! plaintext clients on listenPort and the fast port, enforcing closes plaintext ones, mutual TLS
//! with `require` refuses a TLS client without a certificate, a broker with `tls.enable` registers
//! with a name server that takes TLS only, and bad TLS settings stop the start.
//!
//! Every client of this test binary that does not choose (the harness's readiness check included)
//! connects with TLS and presents a client certificate, set once as the process default.

// Test code: a broken expectation panics, also in the harness's helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::{run_local, start_namesrv_in_process_with, Broker, TIMEOUT};
use protocol::{request_code, response_code, RemotingCommand};
use remoting::tls::{client_config, ClientConfig, ServerMode, TlsSettings};
use remoting::Client;

/// A self-signed client certificate made with openssl, kept for the whole test binary.
fn client_cert() -> &'static (tempfile::TempDir, String, String) {
    static CERT: OnceLock<(tempfile::TempDir, String, String)> = OnceLock::new();
    CERT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let cert = dir.path().join("client.pem");
        let key = dir.path().join("client.key");
        let status = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args(["-subj", "/CN=test-client", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl made no certificate");
        let (cert, key) = (cert.display().to_string(), key.display().to_string());
        (dir, cert, key)
    })
}

fn tls_client(with_cert: bool) -> Arc<ClientConfig> {
    let mut s = TlsSettings::default();
    if with_cert {
        let (_, cert, key) = client_cert();
        s.set("tls.client.certPath", cert);
        s.set("tls.client.keyPath", key);
    }
    client_config(&s).expect("client config")
}

/// TLS with a client certificate for every client that does not choose.
fn tls_by_default() {
    remoting::tls::set_default_client(Some(tls_client(true)));
}

/// GET_ALL_TOPIC_CONFIG's answer code; `Err` when the connection is refused or closed.
async fn ask(addr: SocketAddr, tls: Option<Arc<ClientConfig>>) -> Result<i32, String> {
    let client = Client::connect_tls(addr, TIMEOUT, None, tls)
        .await
        .map_err(|e| e.to_string())?;
    let req = RemotingCommand::request(request_code::GET_ALL_TOPIC_CONFIG);
    client
        .invoke(req, Duration::from_secs(3))
        .await
        .map(|r| r.code)
        .map_err(|e| e.to_string())
}

#[test]
fn permissive_by_default_serves_tls_and_plaintext_on_both_ports() {
    tls_by_default();
    let broker = Broker::start("");
    let ports = [broker.addr(), broker.fast_addr()];
    run_local(async move {
        for addr in ports {
            assert_eq!(
                ask(addr, Some(tls_client(false))).await,
                Ok(response_code::SUCCESS)
            );
            assert_eq!(ask(addr, None).await, Ok(response_code::SUCCESS));
        }
    });
    assert!(broker.log().contains("tls.server.mode = permissive"));
}

#[test]
fn enforcing_closes_plaintext_on_both_ports() {
    tls_by_default();
    let broker = Broker::start("\"tls.server.mode\" = \"enforcing\"");
    let ports = [broker.addr(), broker.fast_addr()];
    run_local(async move {
        for addr in ports {
            assert_eq!(
                ask(addr, Some(tls_client(false))).await,
                Ok(response_code::SUCCESS)
            );
            let plain = ask(addr, None).await;
            assert!(plain.is_err(), "{addr}: {plain:?}");
        }
    });
}

#[test]
fn mutual_tls_require_refuses_a_client_without_a_certificate() {
    tls_by_default();
    let broker = Broker::start(
        "\"tls.server.mode\" = \"enforcing\"\n\"tls.server.need.client.auth\" = \"require\"",
    );
    let addr = broker.addr();
    run_local(async move {
        assert_eq!(
            ask(addr, Some(tls_client(true))).await,
            Ok(response_code::SUCCESS)
        );
        let without = ask(addr, Some(tls_client(false))).await;
        assert!(without.is_err(), "{without:?}");
        assert!(ask(addr, None).await.is_err());
    });
}

#[test]
fn a_broker_with_tls_enable_registers_with_a_tls_only_name_server() {
    tls_by_default();
    let ns_addr = SocketAddr::from(([127, 0, 0, 1], common::free_port()));
    let mut cfg = common::namesrv_config(ns_addr);
    cfg.tls.server_mode = ServerMode::Enforcing;
    start_namesrv_in_process_with(cfg);
    let broker = Broker::start(&format!(
        "namesrvAddr = \"{ns_addr}\"\n\"tls.enable\" = true"
    ));
    let registered = run_local(async move {
        // The name server refuses plaintext.
        let plain = Client::connect_tls(ns_addr, TIMEOUT, None, None).await;
        if let Ok(c) = plain {
            let req = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
            assert!(c.invoke(req, Duration::from_secs(3)).await.is_err());
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            let client = Client::connect_tls(ns_addr, TIMEOUT, None, Some(tls_client(false)))
                .await
                .expect("TLS to the name server");
            let req = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
            let resp = client.invoke(req, TIMEOUT).await.expect("cluster info");
            if String::from_utf8_lossy(&resp.body).contains("broker-t") {
                return true;
            }
            glommio::timer::sleep(Duration::from_millis(200)).await;
        }
        false
    });
    assert!(registered, "not registered:\n{}", broker.log());
}

#[test]
fn bad_tls_settings_stop_the_start_with_the_key_named() {
    for (extra, expected) in [
        (
            "\"tls.test.mode.enable\" = false",
            "tls.server.certPath and tls.server.keyPath",
        ),
        ("\"tls.server.mod\" = \"enforcing\"", "tls.server.mod"),
        ("\"tls.server.keyPassword\" = \"secret\"", "encrypted"),
        (
            "\"tls.server.certPath\" = \"/nonexistent/cert.pem\"\n\"tls.server.keyPath\" = \"/nonexistent/key.pem\"",
            "/nonexistent/cert.pem",
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("broker.toml");
        let text = common::test_config(common::free_broker_port(), &dir.path().join("s"), extra);
        std::fs::write(&config, text).expect("write config");
        let run = std::process::Command::new(common::broker_bin())
            .arg("--config")
            .arg(&config)
            .output()
            .expect("run broker");
        let out = String::from_utf8_lossy(&run.stderr).to_string()
            + &String::from_utf8_lossy(&run.stdout);
        assert!(!run.status.success(), "{extra}: started\n{out}");
        assert!(out.contains(expected), "{extra}: {out}");
    }
}

//! TLS on a served port: permissive takes TLS and plaintext on one port, enforcing closes
//! plaintext, mutual TLS with `require` refuses a client without a certificate, a silent client is
//! let go, and big frames cross TLS whole in both directions (answers as a body in parts).

// Test code: a broken expectation panics, also in helpers outside #[test] functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::io::{Read, Write};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::LocalExecutorBuilder;
use protocol::RemotingCommand;
use remoting::tls::{client_config, ServerTls, TlsSettings};
use remoting::{
    accept_connections_tls, Client, ConnectionContext, ConnectionGate, ConnectionLimits, Handler,
};

const TIMEOUT: Duration = Duration::from_secs(5);

struct Echo;

impl Handler for Echo {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        _ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        Box::pin(async move {
            let mut resp = request.response_to(0, Some("echo".into()));
            // A big body goes back as parts (`body_tail`, as a pull's records): through TLS they
            // are joined into the frame, and must arrive whole.
            let mut body = request.body.clone();
            resp.body = body.split_to(body.len().min(100));
            while !body.is_empty() {
                resp.body_tail.push(body.split_to(body.len().min(5000)));
            }
            Some(resp)
        })
    }
}

fn settings(pairs: &[(&str, &str)]) -> TlsSettings {
    let mut s = TlsSettings::default();
    for (k, v) in pairs {
        s.set(k, v).unwrap().unwrap();
    }
    s
}

/// Serves Echo with `server` settings, runs `f` with the address, in one glommio executor.
fn with_server<F: Future<Output = ()> + 'static>(
    server: TlsSettings,
    idle: Option<Duration>,
    f: impl FnOnce(std::net::SocketAddr) -> F + Send + 'static,
) {
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let listener = remoting::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = listener.local_addr().unwrap();
            let tls = ServerTls::from_settings(&server).unwrap();
            let mut limits = ConnectionLimits::new(16);
            limits.idle_timeout = idle;
            let (stop_tx, stop_rx) = glommio::channels::local_channel::new_bounded::<()>(1);
            let served = glommio::spawn_local(accept_connections_tls(
                listener,
                Rc::new(Echo),
                limits,
                Rc::new(ConnectionGate::new(100)),
                tls,
                async move {
                    let _ = stop_rx.recv().await;
                },
            ));
            f(addr).await;
            let _ = stop_tx.try_send(());
            served.await;
        })
        .unwrap()
        .join()
        .unwrap();
}

async fn echo(
    addr: std::net::SocketAddr,
    tls: Option<Arc<remoting::tls::ClientConfig>>,
    body: usize,
) -> Result<usize, String> {
    let client = Client::connect_tls(addr, TIMEOUT, None, tls)
        .await
        .map_err(|e| e.to_string())?;
    let resp = client
        .invoke(
            RemotingCommand::request(7).with_body(vec![0x5a; body]),
            TIMEOUT,
        )
        .await
        .map_err(|e| e.to_string())?;
    assert!(resp.body.iter().all(|b| *b == 0x5a));
    Ok(resp.body.len())
}

fn test_client() -> Option<Arc<remoting::tls::ClientConfig>> {
    Some(client_config(&TlsSettings::default()).unwrap())
}

#[test]
fn permissive_serves_tls_and_plaintext_on_one_port() {
    with_server(TlsSettings::default(), None, |addr| async move {
        assert_eq!(echo(addr, test_client(), 10).await, Ok(10));
        assert_eq!(echo(addr, None, 10).await, Ok(10));
        // Frames bigger than a TLS record (16 KiB) and than the read chunk (64 KiB).
        assert_eq!(echo(addr, test_client(), 3 << 20).await, Ok(3 << 20));
    });
}

#[test]
fn enforcing_closes_plaintext_and_disabled_closes_tls() {
    let enforcing = settings(&[("tls.server.mode", "enforcing")]);
    with_server(enforcing, None, |addr| async move {
        assert_eq!(echo(addr, test_client(), 100).await, Ok(100));
        let plain = echo(addr, None, 100).await;
        assert!(plain.is_err(), "{plain:?}");
    });
    let disabled = settings(&[("tls.server.mode", "disabled")]);
    with_server(disabled, None, |addr| async move {
        assert_eq!(echo(addr, None, 100).await, Ok(100));
        assert!(echo(addr, test_client(), 100).await.is_err());
    });
}

#[test]
fn a_silent_client_is_let_go_and_the_server_keeps_serving() {
    with_server(
        TlsSettings::default(),
        Some(Duration::from_millis(500)),
        |addr| async move {
            let silent = std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0u8; 1];
                // EOF once the server gives up waiting for the first byte.
                s.read(&mut buf).unwrap_or(1)
            });
            // A half ClientHello, then nothing: the handshake times out (10 s); meanwhile others
            // are served.
            let half = std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.write_all(&[0x16, 3, 1, 0, 200, 1]).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
                let mut buf = [0u8; 1];
                s.read(&mut buf).unwrap_or(1)
            });
            glommio::timer::sleep(Duration::from_millis(100)).await;
            assert_eq!(echo(addr, test_client(), 10).await, Ok(10));
            while !silent.is_finished() || !half.is_finished() {
                glommio::timer::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(silent.join().unwrap(), 0);
            assert_eq!(half.join().unwrap(), 0);
        },
    );
}

#[test]
fn garbage_after_0x16_is_refused_without_harm() {
    with_server(TlsSettings::default(), None, |addr| async move {
        let junk = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(&[0x16; 64]).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 64];
            // An alert, then EOF (or a reset).
            let mut total = 0;
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                total += n;
            }
            total
        });
        while !junk.is_finished() {
            glommio::timer::sleep(Duration::from_millis(20)).await;
        }
        assert!(junk.join().unwrap() < 64);
        assert_eq!(echo(addr, test_client(), 10).await, Ok(10));
    });
}

#[test]
fn mutual_tls_require_refuses_a_client_without_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = write_ca_and_certs(dir.path());
    let p = |f: &str| dir.path().join(f).to_str().unwrap().to_owned();
    let server = settings(&[
        ("tls.server.mode", "enforcing"),
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", &p("server.pem")),
        ("tls.server.keyPath", &p("server.key")),
        ("tls.server.need.client.auth", "require"),
        ("tls.server.authClient", "true"),
        ("tls.server.trustCertPath", &ca),
    ]);
    let with_cert = client_config(&settings(&[
        ("tls.test.mode.enable", "false"),
        ("tls.client.authServer", "true"),
        ("tls.client.trustCertPath", &ca),
        ("tls.client.certPath", &p("client.pem")),
        ("tls.client.keyPath", &p("client.key")),
    ]))
    .unwrap();
    let without = client_config(&settings(&[
        ("tls.test.mode.enable", "false"),
        ("tls.client.authServer", "true"),
        ("tls.client.trustCertPath", &ca),
    ]))
    .unwrap();
    let self_signed_client = client_config(&settings(&[
        ("tls.client.certPath", &p("stranger.pem")),
        ("tls.client.keyPath", &p("stranger.key")),
    ]))
    .unwrap();
    with_server(server, None, move |addr| async move {
        assert_eq!(echo(addr, Some(with_cert), 10).await, Ok(10));
        // TLS 1.3: the client finishes first, so the refusal shows on the first request.
        assert!(echo(addr, Some(without), 10).await.is_err());
        assert!(echo(addr, Some(self_signed_client), 10).await.is_err());
        assert!(echo(addr, None, 10).await.is_err());
    });
}

#[test]
fn bad_settings_stop_the_start_with_the_key_named() {
    let no_cert = settings(&[("tls.test.mode.enable", "false")]);
    let err = ServerTls::from_settings(&no_cert).err().unwrap();
    assert!(err.contains("tls.server.certPath"), "{err}");
    let missing = settings(&[
        ("tls.server.certPath", "/nonexistent/c.pem"),
        ("tls.server.keyPath", "/nonexistent/k.pem"),
    ]);
    let err = ServerTls::from_settings(&missing).err().unwrap();
    assert!(err.contains("/nonexistent/c.pem"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("enc.key");
    std::fs::write(
        &key,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let cert = dir.path().join("c.pem");
    write_ca_and_certs(dir.path());
    std::fs::copy(dir.path().join("server.pem"), &cert).unwrap();
    let encrypted = settings(&[
        ("tls.server.certPath", cert.to_str().unwrap()),
        ("tls.server.keyPath", key.to_str().unwrap()),
    ]);
    let err = ServerTls::from_settings(&encrypted).err().unwrap();
    assert!(err.contains("encrypted"), "{err}");
    let no_trust = settings(&[
        ("tls.server.need.client.auth", "require"),
        ("tls.server.authClient", "true"),
    ]);
    let err = ServerTls::from_settings(&no_trust).err().unwrap();
    assert!(err.contains("tls.server.trustCertPath"), "{err}");
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and a stranger's
/// self-signed one, as PEM files in `dir`. Answers the CA file's path.
fn write_ca_and_certs(dir: &std::path::Path) -> String {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let write = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
    write("ca.pem", ca.pem());
    for (name, sans) in [
        (
            "server",
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
        ),
        ("client", vec!["client".to_owned()]),
    ] {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(sans)
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        write(&format!("{name}.pem"), cert.pem());
        write(&format!("{name}.key"), key.serialize_pem());
    }
    let stranger = rcgen::generate_simple_self_signed(vec!["stranger".to_owned()]).unwrap();
    write("stranger.pem", stranger.cert.pem());
    write("stranger.key", stranger.key_pair.serialize_pem());
    dir.join("ca.pem").to_str().unwrap().to_owned()
}

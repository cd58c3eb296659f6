//! TLS on the gRPC port, as Apache's proxy serves it: in `permissive` mode (its default) one port
//! takes TLS and plaintext, told apart by the first byte a client sends (a TLS handshake record
//! starts with 0x16, HTTP/2 in plaintext with "PRI"); the certificate is a self-signed one made at
//! start (`tlsTestModeEnable`, the default) or the operator's PEM files. The RocketMQ 5 Java SDK
//! connects with TLS by default and trusts any certificate; the Python and Node.js SDKs connect in
//! plaintext unless told otherwise, and then verify the certificate against their trusted roots.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::config::{ProxyConfig, TlsMode};

/// The first byte of a TLS record carrying a handshake (ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;
/// A client must send its first byte, and finish a TLS handshake, within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS side of the port, or `None` when TLS is disabled.
pub fn acceptor(cfg: &ProxyConfig) -> Result<Option<TlsAcceptor>, String> {
    if cfg.tls_mode == TlsMode::Disabled {
        return Ok(None);
    }
    let (chain, key) = if cfg.tls_test_mode {
        self_signed()?
    } else {
        let (Some(cert), Some(key)) = (&cfg.tls_cert_path, &cfg.tls_key_path) else {
            return Err(
                "tlsTestModeEnable = false needs tlsCertPath and tlsKeyPath (PEM files)".into(),
            );
        };
        from_pem(cert, key)?
    };
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS certificate or key refused: {e}"))?;
    // gRPC clients insist on HTTP/2 being negotiated.
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn self_signed() -> Result<Identity, String> {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot make a self-signed certificate: {e}"))?;
    let key = PrivatePkcs8KeyDer::from(made.key_pair.serialize_der());
    Ok((vec![made.cert.der().clone()], PrivateKeyDer::Pkcs8(key)))
}

fn from_pem(cert_path: &str, key_path: &str) -> Result<Identity, String> {
    let chain = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("tlsCertPath {cert_path}: {e}"))?;
    if chain.is_empty() {
        return Err(format!("tlsCertPath {cert_path}: no certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("tlsKeyPath {key_path}: {e}"))?;
    Ok((chain, key))
}

/// One accepted connection, in plaintext or TLS.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match self {
            Conn::Plain(s) => s.connect_info(),
            Conn::Tls(s) => s.get_ref().0.connect_info(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The connections of `listener` for the gRPC server, each one sorted (and, for TLS, its
/// handshake done) in a task of its own, so a slow or silent client holds up nobody else.
pub fn incoming(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    mode: TlsMode,
) -> tokio_stream::wrappers::ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    tokio::spawn(async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("gRPC accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if tx.is_closed() {
                return;
            }
            // Small gRPC replies must not wait for Nagle's algorithm (a 40 ms delayed-ACK stall each).
            let _ = stream.set_nodelay(true);
            let (tx, acceptor) = (tx.clone(), acceptor.clone());
            tokio::spawn(async move {
                match sort(stream, acceptor, mode).await {
                    Ok(conn) => {
                        let _ = tx.send(Ok(conn)).await;
                    }
                    Err(e) => tracing::debug!("connection from {peer} closed: {e}"),
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// Plaintext or TLS, by the first byte the client sends.
async fn sort(stream: TcpStream, acceptor: Option<TlsAcceptor>, mode: TlsMode) -> io::Result<Conn> {
    let Some(acceptor) = acceptor else {
        return Ok(Conn::Plain(stream));
    };
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no first byte in time"))??;
    if peeked == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed at once",
        ));
    }
    if first[0] == TLS_HANDSHAKE {
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake too slow"))??;
        return Ok(Conn::Tls(Box::new(tls)));
    }
    if mode == TlsMode::Enforcing {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "plaintext refused (tlsServerMode = enforcing)",
        ));
    }
    Ok(Conn::Plain(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_a_self_signed_acceptor_is_made() {
        assert_eq!(TlsMode::parse(" Permissive"), Ok(TlsMode::Permissive));
        assert_eq!(TlsMode::parse("enforcing"), Ok(TlsMode::Enforcing));
        assert!(TlsMode::parse("on").is_err());
        let cfg = ProxyConfig::default();
        assert!(matches!(acceptor(&cfg), Ok(Some(_))));
        let off = ProxyConfig {
            tls_mode: TlsMode::Disabled,
            ..ProxyConfig::default()
        };
        assert!(matches!(acceptor(&off), Ok(None)));
        let missing = ProxyConfig {
            tls_test_mode: false,
            ..ProxyConfig::default()
        };
        assert!(acceptor(&missing).is_err());
    }

    /// Accepts any certificate, as the Java SDK does (its default trust manager is insecure).
    #[derive(Debug)]
    struct TrustAll(Arc<tokio_rustls::rustls::crypto::CryptoProvider>);

    impl tokio_rustls::rustls::client::danger::ServerCertVerifier for TrustAll {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &tokio_rustls::rustls::pki_types::ServerName<'_>,
            _: &[u8],
            _: tokio_rustls::rustls::pki_types::UnixTime,
        ) -> Result<
            tokio_rustls::rustls::client::danger::ServerCertVerified,
            tokio_rustls::rustls::Error,
        > {
            Ok(tokio_rustls::rustls::client::danger::ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &tokio_rustls::rustls::DigitallySignedStruct,
        ) -> Result<
            tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
            tokio_rustls::rustls::Error,
        > {
            tokio_rustls::rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &tokio_rustls::rustls::DigitallySignedStruct,
        ) -> Result<
            tokio_rustls::rustls::client::danger::HandshakeSignatureValid,
            tokio_rustls::rustls::Error,
        > {
            tokio_rustls::rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<tokio_rustls::rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }

    async fn sorted(mode: TlsMode, tls_client: bool) -> Option<bool> {
        use tokio::io::AsyncWriteExt;
        use tokio_stream::StreamExt;
        let cfg = ProxyConfig {
            tls_mode: mode,
            ..ProxyConfig::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut conns = incoming(listener, acceptor(&cfg).unwrap(), mode);
        let client = tokio::spawn(async move {
            let tcp = TcpStream::connect(addr).await.unwrap();
            if tls_client {
                let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
                let mut config =
                    tokio_rustls::rustls::ClientConfig::builder_with_provider(provider.clone())
                        .with_safe_default_protocol_versions()
                        .unwrap()
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(TrustAll(provider)))
                        .with_no_client_auth();
                config.alpn_protocols = vec![b"h2".to_vec()];
                let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
                let name =
                    tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let mut tls = connector.connect(name, tcp).await.unwrap();
                assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
                tls.write_all(b"PRI * HTTP/2.0").await.unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
            } else {
                let mut tcp = tcp;
                tcp.write_all(b"PRI * HTTP/2.0").await.unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
        let got = tokio::time::timeout(Duration::from_millis(200), conns.next()).await;
        let _ = client.await;
        match got {
            Ok(Some(Ok(Conn::Tls(_)))) => Some(true),
            Ok(Some(Ok(Conn::Plain(_)))) => Some(false),
            _ => None,
        }
    }

    #[test]
    fn one_port_serves_tls_and_plaintext_as_the_mode_says() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            // Permissive (Apache's default): a TLS client with the self-signed certificate, and a
            // plaintext one, on the same port.
            assert_eq!(sorted(TlsMode::Permissive, true).await, Some(true));
            assert_eq!(sorted(TlsMode::Permissive, false).await, Some(false));
            // Enforcing turns plaintext away; disabled never speaks TLS.
            assert_eq!(sorted(TlsMode::Enforcing, true).await, Some(true));
            assert_eq!(sorted(TlsMode::Enforcing, false).await, None);
            assert_eq!(sorted(TlsMode::Disabled, false).await, Some(false));
        });
    }
}

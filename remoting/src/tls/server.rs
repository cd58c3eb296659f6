//! The server side: the TLS context a listening port serves with (`tls.server.*`), and the sorting
//! of an accepted connection into plaintext or TLS by its first byte, as Apache's `TlsModeHandler`
//! does (0x16 starts a TLS handshake record; a remoting frame starts with its length, whose first
//! byte is 0 for any frame this server takes). The handshake is async I/O on the connection's own
//! task, bounded in time, so a silent or slow client holds up nobody else.

use std::sync::Arc;
use std::time::Duration;

use futures_rustls::rustls::server::WebPkiClientVerifier;
use futures_rustls::rustls::ServerConfig;
use futures_rustls::TlsAcceptor;
use glommio::net::TcpStream;

use super::pem;
use super::settings::{ClientAuth, ServerMode, TlsSettings};
use super::verify::AnyClient;
use crate::error::RemotingError;
use crate::timeout::with_timeout;

/// The first byte of a TLS record carrying a handshake (ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;
/// A TLS handshake must complete within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a listening port does with TLS; built once at start and shared by its connections.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
    mode: ServerMode,
}

/// An accepted connection once sorted.
pub enum Accepted {
    Plain(TcpStream),
    Tls(Box<futures_rustls::server::TlsStream<TcpStream>>),
}

impl ServerTls {
    /// The TLS side of a server port, or `None` when `tls.server.mode = disabled`. Reads
    /// `tls.config.file` and the PEM files now, so a bad setting stops the start.
    pub fn from_settings(settings: &TlsSettings) -> Result<Option<ServerTls>, String> {
        if settings.server_mode == ServerMode::Disabled {
            return Ok(None);
        }
        let s = settings.resolved()?;
        let config = server_config(&s)?;
        Ok(Some(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            mode: s.server_mode,
        }))
    }

    pub fn mode(&self) -> ServerMode {
        self.mode
    }

    /// Sorts `stream` by its first byte, waiting at most `first_byte_wait` for it; a TLS client's
    /// handshake is done here (at most `HANDSHAKE_TIMEOUT`). Under `enforcing` a plaintext
    /// connection is an error (the caller drops it: the peer sees the connection closed).
    pub async fn sort(
        &self,
        stream: TcpStream,
        first_byte_wait: Duration,
    ) -> Result<Accepted, RemotingError> {
        let mut first = [0u8; 1];
        let peeked = with_timeout(first_byte_wait, async {
            Ok(stream.peek(&mut first).await?)
        })
        .await?;
        if peeked == 0 {
            return Err(RemotingError::Closed);
        }
        if first == [TLS_HANDSHAKE] {
            let acceptor = self.acceptor.clone();
            let tls = with_timeout(HANDSHAKE_TIMEOUT, async move {
                Ok(acceptor.accept(stream).await?)
            })
            .await?;
            return Ok(Accepted::Tls(Box::new(tls)));
        }
        if self.mode == ServerMode::Enforcing {
            return Err(RemotingError::Runtime(
                "plaintext refused (tls.server.mode = enforcing)".into(),
            ));
        }
        Ok(Accepted::Plain(stream))
    }
}

/// The rustls server config of `s` (already resolved): the operator's certificate when
/// `tls.server.certPath` and `tls.server.keyPath` are given, else a self-signed one in test mode.
pub fn server_config(s: &TlsSettings) -> Result<ServerConfig, String> {
    let identity = match (s.server_cert_path.is_empty(), s.server_key_path.is_empty()) {
        (false, false) => pem::identity(
            "tls.server.certPath",
            &s.server_cert_path,
            "tls.server.keyPath",
            &s.server_key_path,
        )?,
        (true, true) if s.test_mode() => pem::self_signed()?,
        (true, true) => {
            return Err(
                "tls.test.mode.enable = false needs tls.server.certPath and \
                        tls.server.keyPath (PEM files), or tls.server.mode = disabled"
                    .into(),
            )
        }
        _ => return Err("tls.server.certPath and tls.server.keyPath go together".into()),
    };
    let provider = Arc::new(futures_rustls::rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match (s.need_client_auth, s.server_auth_client) {
        (ClientAuth::None, false) => builder.with_no_client_auth(),
        (ClientAuth::None, true) => {
            return Err(
                "tls.server.authClient = true checks client certificates, which \
                        tls.server.need.client.auth = none never asks for; set it to optional \
                        or require"
                    .into(),
            )
        }
        (need, false) => builder.with_client_cert_verifier(Arc::new(AnyClient {
            provider,
            mandatory: need == ClientAuth::Require,
        })),
        (need, true) => {
            if s.server_trust_cert_path.is_empty() {
                return Err(
                    "tls.server.authClient = true needs tls.server.trustCertPath (the \
                            PEM file of the CAs that sign client certificates)"
                        .into(),
                );
            }
            let roots = pem::roots("tls.server.trustCertPath", &s.server_trust_cert_path)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = if need == ClientAuth::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("tls.server.trustCertPath: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(identity.0, identity.1)
        .map_err(|e| format!("TLS certificate or key refused: {e}"))
}

//! The client side (`tls.enable`, `tls.client.*`): the rustls client config a process's outgoing
//! remoting connections use, and the process-wide default that `Client::connect` picks up, as
//! Apache's `TlsSystemConfig.tlsEnable` turns TLS on for every client of a JVM.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures_rustls::rustls::pki_types::ServerName;
use futures_rustls::rustls::ClientConfig;
use futures_rustls::TlsConnector;
use glommio::net::TcpStream;

use super::pem;
use super::settings::TlsSettings;
use super::verify::AnyServer;
use crate::error::RemotingError;
use crate::timeout::with_timeout;

static DEFAULT: RwLock<Option<Arc<ClientConfig>>> = RwLock::new(None);

/// Makes every later `Client::connect` of this process use TLS with `config` (`None`: plaintext).
pub fn set_default_client(config: Option<Arc<ClientConfig>>) {
    if let Ok(mut slot) = DEFAULT.write() {
        *slot = config;
    }
}

/// The TLS config `Client::connect` uses, if any.
pub fn default_client() -> Option<Arc<ClientConfig>> {
    DEFAULT.read().ok().and_then(|slot| slot.clone())
}

/// For tools (mqadmin, loadgen), as Apache's take `-Dtls.enable=true`: `ROCKETMQ_TLS_ENABLE=true`
/// makes TLS the default of every connection of this process, trusting any server certificate
/// (test mode) unless `ROCKETMQ_TLS_CONFIG_FILE` names a `tls.config.file` that says otherwise
/// (`tls.test.mode.enable=false`, `tls.client.authServer`, `tls.client.trustCertPath`, a client
/// certificate). Answers whether TLS is on.
pub fn set_default_client_from_env() -> Result<bool, String> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
    let mut settings = TlsSettings::default();
    if let Some(value) = env("ROCKETMQ_TLS_ENABLE") {
        if let Some(Err(e)) = settings.set("tls.enable", &value) {
            return Err(format!("ROCKETMQ_TLS_ENABLE: {e}"));
        }
    }
    settings.config_file = env("ROCKETMQ_TLS_CONFIG_FILE");
    if settings.enable {
        set_default_client(Some(client_config(&settings)?));
    }
    Ok(settings.enable)
}

/// The client config of `settings` (`tls.config.file` applied): trusts any server unless
/// `tls.client.authServer` (then the CAs of `tls.client.trustCertPath`, outside test mode, as
/// Apache); presents `tls.client.certPath`/`tls.client.keyPath` when given.
pub fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, String> {
    let s = settings.resolved()?;
    let provider = Arc::new(futures_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if s.client_auth_server && !s.test_mode() {
        if s.client_trust_cert_path.is_empty() {
            return Err(
                "tls.client.authServer = true needs tls.client.trustCertPath (the PEM \
                        file of the CAs that sign server certificates)"
                    .into(),
            );
        }
        builder.with_root_certificates(pem::roots(
            "tls.client.trustCertPath",
            &s.client_trust_cert_path,
        )?)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
    };
    let config = match (s.client_cert_path.is_empty(), s.client_key_path.is_empty()) {
        (true, true) => builder.with_no_client_auth(),
        (false, false) => {
            let (chain, key) = pem::identity(
                "tls.client.certPath",
                &s.client_cert_path,
                "tls.client.keyPath",
                &s.client_key_path,
            )?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("tls.client.certPath/keyPath refused: {e}"))?
        }
        _ => return Err("tls.client.certPath and tls.client.keyPath go together".into()),
    };
    Ok(Arc::new(config))
}

/// Runs the TLS handshake over a connected `stream` (at most `timeout`). The server name sent is
/// the address dialled: a verified server certificate must name that IP address.
pub async fn handshake(
    stream: TcpStream,
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    timeout: Duration,
) -> Result<futures_rustls::client::TlsStream<TcpStream>, RemotingError> {
    let connector = TlsConnector::from(config);
    let name = ServerName::IpAddress(addr.ip().into());
    with_timeout(timeout, async move {
        connector
            .connect(name, stream)
            .await
            .map_err(|e| RemotingError::Connect {
                addr: addr.to_string(),
                reason: format!("TLS handshake failed: {e}"),
            })
    })
    .await
}

//! TLS for mqadmin's connections, as Apache's `mqadmin` takes `-Dtls.enable=true` (JVM options
//! there, environment here): `ROCKETMQ_TLS_ENABLE=true` makes every connection TLS, trusting any
//! server certificate (Apache's test mode) unless `ROCKETMQ_TLS_CONFIG_FILE` names a
//! `tls.config.file` with `tls.test.mode.enable=false`, `tls.client.authServer=true` and
//! `tls.client.trustCertPath` (and `tls.client.certPath`/`keyPath` for mutual TLS).

use remoting::tls::{client_config, set_default_client, TlsSettings};

/// Reads the environment; with TLS on, makes it the default of every connection.
pub fn from_environment() -> Result<(), String> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
    let mut settings = TlsSettings::default();
    if let Some(value) = env("ROCKETMQ_TLS_ENABLE") {
        settings
            .set("tls.enable", &value)
            .unwrap_or(Ok(()))
            .map_err(|e| format!("ROCKETMQ_TLS_ENABLE: {e}"))?;
    }
    if let Some(file) = env("ROCKETMQ_TLS_CONFIG_FILE") {
        settings.config_file = Some(file);
    }
    if settings.enable {
        set_default_client(Some(client_config(&settings)?));
    }
    Ok(())
}

//! TLS for mqadmin's connections, as Apache's `mqadmin` takes `-Dtls.enable=true` (JVM options
//! there, environment here): `ROCKETMQ_TLS_ENABLE=true` makes every connection TLS, trusting any
//! server certificate (Apache's test mode) unless `ROCKETMQ_TLS_CONFIG_FILE` names a
//! `tls.config.file` with `tls.test.mode.enable=false`, `tls.client.authServer=true` and
//! `tls.client.trustCertPath` (and `tls.client.certPath`/`keyPath` for mutual TLS).

/// Reads the environment; with TLS on, makes it the default of every connection.
pub fn from_environment() -> Result<(), String> {
    remoting::tls::set_default_client_from_env().map(|_| ())
}

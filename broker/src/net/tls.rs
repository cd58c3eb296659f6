//! TLS for the broker, from its `tls.*` keys: checked once at start (a bad certificate or setting
//! stops the start before any recovery), then the server side built for each shard's listeners and
//! the client side made the process default for every outgoing remoting connection (`tls.enable`).

use remoting::tls::{client_config, set_default_client, ServerTls};

use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// Checks the TLS settings and, with `tls.enable`, makes TLS the default of the broker's clients.
pub fn start(cfg: &BrokerConfig) -> Result<(), String> {
    if let Some(server) = ServerTls::from_settings(&cfg.tls.settings)? {
        tracing::info!(
            "TLS on the remoting ports: tls.server.mode = {}",
            server.mode().as_str()
        );
    }
    if cfg.tls.client_enabled() {
        set_default_client(Some(client_config(&cfg.tls.settings)?));
        tracing::info!("TLS on the broker's connections to name servers and controllers");
    }
    Ok(())
}

/// The TLS side of a shard's listeners (`None` with `tls.server.mode = disabled`).
pub fn server(cfg: &BrokerConfig) -> Result<Option<ServerTls>, BrokerError> {
    ServerTls::from_settings(&cfg.tls.settings).map_err(|reason| BrokerError::Io {
        path: "TLS settings".into(),
        source: std::io::Error::other(reason),
    })
}

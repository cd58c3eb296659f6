//! The broker's TLS keys: Apache's `tls.*` settings (JVM system properties there, accepted in the
//! broker's config file here) and `useTLS` (NettyClientConfig's switch for the broker's own
//! client, the same as `tls.enable`). Parsing is shared with the name server and the controller
//! (`remoting::tls::TlsSettings`); unknown `tls.` keys are refused, never ignored.

use remoting::tls::TlsSettings;

/// TLS on the broker's remoting ports (listenPort and the fast port) and on its outgoing links
/// (name servers, controllers, the master).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsConfig {
    pub settings: TlsSettings,
}

impl TlsConfig {
    /// Applies `key` when it is a TLS key: `None` for other keys, `Some(Err(reason))` for a bad
    /// value or a refused key.
    pub fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        if key == "useTLS" {
            return self.settings.set("tls.enable", value);
        }
        self.settings.set(key, value)
    }

    /// Whether the broker's outgoing connections use TLS.
    pub fn client_enabled(&self) -> bool {
        self.settings.enable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::tls::ServerMode;

    #[test]
    fn tls_keys_and_use_tls_are_read_and_others_left_alone() {
        let mut t = TlsConfig::default();
        assert_eq!(t.set("brokerName", "b"), None);
        assert_eq!(t.set("tls.server.mode", "enforcing"), Some(Ok(())));
        assert_eq!(t.settings.server_mode, ServerMode::Enforcing);
        assert_eq!(t.set("useTLS", "true"), Some(Ok(())));
        assert!(t.client_enabled());
        assert!(matches!(t.set("useTLS", "yes"), Some(Err(_))));
        assert!(matches!(t.set("tls.sever.mode", "enforcing"), Some(Err(_))));
    }
}

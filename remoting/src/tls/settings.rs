//! Apache RocketMQ's TLS settings (`TlsSystemConfig`: `tls.server.mode`, `tls.enable`, ...) under
//! their names and with their defaults, read from a config file line by line, plus the
//! `tls.config.file` properties file that may hold all of them but the mode and `tls.enable`.

use std::path::Path;

/// Apache's default `tls.config.file`: read when it exists and no other file is named.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/rocketmq/tls.properties";

/// The TLS keys of a server port, Apache's names.
pub const SERVER_KEYS: &[&str] = &[
    "tls.server.mode",
    "tls.config.file",
    "tls.test.mode.enable",
    "tls.server.need.client.auth",
    "tls.server.keyPath",
    "tls.server.certPath",
    "tls.server.authClient",
    "tls.server.trustCertPath",
];

/// `tls.enable`: TLS on a process's outgoing remoting connections.
pub const ENABLE_KEY: &str = "tls.enable";

/// The TLS keys of a client (with `tls.enable`).
pub const CLIENT_KEYS: &[&str] = &[
    "tls.client.keyPath",
    "tls.client.certPath",
    "tls.client.authServer",
    "tls.client.trustCertPath",
];

/// `tls.server.mode`: what a server port accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ServerMode {
    /// Plaintext only: a TLS ClientHello reads as a too-large frame and the connection is closed.
    Disabled,
    /// TLS or plaintext, told apart by the first byte (0x16 starts a TLS handshake). Apache's default.
    #[default]
    Permissive,
    /// TLS only: a plaintext connection is closed.
    Enforcing,
}

impl ServerMode {
    pub fn parse(v: &str) -> Option<ServerMode> {
        match v.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(ServerMode::Disabled),
            "permissive" => Some(ServerMode::Permissive),
            "enforcing" => Some(ServerMode::Enforcing),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ServerMode::Disabled => "disabled",
            ServerMode::Permissive => "permissive",
            ServerMode::Enforcing => "enforcing",
        }
    }
}

/// `tls.server.need.client.auth`: whether a server asks TLS clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// Asked for; a client without one is still served.
    Optional,
    /// A TLS client without a certificate (or, with `tls.server.authClient`, without one signed by
    /// `tls.server.trustCertPath`) fails the handshake.
    Require,
}

impl ClientAuth {
    pub fn parse(v: &str) -> Option<ClientAuth> {
        match v.trim().to_ascii_lowercase().as_str() {
            "none" => Some(ClientAuth::None),
            "optional" => Some(ClientAuth::Optional),
            "require" => Some(ClientAuth::Require),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Require => "require",
        }
    }
}

/// The TLS settings of one process (server side and client side), Apache's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TlsSettings {
    /// `tls.server.mode` (default permissive).
    pub server_mode: ServerMode,
    /// `tls.enable`: this process's outgoing remoting connections use TLS (default false).
    pub enable: bool,
    /// `tls.config.file`; `None` means Apache's default path, read only if it exists.
    pub config_file: Option<String>,
    /// `tls.test.mode.enable` (default true): the server makes a self-signed certificate at start
    /// and asks clients for none; clients trust any server certificate and present none.
    pub test_mode: Option<bool>,
    pub need_client_auth: ClientAuth,
    pub server_key_path: String,
    pub server_cert_path: String,
    /// `tls.server.authClient`: verify client certificates against `server_trust_cert_path`
    /// (otherwise any client certificate is taken, as Apache's insecure trust manager does).
    pub server_auth_client: bool,
    pub server_trust_cert_path: String,
    pub client_key_path: String,
    pub client_cert_path: String,
    /// `tls.client.authServer`: verify the server's certificate against `client_trust_cert_path`
    /// (otherwise any certificate is trusted, Apache's default).
    pub client_auth_server: bool,
    pub client_trust_cert_path: String,
}

fn boolean(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// The key-password keys: refused unless empty (`KEY_PASSWORD_REFUSED` says why).
pub const PASSWORD_KEYS: &[&str] = &["tls.server.keyPassword", "tls.client.keyPassword"];

/// Why a key password is refused: the key files must be unencrypted PEM.
pub const KEY_PASSWORD_REFUSED: &str =
    "encrypted private keys are not supported here; give an unencrypted \
     PKCS#8 PEM key (`openssl pkcs8 -topk8 -nocrypt -in enc.pem -out key.pem`) and remove the key";

impl TlsSettings {
    /// Applies `key` when it is a `tls.` key: `None` for other keys; `Some(Err(reason))` for a bad
    /// value, a refused key, or a `tls.` key that is not Apache's (a typo must not leave TLS off).
    pub fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        if !key.starts_with("tls.") {
            return None;
        }
        Some(self.apply(key, value.trim()))
    }

    fn apply(&mut self, key: &str, v: &str) -> Result<(), String> {
        match key {
            "tls.server.mode" => {
                self.server_mode =
                    ServerMode::parse(v).ok_or("expected disabled, permissive or enforcing")?
            }
            "tls.enable" => self.enable = boolean(v)?,
            "tls.config.file" => self.config_file = Some(v.to_owned()),
            "tls.test.mode.enable" => self.test_mode = Some(boolean(v)?),
            "tls.server.need.client.auth" => {
                self.need_client_auth =
                    ClientAuth::parse(v).ok_or("expected none, optional or require")?
            }
            "tls.server.keyPath" => self.server_key_path = v.to_owned(),
            "tls.server.certPath" => self.server_cert_path = v.to_owned(),
            "tls.server.authClient" => self.server_auth_client = boolean(v)?,
            "tls.server.trustCertPath" => self.server_trust_cert_path = v.to_owned(),
            "tls.client.keyPath" => self.client_key_path = v.to_owned(),
            "tls.client.certPath" => self.client_cert_path = v.to_owned(),
            "tls.client.authServer" => self.client_auth_server = boolean(v)?,
            "tls.client.trustCertPath" => self.client_trust_cert_path = v.to_owned(),
            "tls.server.keyPassword" | "tls.client.keyPassword" => {
                if !v.is_empty() {
                    return Err(KEY_PASSWORD_REFUSED.into());
                }
            }
            _ => {
                return Err(format!(
                    "not a TLS key this server knows (Apache's are {}, {ENABLE_KEY}, {}, {}); a \
                     misspelt TLS key must not leave TLS off, so fix or remove it",
                    SERVER_KEYS.join(", "),
                    CLIENT_KEYS.join(", "),
                    PASSWORD_KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// `tls.test.mode.enable` in force (Apache's default: true).
    pub fn test_mode(&self) -> bool {
        self.test_mode.unwrap_or(true)
    }

    /// The settings with `tls.config.file` applied over them (as Apache's `TlsHelper` does, the
    /// file wins), when it is named or Apache's default file exists. The mode and `tls.enable`
    /// are not read from there in Apache; one in the file is refused rather than ignored.
    pub fn resolved(&self) -> Result<TlsSettings, String> {
        let path = match &self.config_file {
            Some(p) if !p.is_empty() => p.clone(),
            Some(_) => return Ok(self.clone()),
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => DEFAULT_CONFIG_FILE.to_owned(),
            None => return Ok(self.clone()),
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("tls.config.file {path}: {e}"))?;
        let mut out = self.clone();
        for (key, value) in protocol::properties_text::parse(&text) {
            if matches!(
                key.as_str(),
                "tls.server.mode" | "tls.enable" | "tls.config.file"
            ) {
                return Err(format!(
                    "tls.config.file {path}: {key} is not read from this file (as in Apache); \
                     set it in the main config"
                ));
            }
            match out.set(&key, &value) {
                Some(Ok(())) => {}
                Some(Err(e)) => return Err(format!("tls.config.file {path}: {key}: {e}")),
                None => {
                    return Err(format!(
                        "tls.config.file {path}: {key} is not a TLS key; remove it"
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Every key with its value in force, for a config listing.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("tls.server.mode", self.server_mode.as_str().to_owned()),
            ("tls.enable", self.enable.to_string()),
            (
                "tls.config.file",
                self.config_file
                    .clone()
                    .unwrap_or_else(|| DEFAULT_CONFIG_FILE.to_owned()),
            ),
            ("tls.test.mode.enable", self.test_mode().to_string()),
            (
                "tls.server.need.client.auth",
                self.need_client_auth.as_str().to_owned(),
            ),
            ("tls.server.keyPath", self.server_key_path.clone()),
            ("tls.server.keyPassword", String::new()),
            ("tls.server.certPath", self.server_cert_path.clone()),
            ("tls.server.authClient", self.server_auth_client.to_string()),
            (
                "tls.server.trustCertPath",
                self.server_trust_cert_path.clone(),
            ),
            ("tls.client.keyPath", self.client_key_path.clone()),
            ("tls.client.keyPassword", String::new()),
            ("tls.client.certPath", self.client_cert_path.clone()),
            ("tls.client.authServer", self.client_auth_server.to_string()),
            (
                "tls.client.trustCertPath",
                self.client_trust_cert_path.clone(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apaches_keys_and_defaults() {
        let mut s = TlsSettings::default();
        assert_eq!(s.server_mode, ServerMode::Permissive);
        assert!(s.test_mode() && !s.enable);
        assert_eq!(s.set("listenPort", "1"), None);
        assert_eq!(s.set("tls.server.mode", " Enforcing"), Some(Ok(())));
        assert_eq!(s.server_mode, ServerMode::Enforcing);
        assert!(matches!(s.set("tls.server.mode", "on"), Some(Err(_))));
        assert_eq!(
            s.set("tls.server.need.client.auth", "require"),
            Some(Ok(()))
        );
        assert_eq!(s.need_client_auth, ClientAuth::Require);
        assert_eq!(s.set("tls.server.keyPassword", ""), Some(Ok(())));
        let refused = s.set("tls.server.keyPassword", "secret");
        assert!(
            matches!(&refused, Some(Err(e)) if e.contains("encrypted")),
            "{refused:?}"
        );
        let typo = s.set("tls.server.mod", "enforcing");
        assert!(
            matches!(&typo, Some(Err(e)) if e.contains("tls.server.mode")),
            "{typo:?}"
        );
        for (key, value) in TlsSettings::default().to_pairs() {
            assert_eq!(s.set(key, &value), Some(Ok(())), "{key}");
        }
        assert_eq!(
            SERVER_KEYS.len() + 1 + CLIENT_KEYS.len() + PASSWORD_KEYS.len(),
            TlsSettings::default().to_pairs().len()
        );
    }

    #[test]
    fn the_config_file_wins_but_cannot_set_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tls.properties");
        std::fs::write(
            &path,
            "tls.test.mode.enable=false\ntls.server.certPath=/x/cert.pem\n",
        )
        .unwrap();
        let mut s = TlsSettings::default();
        s.set("tls.server.certPath", "/y.pem");
        s.set("tls.config.file", path.to_str().unwrap());
        let r = s.resolved().unwrap();
        assert!(!r.test_mode());
        assert_eq!(r.server_cert_path, "/x/cert.pem");
        std::fs::write(&path, "tls.server.mode=disabled\n").unwrap();
        assert!(s.resolved().unwrap_err().contains("main config"));
        s.set("tls.config.file", "/nonexistent/tls.properties");
        assert!(s.resolved().is_err());
    }
}

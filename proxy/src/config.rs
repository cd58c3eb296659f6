//! The proxy's config file: flat TOML (`key = value`) or a `.properties` file with the same keys,
//! named as Apache's proxy names them where it has the setting. Everything has a default.

use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct ProxyConfig {
    /// `grpcServerPort`: where the RocketMQ 5 SDKs connect (Apache's default, 8081).
    pub grpc_server_port: u16,
    /// `bindAddress`: the address the gRPC and metrics listeners bind.
    pub bind_address: String,
    /// `namesrvAddr`: name servers, `;`-separated.
    pub namesrv_addr: Vec<String>,
    /// `metricsPromExporterPort`: Prometheus text metrics on `GET /metrics` (ours; with
    /// `metricsExporterType = PROM` Apache's names too); 0 turns it off.
    pub metrics_port: u16,
    /// `remotingTimeoutMillis`: how long a remoting call to a broker may take.
    pub remoting_timeout: Duration,
    /// `aclEnable`: SDK requests must carry a valid signature of an account in `aclFile`, and the
    /// proxy signs its remoting requests with that account.
    pub acl_enable: bool,
    /// `aclFile`: the brokers' plain_acl.yml (only `accounts` is read: accessKey, secretKey).
    pub acl_file: Option<String>,
    /// `minInvisibleTimeMillis`: ReceiveMessage / ChangeInvisibleDuration below this are refused
    /// (ILLEGAL_INVISIBLE_TIME); Apache's proxy refuses under 10 s.
    pub min_invisible_time: Duration,
    /// `maxMessageSize`: the largest body a SendMessage may carry (the brokers' default).
    pub max_message_size: usize,
    /// `tlsServerMode` (Apache: the `tls.server.mode` system property): `permissive` serves TLS and
    /// plaintext on the one port, `enforcing` TLS only, `disabled` plaintext only.
    pub tls_mode: TlsMode,
    /// `tlsTestModeEnable`: TLS with a self-signed certificate made at start (Apache's default);
    /// false: the certificate chain and key of `tlsCertPath` / `tlsKeyPath` (PEM).
    pub tls_test_mode: bool,
    pub tls_cert_path: Option<String>,
    pub tls_key_path: Option<String>,
    /// `grpcThreadPoolNums`: the runtime's worker threads, which serve every gRPC and remoting
    /// connection; 0 (default) is one per CPU. Fewer where the proxy shares its cores.
    pub grpc_threads: usize,
    /// `enableTopicMessageTypeCheck`: a message must be of its topic's `message.type` (any on a MIXED
    /// topic), and the settings answer tells the SDKs to check the same (`validateMessageType`).
    pub enable_topic_message_type_check: bool,
    /// `topicConfigCacheRefreshSeconds`: a topic's message type is asked again when older than this.
    pub topic_config_cache_refresh: Duration,
    /// `topicConfigCacheExpiredSeconds`: a topic's type unused this long is forgotten.
    pub topic_config_cache_expired: Duration,
    /// `topicConfigCacheMaxNum`: the most topics whose types are kept.
    pub topic_config_cache_max: usize,
    /// ACL 2.0 (`authenticationEnabled`, `authorizationEnabled`, ...): see `acl2::config`.
    pub auth: crate::acl2::config::AuthConfig,
    /// Apache's metrics keys (`metricsExporterType`, `proxyName`, ...): see `metrics_config`.
    pub metrics: crate::metrics_config::MetricsConfig,
}

/// `tlsServerMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plaintext only.
    Disabled,
    /// TLS and plaintext on one port (Apache's default).
    Permissive,
    /// TLS only: plaintext connections are closed.
    Enforcing,
}

impl TlsMode {
    pub fn parse(value: &str) -> Result<TlsMode, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "disabled" => Ok(TlsMode::Disabled),
            "permissive" => Ok(TlsMode::Permissive),
            "enforcing" => Ok(TlsMode::Enforcing),
            _ => Err(format!(
                "tlsServerMode {value:?}: expected disabled, permissive or enforcing"
            )),
        }
    }
}

/// The most runtime worker threads `grpcThreadPoolNums` may ask for.
const MAX_GRPC_THREADS: usize = 1024;

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            grpc_server_port: 8081,
            bind_address: "0.0.0.0".into(),
            namesrv_addr: vec!["127.0.0.1:9876".into()],
            metrics_port: 5557,
            remoting_timeout: Duration::from_secs(3),
            acl_enable: false,
            acl_file: None,
            min_invisible_time: Duration::from_secs(10),
            max_message_size: 4 * 1024 * 1024,
            tls_mode: TlsMode::Permissive,
            tls_test_mode: true,
            tls_cert_path: None,
            tls_key_path: None,
            grpc_threads: 0,
            enable_topic_message_type_check: true,
            topic_config_cache_refresh: Duration::from_secs(20),
            topic_config_cache_expired: Duration::from_secs(300),
            topic_config_cache_max: 20_000,
            auth: crate::acl2::config::AuthConfig::default(),
            metrics: crate::metrics_config::MetricsConfig::default(),
        }
    }
}

impl ProxyConfig {
    pub fn load(path: &Path) -> Result<ProxyConfig, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let pairs = if path.extension().is_some_and(|e| e == "properties") {
            parse_properties(&text)
        } else {
            parse_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?
        };
        let mut cfg = ProxyConfig::default();
        for (k, v) in pairs {
            cfg.set(&k, &v)
                .map_err(|e| format!("{}: {k}: {e}", path.display()))?;
        }
        Ok(cfg)
    }

    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let num = |v: &str| v.trim().parse::<u64>().map_err(|e| format!("{v:?}: {e}"));
        match key {
            "grpcServerPort" => {
                self.grpc_server_port = u16::try_from(num(value)?).map_err(|e| e.to_string())?
            }
            "bindAddress" => self.bind_address = value.trim().to_string(),
            "namesrvAddr" => {
                self.namesrv_addr = value
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "metricsPromExporterPort" => {
                self.metrics_port = u16::try_from(num(value)?).map_err(|e| e.to_string())?
            }
            "remotingTimeoutMillis" => self.remoting_timeout = Duration::from_millis(num(value)?),
            "aclEnable" => {
                self.acl_enable = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{value:?} is not true or false"))?
            }
            "aclFile" => self.acl_file = Some(value.trim().to_string()),
            "minInvisibleTimeMillis" => {
                self.min_invisible_time = Duration::from_millis(num(value)?)
            }
            "maxMessageSize" => {
                self.max_message_size = usize::try_from(num(value)?).map_err(|e| e.to_string())?
            }
            "tlsServerMode" => self.tls_mode = TlsMode::parse(value)?,
            "tlsTestModeEnable" => {
                self.tls_test_mode = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{value:?} is not true or false"))?
            }
            "tlsCertPath" => self.tls_cert_path = Some(value.trim().to_string()),
            "tlsKeyPath" => self.tls_key_path = Some(value.trim().to_string()),
            "grpcThreadPoolNums" => {
                self.grpc_threads = usize::try_from(num(value)?)
                    .ok()
                    .filter(|n| *n <= MAX_GRPC_THREADS)
                    .ok_or_else(|| format!("{value:?}: at most {MAX_GRPC_THREADS} threads"))?
            }
            "enableTopicMessageTypeCheck" => {
                self.enable_topic_message_type_check = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("{value:?} is not true or false"))?
            }
            "topicConfigCacheRefreshSeconds" => {
                self.topic_config_cache_refresh = Duration::from_secs(num(value)?)
            }
            "topicConfigCacheExpiredSeconds" => {
                self.topic_config_cache_expired = Duration::from_secs(num(value)?)
            }
            "topicConfigCacheMaxNum" => {
                self.topic_config_cache_max =
                    usize::try_from(num(value)?).map_err(|e| e.to_string())?
            }
            _ => match self.auth.set(key, value) {
                Some(result) => result?,
                None => match self.metrics.set(key, value) {
                    Some(result) => result?,
                    None => tracing::warn!("unknown config key {key} ignored"),
                },
            },
        }
        Ok(())
    }
}

fn parse_properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let (k, v) = l.split_once(['=', ':'])?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn parse_toml(text: &str) -> Result<Vec<(String, String)>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    table
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => return Err(format!("{k}: {other} is not a flat value")),
            };
            Ok((k, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_properties_set_the_same_keys() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("proxy.toml");
        std::fs::write(
            &toml,
            "grpcServerPort = 18081\nnamesrvAddr = \"a:1;b:2\"\nremotingTimeoutMillis = 500\n",
        )
        .unwrap();
        let props = dir.path().join("proxy.properties");
        std::fs::write(
            &props,
            "grpcServerPort=18081\nnamesrvAddr=a:1;b:2\nremotingTimeoutMillis=500\n",
        )
        .unwrap();
        let a = ProxyConfig::load(&toml).unwrap();
        assert_eq!(a, ProxyConfig::load(&props).unwrap());
        assert_eq!(a.grpc_server_port, 18081);
        assert_eq!(a.namesrv_addr, vec!["a:1", "b:2"]);
        assert_eq!(a.remoting_timeout, Duration::from_millis(500));
        assert_eq!(a.metrics_port, 5557);
    }

    #[test]
    fn the_deploy_config_loads_with_apaches_port() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/conf/proxy.toml");
        let c = ProxyConfig::load(&path).unwrap();
        assert_eq!(c.grpc_server_port, 8081);
        assert_eq!(c, ProxyConfig::default());
    }

    #[test]
    fn a_bad_value_is_an_error() {
        let mut c = ProxyConfig::default();
        assert!(c.set("grpcServerPort", "99999").is_err());
        assert!(c.set("aclEnable", "yes").is_err());
        assert!(c.set("grpcThreadPoolNums", "100000").is_err());
        assert!(c.set("grpcThreadPoolNums", "-1").is_err());
        c.set("grpcThreadPoolNums", "4").unwrap();
        assert_eq!(c.grpc_threads, 4);
    }

    #[test]
    fn the_message_type_check_is_on_unless_turned_off() {
        let mut c = ProxyConfig::default();
        assert!(c.enable_topic_message_type_check);
        assert_eq!(c.topic_config_cache_refresh, Duration::from_secs(20));
        assert_eq!(c.topic_config_cache_expired, Duration::from_secs(300));
        c.set("enableTopicMessageTypeCheck", "false").unwrap();
        assert!(!c.enable_topic_message_type_check);
        assert!(c.set("enableTopicMessageTypeCheck", "no").is_err());
        c.set("topicConfigCacheRefreshSeconds", "1").unwrap();
        assert_eq!(c.topic_config_cache_refresh, Duration::from_secs(1));
    }
}

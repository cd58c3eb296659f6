//! The ACL 2.0 keys of the proxy's config (Apache's `AuthConfig` and `ProxyConfig` names): switches,
//! whitelists of gRPC requests, the proxy's own credentials and the user and ACL caches.

use std::time::Duration;

use protocol::signature::Credentials;

/// ACL 2.0 settings; everything off by default, as in Apache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// `authenticationEnabled`: every SDK request must be signed by an enabled user.
    pub authentication_enabled: bool,
    /// `authorizationEnabled`: every SDK request must be allowed by the user's ACL.
    pub authorization_enabled: bool,
    /// `authenticationWhitelist`: request types (`apache.rocketmq.v2.QueryRouteRequest`, ...) that
    /// are not authenticated.
    pub authentication_whitelist: Vec<String>,
    /// `authorizationWhitelist`: request types that are not authorized.
    pub authorization_whitelist: Vec<String>,
    /// `innerClientAuthenticationCredentials` (`{"accessKey":"..","secretKey":".."}`): the user the
    /// proxy signs its own remoting requests to brokers with.
    pub inner_credentials: Option<Credentials>,
    pub user_cache: CacheConfig,
    pub acl_cache: CacheConfig,
}

/// One cache's size and times (Apache's `ProxyConfig` defaults, those of cluster mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// `*CacheMaxNum`: the most entries kept.
    pub max: usize,
    /// `*CacheExpiredSeconds`: an entry unused this long is dropped.
    pub expire: Duration,
    /// `*CacheRefreshSeconds`: an entry written this long ago is asked again (in the background,
    /// the old one still answering meanwhile).
    pub refresh: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            max: 20_000,
            expire: Duration::from_secs(300),
            refresh: Duration::from_secs(20),
        }
    }
}

impl AuthConfig {
    /// Whether either check is on.
    pub fn enabled(&self) -> bool {
        self.authentication_enabled || self.authorization_enabled
    }

    /// Sets `key` when it is one of these keys: `None` when it is not.
    pub fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let secs = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map(Duration::from_secs)
                .map_err(|e| format!("{v:?}: {e}"))
        };
        let count = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{v:?}: {e}"));
        let flag = |v: &str| {
            v.trim()
                .parse::<bool>()
                .map_err(|_| format!("{v:?} is not true or false"))
        };
        let result = match key {
            "authenticationEnabled" => flag(value).map(|b| self.authentication_enabled = b),
            "authorizationEnabled" => flag(value).map(|b| self.authorization_enabled = b),
            "authenticationWhitelist" => {
                self.authentication_whitelist = list(value);
                Ok(())
            }
            "authorizationWhitelist" => {
                self.authorization_whitelist = list(value);
                Ok(())
            }
            "innerClientAuthenticationCredentials" => {
                parse_credentials(value).map(|c| self.inner_credentials = c)
            }
            // Apache's ProxyConfig names (cluster mode) and its AuthConfig names (local mode).
            "userCacheMaxNum" => count(value).map(|n| self.user_cache.max = n),
            "userCacheExpiredSeconds" | "userCacheExpiredSecond" => {
                secs(value).map(|d| self.user_cache.expire = d)
            }
            "userCacheRefreshSeconds" | "userCacheRefreshSecond" => {
                secs(value).map(|d| self.user_cache.refresh = d)
            }
            "aclCacheMaxNum" => count(value).map(|n| self.acl_cache.max = n),
            "aclCacheExpiredSeconds" | "aclCacheExpiredSecond" => {
                secs(value).map(|d| self.acl_cache.expire = d)
            }
            "aclCacheRefreshSeconds" | "aclCacheRefreshSecond" => {
                secs(value).map(|d| self.acl_cache.refresh = d)
            }
            "enableAclRpcHookForClusterMode" => flag(value).map(|b| {
                if !b {
                    tracing::warn!(
                        "enableAclRpcHookForClusterMode = false: this proxy signs its requests to \
                         brokers whenever innerClientAuthenticationCredentials is set"
                    );
                }
            }),
            "authenticationProvider"
            | "authorizationProvider"
            | "authenticationMetadataProvider"
            | "authorizationMetadataProvider" => plugin(key, value, PROVIDERS),
            "authenticationStrategy" | "authorizationStrategy" => {
                // Only the stateless strategy: every request is checked on its own.
                plugin(key, value, STRATEGIES)
            }
            // The stateful strategy's caches: accepted at Apache's defaults (there is no such cache).
            "statefulAuthenticationCacheMaxNum" | "statefulAuthorizationCacheMaxNum" => {
                stateless_default(key, value, "10000")
            }
            "statefulAuthenticationCacheExpiredSecond"
            | "statefulAuthorizationCacheExpiredSecond" => stateless_default(key, value, "60"),
            "initAuthenticationUser" | "migrateAuthFromV1Enabled" => Err(format!(
                "{key} is a broker key: the proxy reads the brokers' users and ACLs; set it on the \
                 brokers"
            )),
            _ => return None,
        };
        Some(result)
    }
}

/// A stateful-strategy cache key: only its default (Apache's) is accepted, since there is no such
/// cache here (every request is checked on its own).
fn stateless_default(key: &str, value: &str, default: &str) -> Result<(), String> {
    if value.trim() == default {
        Ok(())
    } else {
        Err(format!(
            "{key}: this proxy keeps no per-connection cache of decisions (every request is \
             checked on its own, Apache's stateless strategy); remove the key"
        ))
    }
}

/// Apache's classes whose behaviour this proxy has (its cluster mode's defaults), by simple name.
const PROVIDERS: &[&str] = &[
    "DefaultAuthenticationProvider",
    "DefaultAuthorizationProvider",
    "ProxyAuthenticationMetadataProvider",
    "ProxyAuthorizationMetadataProvider",
];
const STRATEGIES: &[&str] = &[
    "StatelessAuthenticationStrategy",
    "StatelessAuthorizationStrategy",
];

/// A plugin class key: accepted when it names one of `known` (what this proxy does), else refused.
fn plugin(key: &str, value: &str, known: &[&str]) -> Result<(), String> {
    let class = value.trim();
    let simple = class.rsplit('.').next().unwrap_or(class);
    if class.is_empty() || known.contains(&simple) {
        return Ok(());
    }
    Err(format!(
        "{key} = {class:?}: this proxy has Apache's cluster-mode behaviour only ({}); remove the key",
        known.join(", ")
    ))
}

/// A comma-separated list, trimmed, without empty items.
fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `{"accessKey":"..","secretKey":".."}`; blank means none.
fn parse_credentials(value: &str) -> Result<Option<Credentials>, String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Json {
        #[serde(default)]
        access_key: String,
        #[serde(default)]
        secret_key: String,
    }
    if value.trim().is_empty() {
        return Ok(None);
    }
    let json: Json = serde_json::from_str(value.trim())
        .map_err(|e| format!("expected {{\"accessKey\":\"..\",\"secretKey\":\"..\"}}: {e}"))?;
    if json.access_key.trim().is_empty() || json.secret_key.trim().is_empty() {
        return Err("both accessKey and secretKey are needed".into());
    }
    Ok(Some(Credentials {
        access_key: json.access_key,
        secret_key: json.secret_key,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_set_their_fields_and_bad_values_are_errors() {
        let mut c = AuthConfig::default();
        assert!(!c.enabled());
        assert_eq!(c.set("authenticationEnabled", "true"), Some(Ok(())));
        assert!(c.enabled());
        assert!(c
            .set("authorizationEnabled", "yes")
            .is_some_and(|r| r.is_err()));
        c.set(
            "authenticationWhitelist",
            " apache.rocketmq.v2.QueryRouteRequest, ,apache.rocketmq.v2.HeartbeatRequest",
        );
        assert_eq!(
            c.authentication_whitelist,
            [
                "apache.rocketmq.v2.QueryRouteRequest",
                "apache.rocketmq.v2.HeartbeatRequest"
            ]
        );
        c.set(
            "innerClientAuthenticationCredentials",
            r#"{"accessKey":"rocketmq","secretKey":"12345678"}"#,
        );
        assert_eq!(
            c.inner_credentials.as_ref().map(|c| c.access_key.as_str()),
            Some("rocketmq")
        );
        assert!(c
            .set(
                "innerClientAuthenticationCredentials",
                r#"{"accessKey":"x"}"#
            )
            .is_some_and(|r| r.is_err()));
        assert!(c
            .set("innerClientAuthenticationCredentials", "rocketmq:123")
            .is_some_and(|r| r.is_err()));
        c.set("userCacheExpiredSecond", "7");
        c.set("aclCacheRefreshSeconds", "3");
        c.set("aclCacheMaxNum", "10");
        assert_eq!(c.user_cache.expire, Duration::from_secs(7));
        assert_eq!(c.acl_cache.refresh, Duration::from_secs(3));
        // Only the stateless strategy, and its stateful caches at Apache's defaults.
        let stateless =
            "org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy";
        assert_eq!(c.set("authenticationStrategy", stateless), Some(Ok(())));
        let stateful = stateless.replace("Stateless", "Stateful");
        assert!(matches!(
            c.set("authenticationStrategy", &stateful),
            Some(Err(_))
        ));
        assert_eq!(
            c.set("statefulAuthenticationCacheMaxNum", "10000"),
            Some(Ok(()))
        );
        assert!(matches!(
            c.set("statefulAuthorizationCacheExpiredSecond", "5"),
            Some(Err(_))
        ));
        assert_eq!(c.acl_cache.max, 10);
        assert!(c
            .set("authenticationProvider", "x.Y")
            .is_some_and(|r| r.is_err()));
        assert_eq!(
            c.set(
                "authenticationMetadataProvider",
                "org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider"
            ),
            Some(Ok(()))
        );
        assert!(c
            .set("initAuthenticationUser", "{}")
            .is_some_and(|r| r.is_err()));
        assert_eq!(c.set("grpcServerPort", "1"), None);
    }
}

//! ACL 2.0 keys (Apache's `AuthConfig`, 5.3+): whether requests are authenticated and authorized, the
//! request codes exempt from each, the first super user, the credentials this broker signs its own
//! requests to other brokers with, and migrating a plain_acl.yml. Apache's names and defaults.

use protocol::signature::Credentials;
use serde::Deserialize;

/// Apache's default providers and strategies: the only ones there are here (a custom Java class
/// cannot be loaded). The stateful strategies cache a connection's decisions; here every request is
/// checked on its own.
const PROVIDERS: [(&str, &str); 6] = [
    (
        "authenticationProvider",
        "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    ),
    (
        "authenticationMetadataProvider",
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    ),
    (
        "authorizationProvider",
        "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    ),
    (
        "authorizationMetadataProvider",
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    ),
    (
        "authenticationStrategy",
        "org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy",
    ),
    (
        "authorizationStrategy",
        "org.apache.rocketmq.auth.authorization.strategy.StatelessAuthorizationStrategy",
    ),
];

/// `initAuthenticationUser`: `{"username": "...", "password": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct InitUser {
    pub username: String,
    pub password: String,
}

/// The ACL 2.0 part of the broker's configuration (`Debug` shows it as `to_pairs` does, without
/// the passwords).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// `authenticationEnabled`: every request names a user (its AccessKey) and is signed with the
    /// user's password, unless its code is in `authentication_whitelist`.
    pub authentication_enabled: bool,
    /// `authorizationEnabled`: every request is checked against its user's ACL.
    pub authorization_enabled: bool,
    /// `authenticationWhitelist`: request codes (comma separated) not authenticated.
    pub authentication_whitelist: Vec<i32>,
    /// `authorizationWhitelist`: request codes (comma separated) not authorized.
    pub authorization_whitelist: Vec<i32>,
    /// `initAuthenticationUser`: a super user created at start when no user of that name exists.
    pub init_authentication_user: Option<InitUser>,
    /// `innerClientAuthenticationCredentials`: `{"accessKey": "...", "secretKey": "..."}`, a super
    /// user created at start like the one above; this broker signs its requests to other brokers
    /// (a slave's to its master) with it.
    pub inner_client_credentials: Option<Credentials>,
    /// `migrateAuthFromV1Enabled`: at start, every account of the plain_acl.yml (`aclFile`) whose
    /// user does not exist yet becomes a user and an ACL.
    pub migrate_auth_from_v1_enabled: bool,
}

/// The shape `innerClientAuthenticationCredentials` is written in.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionCredentials {
    access_key: String,
    secret_key: String,
}

fn boolean(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false".to_owned()),
    }
}

/// A comma-separated list of request codes.
fn codes(v: &str) -> Result<Vec<i32>, String> {
    v.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            c.parse().map_err(|_| {
                format!("{c:?} is not a request code (write numbers, comma separated)")
            })
        })
        .collect()
}

/// `None` for an empty value (the key unset).
fn json<T: serde::de::DeserializeOwned>(v: &str, shape: &str) -> Result<Option<T>, String> {
    if v.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(v)
        .map(Some)
        .map_err(|e| format!("expected JSON {shape}: {e}"))
}

impl AuthConfig {
    /// Applies `key` if it is one of these: `None` when it is not.
    pub fn set(&mut self, key: &str, v: &str) -> Option<Result<(), String>> {
        let result = match key {
            "authenticationEnabled" => boolean(v).map(|b| self.authentication_enabled = b),
            "authorizationEnabled" => boolean(v).map(|b| self.authorization_enabled = b),
            "authenticationWhitelist" => codes(v).map(|c| self.authentication_whitelist = c),
            "authorizationWhitelist" => codes(v).map(|c| self.authorization_whitelist = c),
            "migrateAuthFromV1Enabled" => boolean(v).map(|b| self.migrate_auth_from_v1_enabled = b),
            "initAuthenticationUser" => json::<InitUser>(v, r#"{"username":"..","password":".."}"#)
                .and_then(|u| match u {
                    Some(u) if u.username.trim().is_empty() || u.password.trim().is_empty() => {
                        Err("the username and the password must not be blank".to_owned())
                    }
                    u => {
                        self.init_authentication_user = u;
                        Ok(())
                    }
                }),
            "innerClientAuthenticationCredentials" => json::<SessionCredentials>(
                v,
                r#"{"accessKey":"..","secretKey":".."}"#,
            )
            .and_then(|c| match c {
                Some(c) if c.access_key.trim().is_empty() || c.secret_key.trim().is_empty() => {
                    Err("the accessKey and the secretKey must not be blank".to_owned())
                }
                c => {
                    self.inner_client_credentials = c.map(|c| Credentials {
                        access_key: c.access_key,
                        secret_key: c.secret_key,
                    });
                    Ok(())
                }
            }),
            _ => {
                let (_, default) = PROVIDERS.iter().find(|(k, _)| *k == key)?;
                let v = v.trim();
                if v.is_empty() || v == *default {
                    Ok(())
                } else {
                    Err(format!(
                        "only {default} is built in (users and ACLs are kept by the broker in \
                         config/auth.json, and every request is checked on its own); remove the \
                         key or set it to that"
                    ))
                }
            }
        };
        Some(result)
    }

    /// Signs `request` with `innerClientAuthenticationCredentials`, when set: what this broker sends
    /// another broker (a slave its master) passes that broker's ACL 2.0 checks.
    pub fn sign_inner(&self, request: &mut protocol::RemotingCommand) {
        if let Some(credentials) = &self.inner_client_credentials {
            protocol::signature::sign_request(request, credentials);
        }
    }

    /// Whether requests are checked at all.
    pub fn enforced(&self) -> bool {
        self.authentication_enabled || self.authorization_enabled
    }

    /// The keys and values `GET_BROKER_CONFIG` shows: not the two holding passwords.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let list = |codes: &[i32]| {
            codes
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        vec![
            (
                "authenticationEnabled",
                self.authentication_enabled.to_string(),
            ),
            (
                "authorizationEnabled",
                self.authorization_enabled.to_string(),
            ),
            (
                "authenticationWhitelist",
                list(&self.authentication_whitelist),
            ),
            (
                "authorizationWhitelist",
                list(&self.authorization_whitelist),
            ),
            (
                "migrateAuthFromV1Enabled",
                self.migrate_auth_from_v1_enabled.to_string(),
            ),
        ]
    }
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.to_pairs()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(c: &mut AuthConfig, k: &str, v: &str) -> Result<(), String> {
        c.set(k, v).expect("an auth key")
    }

    #[test]
    fn keys_parse_as_apache_writes_them() {
        let mut c = AuthConfig::default();
        set(&mut c, "authenticationEnabled", "true").unwrap();
        set(&mut c, "authorizationWhitelist", "10, 11").unwrap();
        set(
            &mut c,
            "initAuthenticationUser",
            r#"{"username":"rocketmq","password":"12345678"}"#,
        )
        .unwrap();
        set(
            &mut c,
            "innerClientAuthenticationCredentials",
            r#"{"accessKey":"inner","secretKey":"s3cret"}"#,
        )
        .unwrap();
        set(&mut c, "authenticationProvider", PROVIDERS[0].1).unwrap();
        assert!(c.authentication_enabled && c.enforced());
        assert_eq!(c.authorization_whitelist, vec![10, 11]);
        assert_eq!(
            c.init_authentication_user
                .as_ref()
                .map(|u| u.username.as_str()),
            Some("rocketmq")
        );
        assert_eq!(
            c.inner_client_credentials
                .as_ref()
                .map(|c| c.access_key.as_str()),
            Some("inner")
        );
        // Secrets never show in GET_BROKER_CONFIG.
        assert!(c
            .to_pairs()
            .iter()
            .all(|(_, v)| !v.contains("12345678") && !v.contains("s3cret")));
        assert!(c.set("brokerName", "x").is_none());
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let mut c = AuthConfig::default();
        assert!(set(&mut c, "authenticationEnabled", "yes").is_err());
        assert!(set(&mut c, "authenticationWhitelist", "10,x").is_err());
        assert!(set(&mut c, "initAuthenticationUser", "rocketmq:123").is_err());
        assert!(set(
            &mut c,
            "initAuthenticationUser",
            r#"{"username":"a","password":""}"#
        )
        .is_err());
        assert!(set(
            &mut c,
            "innerClientAuthenticationCredentials",
            r#"{"accessKey":"a"}"#
        )
        .is_err());
        let err = set(&mut c, "authorizationProvider", "com.example.Mine").unwrap_err();
        assert!(err.contains("DefaultAuthorizationProvider"), "{err}");
        let err = set(
            &mut c,
            "authenticationStrategy",
            "org.apache.rocketmq.auth.authentication.strategy.StatefulAuthenticationStrategy",
        )
        .unwrap_err();
        assert!(err.contains("StatelessAuthenticationStrategy"), "{err}");
    }
}

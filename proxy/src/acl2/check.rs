//! The checks of one gRPC request: authentication, then authorization, with users and ACLs from
//! the brokers through the caches.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use auth::{Acl, User, UserStatus};
use tonic::metadata::MetadataMap;

use super::cache::{Cache, Lookup};
use super::request::{self, AuthRequest};
use super::store::Acl2;
use super::{fetch, header};
use crate::state::Proxy;
use crate::status::ProxyError;

/// Apache's text when reading a user failed for another reason than a refusal.
const AUTHENTICATION_FAILED: &str =
    "Authentication failed. Please verify the credentials and try again.";
const AUTHORIZATION_FAILED: &str =
    "Authorization failed. Please verify your access rights and try again.";

/// Checks one request when ACL 2.0 is on: authentication, then authorization.
pub async fn check<R: AuthRequest>(
    proxy: &Arc<Proxy>,
    md: &MetadataMap,
    peer: Option<SocketAddr>,
    req: &R,
) -> Result<(), ProxyError> {
    let cfg = &proxy.acl2.cfg;
    if !cfg.enabled() {
        return Ok(());
    }
    let signed = header::read(md).map_err(ProxyError::Unauthorized)?;
    if cfg.authentication_enabled && !cfg.authentication_whitelist.iter().any(|w| w == R::RPC) {
        authenticate(proxy, &signed).await?;
    }
    if cfg.authorization_enabled && !cfg.authorization_whitelist.iter().any(|w| w == R::RPC) {
        let checks = req.checks().map_err(ProxyError::Unauthorized)?;
        if !checks.is_empty() {
            let ip = peer
                .map(|p| p.ip().to_canonical().to_string())
                .unwrap_or_default();
            authorize(proxy, signed.username.as_deref(), &checks, &ip).await?;
        }
    }
    Ok(())
}

/// Apache's `DefaultAuthenticationHandler`.
async fn authenticate(proxy: &Arc<Proxy>, signed: &header::Signed) -> Result<(), ProxyError> {
    let Some(username) = signed.username.as_deref().filter(|u| !u.is_empty()) else {
        return Err(ProxyError::Unauthorized("username cannot be null.".into()));
    };
    let user = user(proxy, username)
        .await
        .map_err(|e| failed(AUTHENTICATION_FAILED, &e))?;
    let Some(user) = user else {
        return Err(ProxyError::Unauthorized(format!(
            "User:{username} is not found."
        )));
    };
    if user.status == UserStatus::Disable {
        return Err(ProxyError::Unauthorized(format!(
            "User:{username} is disabled."
        )));
    }
    if !header::verify(signed, &user.password) {
        return Err(ProxyError::Unauthorized("check signature failed.".into()));
    }
    Ok(())
}

/// Apache's `UserAuthorizationHandler` and `AclAuthorizationHandler`.
async fn authorize(
    proxy: &Arc<Proxy>,
    username: Option<&str>,
    checks: &[request::Check],
    ip: &str,
) -> Result<(), ProxyError> {
    let Some(username) = username.filter(|u| !u.is_empty()) else {
        return Err(ProxyError::Unauthorized("username cannot be null.".into()));
    };
    let user = user(proxy, username)
        .await
        .map_err(|e| failed(AUTHORIZATION_FAILED, &e))?
        .ok_or_else(|| ProxyError::Unauthorized(format!("User:{username} not found.")))?;
    if user.status == UserStatus::Disable {
        return Err(ProxyError::Unauthorized(format!(
            "User:{username} is disabled."
        )));
    }
    if user.user_type == auth::UserType::Super {
        return Ok(());
    }
    let acl = acl(proxy, &user.subject())
        .await
        .map_err(|e| failed(AUTHORIZATION_FAILED, &e))?;
    for (resource, actions) in checks {
        auth::evaluate::authorize(&user, acl.as_ref(), resource, actions, ip)
            .map_err(|d| ProxyError::Unauthorized(d.0))?;
    }
    Ok(())
}

/// A lookup that failed (no broker answered, ...): logged, answered with Apache's text.
fn failed(text: &str, e: &ProxyError) -> ProxyError {
    tracing::warn!("ACL 2.0: {e}");
    ProxyError::Unauthorized(text.to_owned())
}

async fn user(proxy: &Arc<Proxy>, username: &str) -> Result<Option<User>, ProxyError> {
    cached(
        proxy,
        |a| &a.users,
        username,
        |p, name| async move {
            let start = p.acl2.next_broker.fetch_add(1, Ordering::Relaxed);
            let creds = p.acl2.cfg.inner_credentials.as_ref();
            fetch::user(&p.pool, &p.cfg.namesrv_addr, start, creds, &name).await
        },
    )
    .await
}

async fn acl(proxy: &Arc<Proxy>, subject: &str) -> Result<Option<Acl>, ProxyError> {
    cached(
        proxy,
        |a| &a.acls,
        subject,
        |p, subject| async move {
            let start = p.acl2.next_broker.fetch_add(1, Ordering::Relaxed);
            let creds = p.acl2.cfg.inner_credentials.as_ref();
            fetch::acl(&p.pool, &p.cfg.namesrv_addr, start, creds, &subject).await
        },
    )
    .await
}

/// `key` from the cache `which`: a miss is loaded now; an answer due for refresh is used while a
/// task loads it again (a failed refresh keeps the old answer, as Guava's `refreshAfterWrite`).
async fn cached<V, F, Fut>(
    proxy: &Arc<Proxy>,
    which: fn(&Acl2) -> &Cache<V>,
    key: &str,
    load: F,
) -> Result<Option<V>, ProxyError>
where
    V: Clone + Send + 'static,
    F: FnOnce(Arc<Proxy>, String) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Option<V>, ProxyError>> + Send,
{
    match which(&proxy.acl2).lookup(key, Instant::now()) {
        Lookup::Hit(v) => Ok(v),
        Lookup::Refresh(v) => {
            let (p, key) = (proxy.clone(), key.to_owned());
            tokio::spawn(async move {
                match load(p.clone(), key.clone()).await {
                    Ok(fresh) => which(&p.acl2).put(&key, fresh, Instant::now()),
                    Err(e) => {
                        tracing::warn!("ACL 2.0: refreshing {key}: {e}");
                        which(&p.acl2).refresh_failed(&key);
                    }
                }
            });
            Ok(v)
        }
        Lookup::Miss => {
            let fresh = load(proxy.clone(), key.to_owned()).await?;
            which(&proxy.acl2).put(key, fresh.clone(), Instant::now());
            Ok(fresh)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProxyConfig;
    use crate::pb;
    use crate::remoting::Pool;
    use auth::{Action, Decision, Policy, PolicyEntry, PolicyType, Resource, UserType};
    use protocol::signature::hmac_sha1;

    /// A proxy whose caches already hold alice (Pub on Topic:t), bob (disabled), root (Super) and
    /// "nobody" (not found): no broker is asked.
    fn proxy() -> Arc<Proxy> {
        let mut cfg = ProxyConfig::default();
        cfg.auth.authentication_enabled = true;
        cfg.auth.authorization_enabled = true;
        cfg.auth.authorization_whitelist = vec!["apache.rocketmq.v2.HeartbeatRequest".into()];
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let p = Arc::new(Proxy::new(cfg, Pool::new(Duration::from_secs(1), tx), None));
        let now = Instant::now();
        let user = |name: &str, user_type, status| User {
            username: name.into(),
            password: format!("{name}-pw"),
            user_type,
            status,
        };
        let users = &p.acl2.users;
        users.put(
            "alice",
            Some(user("alice", UserType::Normal, UserStatus::Enable)),
            now,
        );
        users.put(
            "bob",
            Some(user("bob", UserType::Normal, UserStatus::Disable)),
            now,
        );
        users.put(
            "root",
            Some(user("root", UserType::Super, UserStatus::Enable)),
            now,
        );
        users.put("nobody", None, now);
        let acl = Acl {
            subject: "User:alice".into(),
            policies: vec![Policy {
                policy_type: PolicyType::Custom,
                entries: vec![PolicyEntry {
                    resource: Resource::topic("t"),
                    actions: vec![Action::Pub],
                    source_ips: vec!["10.0.0.0/8".into()],
                    decision: Decision::Allow,
                }],
            }],
        };
        p.acl2.acls.put("User:alice", Some(acl), now);
        p.acl2.acls.put("User:root", None, now);
        p
    }

    fn md(user: &str, password: &str) -> MetadataMap {
        let date = "20261207T040000Z";
        let sig: String = hmac_sha1(password.as_bytes(), date.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut m = MetadataMap::new();
        let auth = format!(
            "MQv2-HMAC-SHA1 Credential={user}, SignedHeaders=x-mq-date-time, Signature={sig}"
        );
        if let (Ok(a), Ok(d)) = (auth.parse(), date.parse()) {
            m.insert("authorization", a);
            m.insert("x-mq-date-time", d);
        }
        m
    }

    fn send(topic: &str) -> pb::SendMessageRequest {
        pb::SendMessageRequest {
            messages: vec![pb::Message {
                topic: Some(pb::Resource {
                    name: topic.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
        }
    }

    fn refusal(r: Result<(), ProxyError>) -> String {
        match r {
            Ok(()) => "allowed".into(),
            Err(e) => {
                assert_eq!(e.code(), pb::Code::Unauthorized);
                e.to_string()
            }
        }
    }

    use std::time::Duration;

    #[tokio::test]
    async fn requests_are_authenticated_then_authorized_from_the_clients_ip() {
        let p = proxy();
        let inside: Option<SocketAddr> = "10.1.2.3:5000".parse().ok();
        let outside: Option<SocketAddr> = "192.168.1.1:5000".parse().ok();
        let alice = md("alice", "alice-pw");
        assert_eq!(
            refusal(check(&p, &alice, inside, &send("t")).await),
            "allowed"
        );
        assert_eq!(
            refusal(check(&p, &alice, outside, &send("t")).await),
            "User:alice has no permission to access Topic:t from 192.168.1.1, no matched policies."
        );
        assert_eq!(
            refusal(check(&p, &alice, inside, &send("u")).await),
            "User:alice has no permission to access Topic:u from 10.1.2.3, no matched policies."
        );
        assert_eq!(
            refusal(check(&p, &md("alice", "wrong"), inside, &send("t")).await),
            "check signature failed."
        );
        assert_eq!(
            refusal(check(&p, &MetadataMap::new(), inside, &send("t")).await),
            "username cannot be null."
        );
        assert_eq!(
            refusal(check(&p, &md("bob", "bob-pw"), inside, &send("t")).await),
            "User:bob is disabled."
        );
        assert_eq!(
            refusal(check(&p, &md("nobody", "x"), inside, &send("t")).await),
            "User:nobody is not found."
        );
        assert_eq!(
            refusal(check(&p, &md("root", "root-pw"), outside, &send("any")).await),
            "allowed"
        );
        // Whitelisted for authorization: a consumer's heartbeat of a group alice has no policy for.
        let heartbeat = pb::HeartbeatRequest {
            group: Some(pb::Resource {
                name: "g".into(),
                ..Default::default()
            }),
            client_type: pb::ClientType::SimpleConsumer as i32,
        };
        assert_eq!(
            refusal(check(&p, &alice, inside, &heartbeat).await),
            "allowed"
        );
        // An IPv4 client seen through an IPv6 socket is matched by its IPv4 address.
        let mapped: Option<SocketAddr> = "[::ffff:10.0.0.9]:1".parse().ok();
        assert_eq!(
            refusal(check(&p, &alice, mapped, &send("t")).await),
            "allowed"
        );
    }
}

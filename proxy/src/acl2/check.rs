//! The checks of one gRPC request: authentication, then authorization, with users and ACLs from
//! the brokers through the caches.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use auth::{Acl, User, UserStatus};
use tonic::metadata::MetadataMap;

use super::cache::Lookup;
use super::request::{self, AuthRequest};
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
    let acl2 = &proxy.acl2;
    let load = |p: Arc<Proxy>, name: String| async move {
        let start = p.acl2.next_broker.fetch_add(1, Ordering::Relaxed);
        let creds = p.acl2.cfg.inner_credentials.as_ref();
        fetch::user(&p.pool, &p.cfg.namesrv_addr, start, creds, &name).await
    };
    match acl2.users.lookup(username, Instant::now()) {
        Lookup::Hit(v) => Ok(v),
        Lookup::Refresh(v) => {
            let (p, name) = (proxy.clone(), username.to_owned());
            tokio::spawn(async move {
                match load(p.clone(), name.clone()).await {
                    Ok(fresh) => p.acl2.users.put(&name, fresh, Instant::now()),
                    Err(e) => {
                        tracing::warn!("ACL 2.0: refreshing user {name}: {e}");
                        p.acl2.users.refresh_failed(&name);
                    }
                }
            });
            Ok(v)
        }
        Lookup::Miss => {
            let fresh = load(proxy.clone(), username.to_owned()).await?;
            acl2.users.put(username, fresh.clone(), Instant::now());
            Ok(fresh)
        }
    }
}

async fn acl(proxy: &Arc<Proxy>, subject: &str) -> Result<Option<Acl>, ProxyError> {
    let acl2 = &proxy.acl2;
    let load = |p: Arc<Proxy>, subject: String| async move {
        let start = p.acl2.next_broker.fetch_add(1, Ordering::Relaxed);
        let creds = p.acl2.cfg.inner_credentials.as_ref();
        fetch::acl(&p.pool, &p.cfg.namesrv_addr, start, creds, &subject).await
    };
    match acl2.acls.lookup(subject, Instant::now()) {
        Lookup::Hit(v) => Ok(v),
        Lookup::Refresh(v) => {
            let (p, key) = (proxy.clone(), subject.to_owned());
            tokio::spawn(async move {
                match load(p.clone(), key.clone()).await {
                    Ok(fresh) => p.acl2.acls.put(&key, fresh, Instant::now()),
                    Err(e) => {
                        tracing::warn!("ACL 2.0: refreshing the ACL of {key}: {e}");
                        p.acl2.acls.refresh_failed(&key);
                    }
                }
            });
            Ok(v)
        }
        Lookup::Miss => {
            let fresh = load(proxy.clone(), subject.to_owned()).await?;
            acl2.acls.put(subject, fresh.clone(), Instant::now());
            Ok(fresh)
        }
    }
}

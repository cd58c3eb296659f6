//! ACL 2.0 (`authenticationEnabled`, `authorizationEnabled`): every request a connection of this
//! shard receives is authenticated (its AccessKey names an enabled user whose password signed it)
//! and authorized (its user's ACL allows what it asks, `resources`) before it is processed, against
//! this shard's copy of the users and ACLs (`Shard::auth`). Refusals answer NO_PERMISSION with
//! Apache's text. Users are made at start by `bootstrap`.

pub mod bootstrap;
pub mod resources;

use std::net::SocketAddr;

use auth::evaluate::authorize;
use auth::{User, UserStatus};
use protocol::response_code as rc;
use protocol::signature::{signed_content, verify, ACCESS_KEY, SIGNATURE};
use protocol::RemotingCommand;

use crate::config::auth::AuthConfig;
use crate::shard::Shard;
use crate::state::auth_metadata::AuthMetadata;

/// `None` when `req` may proceed; otherwise the NO_PERMISSION answer with the reason.
pub fn check(shard: &Shard, req: &RemotingCommand, peer: SocketAddr) -> Option<RemotingCommand> {
    let cfg = &shard.cfg.auth;
    if !cfg.enforced() {
        return None;
    }
    let metadata = shard.auth.borrow();
    let verdict = authenticate(cfg, &metadata, req).and_then(|()| {
        authorize_request(
            cfg,
            &metadata,
            req,
            &peer.ip().to_string(),
            &shard.cfg.broker_cluster_name,
        )
    });
    match verdict {
        Ok(()) => None,
        Err(reason) => {
            tracing::debug!("ACL 2.0 refused code {} from {peer}: {reason}", req.code);
            Some(RemotingCommand::response(rc::NO_PERMISSION, Some(reason)))
        }
    }
}

/// Apache's `DefaultAuthenticationHandler`: the user named by the AccessKey exists, is enabled, and
/// signed the request with its password.
pub fn authenticate(
    cfg: &AuthConfig,
    metadata: &AuthMetadata,
    req: &RemotingCommand,
) -> Result<(), String> {
    if !cfg.authentication_enabled || cfg.authentication_whitelist.contains(&req.code) {
        return Ok(());
    }
    let username = req.ext(ACCESS_KEY).unwrap_or_default();
    if username.is_empty() {
        return Err("username cannot be null.".to_owned());
    }
    let user = metadata
        .users
        .get(username)
        .ok_or_else(|| format!("User:{username} is not found."))?;
    if user.status == UserStatus::Disable {
        return Err(format!("User:{username} is disabled."));
    }
    let signature = req.ext(SIGNATURE).unwrap_or_default();
    if !verify(&signed_content(req), &user.password, signature) {
        return Err("check signature failed.".to_owned());
    }
    Ok(())
}

/// Apache's `UserAuthorizationHandler` then `AclAuthorizationHandler`, for every resource `req`
/// touches from `source_ip`.
pub fn authorize_request(
    cfg: &AuthConfig,
    metadata: &AuthMetadata,
    req: &RemotingCommand,
    source_ip: &str,
    cluster: &str,
) -> Result<(), String> {
    if !cfg.authorization_enabled || cfg.authorization_whitelist.contains(&req.code) {
        return Ok(());
    }
    let needs = resources::needs(req, cluster)
        .map_err(|e| format!("parse authorization context error: {e}"))?;
    if needs.is_empty() {
        return Ok(());
    }
    let username = req.ext(ACCESS_KEY).unwrap_or_default();
    if username.is_empty() {
        // Apache fails on the missing subject with this generic text.
        return Err(
            "Authorization failed. Please verify your access rights and try again.".to_owned(),
        );
    }
    let user: &User = metadata
        .users
        .get(username)
        .ok_or_else(|| format!("User:{username} not found."))?;
    if user.status == UserStatus::Disable {
        return Err(format!("User:{username} is disabled."));
    }
    let acl = metadata.acls.get(&user.subject());
    for (resource, actions) in &needs {
        authorize(user, acl, resource, actions, source_ip).map_err(|d| d.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use auth::body::{AclInfo, UserInfo};
    use protocol::request_code as code;
    use protocol::signature::sign;

    fn metadata() -> AuthMetadata {
        let users: Vec<UserInfo> = serde_json::from_str(
            r#"[{"username":"alice","password":"pw-a","userType":"Normal","userStatus":"enable"},
                {"username":"root","password":"pw-r","userType":"Super"},
                {"username":"off","password":"pw-o","userStatus":"disable"}]"#,
        )
        .unwrap();
        let acls: Vec<AclInfo> = serde_json::from_str(
            r#"[{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
                {"resource":"Topic:orders","actions":["Pub"],"sourceIps":["127.0.0.1"],"decision":"Allow"},
                {"resource":"Topic:secret*","actions":["All"],"decision":"Deny"},
                {"resource":"Topic:pay*","actions":["Pub","Sub"],"decision":"Allow"}]}]}]"#,
        )
        .unwrap();
        AuthMetadata::from_infos(users, acls).unwrap()
    }

    fn signed(mut req: RemotingCommand, user: &str, password: &str) -> RemotingCommand {
        req.set_ext(ACCESS_KEY, user);
        let sig = sign(&signed_content(&req), password);
        req.set_ext(SIGNATURE, &sig);
        req
    }

    fn send(topic: &str) -> RemotingCommand {
        RemotingCommand::request(code::SEND_MESSAGE_V2).with_ext("b", topic)
    }

    fn both() -> AuthConfig {
        AuthConfig {
            authentication_enabled: true,
            authorization_enabled: true,
            ..AuthConfig::default()
        }
    }

    fn decide(cfg: &AuthConfig, req: &RemotingCommand, ip: &str) -> Result<(), String> {
        let m = metadata();
        authenticate(cfg, &m, req).and_then(|()| authorize_request(cfg, &m, req, ip, "C"))
    }

    #[test]
    fn authentication_refuses_what_apache_refuses() {
        let cfg = both();
        let err = |r: Result<(), String>| r.unwrap_err();
        assert_eq!(
            err(decide(&cfg, &send("orders"), "127.0.0.1")),
            "username cannot be null."
        );
        assert_eq!(
            err(decide(
                &cfg,
                &signed(send("orders"), "bob", "x"),
                "127.0.0.1"
            )),
            "User:bob is not found."
        );
        assert_eq!(
            err(decide(
                &cfg,
                &signed(send("orders"), "off", "pw-o"),
                "127.0.0.1"
            )),
            "User:off is disabled."
        );
        assert_eq!(
            err(decide(
                &cfg,
                &signed(send("orders"), "alice", "wrong"),
                "127.0.0.1"
            )),
            "check signature failed."
        );
        assert!(decide(&cfg, &signed(send("orders"), "alice", "pw-a"), "127.0.0.1").is_ok());
        // A whitelisted code is not authenticated.
        let open = AuthConfig {
            authentication_whitelist: vec![code::SEND_MESSAGE_V2],
            authorization_enabled: false,
            ..both()
        };
        assert!(decide(&open, &send("orders"), "127.0.0.1").is_ok());
    }

    #[test]
    fn authorization_follows_the_acl() {
        let cfg = both();
        let alice = |req, ip| decide(&cfg, &signed(req, "alice", "pw-a"), ip);
        // An entry with source IPs matches only requests from them.
        assert!(alice(send("orders"), "127.0.0.1").is_ok());
        let err = alice(send("orders"), "10.0.0.9").unwrap_err();
        assert!(err.contains("no matched policies"), "{err}");
        assert!(alice(send("payments"), "10.0.0.9").is_ok());
        // Deny on a prefix wins over the broader allow.
        assert!(alice(send("secret-plans"), "127.0.0.1").is_err());
        // No entry for the group: a pull is refused.
        let pull = RemotingCommand::request(code::PULL_MESSAGE)
            .with_ext("topic", "payments")
            .with_ext("consumerGroup", "g1");
        assert!(alice(pull, "127.0.0.1").is_err());
        // Cluster admin needs a Cluster entry; a super user needs none.
        let create = RemotingCommand::request(code::AUTH_CREATE_USER).with_ext("username", "eve");
        assert!(alice(create.clone(), "127.0.0.1").is_err());
        assert!(decide(&cfg, &signed(create, "root", "pw-r"), "127.0.0.1").is_ok());
    }
}

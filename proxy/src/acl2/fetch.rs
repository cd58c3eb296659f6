//! Users and ACLs from the brokers, as Apache's proxy reads them in cluster mode: AUTH_GET_USER
//! (3004) and AUTH_GET_ACL (3009) to a master broker (the brokers of a cluster hold the same users and
//! ACLs: `mqadmin createUser -c` writes to each), signed with the proxy's inner credentials.

use auth::body::{AclInfo, UserInfo};
use auth::{Acl, User, UserStatus, UserType};
use protocol::body::{from_json, ClusterInfo};
use protocol::signature::Credentials;
use protocol::{request_code, response_code, RemotingCommand};

use crate::remoting::Pool;
use crate::status::ProxyError;

/// The master brokers the name servers know (any replica of a group without a master), in a
/// rotating order so that the load spreads.
async fn brokers(pool: &Pool, namesrv: &[String], start: usize) -> Result<Vec<String>, ProxyError> {
    let mut last = ProxyError::Unavailable("no name server configured".into());
    for addr in namesrv {
        let cmd = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
        match pool.invoke(addr, cmd, None, None).await {
            Ok(resp) if resp.code == response_code::SUCCESS => {
                let info: ClusterInfo = from_json(&resp.body).map_err(|e| {
                    ProxyError::Internal(format!("bad cluster info from {addr}: {e}"))
                })?;
                let mut addrs: Vec<String> = info
                    .broker_addr_table
                    .values()
                    .filter_map(|b| {
                        b.master_addr()
                            .or_else(|| b.broker_addrs.values().next().map(String::as_str))
                    })
                    .map(str::to_owned)
                    .collect();
                if addrs.is_empty() {
                    return Err(ProxyError::Unavailable(format!(
                        "name server {addr} knows no broker to read users and ACLs from"
                    )));
                }
                let n = addrs.len();
                addrs.rotate_left(start % n);
                return Ok(addrs);
            }
            Ok(resp) => last = ProxyError::from_remoting(&resp, "cluster info"),
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}

/// Sends `cmd` to the brokers in turn until one answers; its SUCCESS body (empty: none).
async fn ask(
    pool: &Pool,
    namesrv: &[String],
    start: usize,
    cmd: RemotingCommand,
    creds: Option<&Credentials>,
    what: &str,
) -> Result<Option<bytes::Bytes>, ProxyError> {
    let mut last = ProxyError::Unavailable(format!("no broker answered for {what}"));
    for addr in brokers(pool, namesrv, start).await? {
        match pool.invoke(&addr, cmd.clone(), creds, None).await {
            Ok(resp) if resp.code == response_code::SUCCESS => {
                return Ok((!resp.body.is_empty()).then_some(resp.body));
            }
            Ok(resp) => return Err(ProxyError::from_remoting(&resp, what)),
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}

/// The user named `username`, `None` when the brokers have none.
pub async fn user(
    pool: &Pool,
    namesrv: &[String],
    start: usize,
    creds: Option<&Credentials>,
    username: &str,
) -> Result<Option<User>, ProxyError> {
    let cmd = RemotingCommand::request(request_code::AUTH_GET_USER).with_ext("username", username);
    let what = format!("user {username}");
    let Some(body) = ask(pool, namesrv, start, cmd, creds, &what).await? else {
        return Ok(None);
    };
    let info: UserInfo = from_json(&body)
        .map_err(|e| ProxyError::Internal(format!("bad answer for {what}: {e}")))?;
    to_user(&info).map(Some).map_err(ProxyError::Internal)
}

/// The ACL of `subject` (`User:NAME`), `None` when the brokers have none.
pub async fn acl(
    pool: &Pool,
    namesrv: &[String],
    start: usize,
    creds: Option<&Credentials>,
    subject: &str,
) -> Result<Option<Acl>, ProxyError> {
    let cmd = RemotingCommand::request(request_code::AUTH_GET_ACL).with_ext("subject", subject);
    let what = format!("ACL of {subject}");
    let Some(body) = ask(pool, namesrv, start, cmd, creds, &what).await? else {
        return Ok(None);
    };
    let info: AclInfo = from_json(&body)
        .map_err(|e| ProxyError::Internal(format!("bad answer for {what}: {e}")))?;
    to_acl(subject, &info).map_err(ProxyError::Internal)
}

/// A `UserInfo` as the broker answers it (type and status default to Normal and enabled).
pub fn to_user(info: &UserInfo) -> Result<User, String> {
    let username = info
        .username
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or("a user without a username")?;
    Ok(User {
        username,
        password: info.password.clone().unwrap_or_default(),
        user_type: nonblank(info.user_type.as_deref())
            .map(UserType::parse)
            .transpose()?
            .unwrap_or(UserType::Normal),
        status: nonblank(info.user_status.as_deref())
            .map(UserStatus::parse)
            .transpose()?
            .unwrap_or(UserStatus::Enable),
    })
}

fn nonblank(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.trim().is_empty())
}

/// An `AclInfo` as the broker answers it; one without policies is no ACL.
pub fn to_acl(subject: &str, info: &AclInfo) -> Result<Option<Acl>, String> {
    let named = AclInfo {
        subject: Some(subject.to_owned()),
        ..info.clone()
    };
    let (_, policies) = named.to_request()?;
    if policies.is_empty() {
        return Ok(None);
    }
    Ok(Some(Acl {
        subject: subject.to_owned(),
        policies,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brokers_answers_become_users_and_acls() {
        let info: UserInfo = serde_json::from_str(
            r#"{"password":"pw","userStatus":"disable","userType":"Super","username":"alice"}"#,
        )
        .unwrap();
        let u = to_user(&info).unwrap();
        assert_eq!(u.user_type, UserType::Super);
        assert_eq!(u.status, UserStatus::Disable);
        assert_eq!(u.password, "pw");
        assert!(to_user(&UserInfo::default()).is_err());
        let info: AclInfo = serde_json::from_str(
            r#"{"policies":[{"entries":[{"actions":["Pub"],"decision":"Deny","resource":"Topic:t"}],"policyType":"Custom"}],"subject":"User:alice"}"#,
        )
        .unwrap();
        let acl = to_acl("User:alice", &info).unwrap().unwrap();
        assert_eq!(acl.policies.len(), 1);
        assert_eq!(to_acl("User:alice", &AclInfo::default()), Ok(None));
    }
}

//! ACL 2.0's admin requests on the control shard: AUTH_CREATE_USER .. AUTH_LIST_ACL (3001-3010), with
//! Apache's checks, answers and texts (its `AdminBrokerProcessor`); every change is written to
//! `config/auth.json` before it is answered. A slave refuses changes: it copies its master's users and
//! ACLs. Every shard checks requests against them (`feature::acl2`) when `authenticationEnabled` /
//! `authorizationEnabled` are on.

use std::rc::Rc;

use auth::body::{AclInfo, UserInfo};
use auth::{Acl, PolicyType, Resource, User, UserType};
use protocol::header::{
    AclRequestHeader, CommandHeader, DeleteAclRequestHeader, ListAclsRequestHeader,
    ListUsersRequestHeader, UserRequestHeader,
};
use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, header_error, ok};
use crate::config::BrokerRole;
use crate::shard::Shard;
use crate::state::auth_metadata::{AuthMetadata, AUTH_FILE};

/// SUCCESS with `body` as JSON (get and list answers).
fn json_ok(body: &impl serde::Serialize) -> RemotingCommand {
    ok().with_body(serde_json::to_vec(body).unwrap_or_default())
}

/// An auth refusal: NO_PERMISSION with the reason, as Apache answers its auth exceptions.
fn refused(why: impl Into<String>) -> RemotingCommand {
    error(rc::NO_PERMISSION, why)
}

/// Every shard-broker of this process reaches the one set of users and ACLs, and Apache's `mqadmin -c`
/// sends a change to each: a repeat of what a sibling just did is done, not refused.
fn repeats_through_siblings(shard: &Shard) -> bool {
    shard.cfg.shards_are_brokers(shard.shards)
}

fn metadata(shard: &Shard) -> Option<&std::cell::RefCell<AuthMetadata>> {
    shard.control.as_ref().map(|_| &shard.auth)
}

/// Whether the request is signed by someone other than a super user (Apache: unsigned requests are
/// let through, since authentication may be off).
fn signed_by_non_super(shard: &Shard, req: &RemotingCommand) -> bool {
    let Some(access_key) = req.ext("AccessKey").filter(|k| !k.is_empty()) else {
        return false;
    };
    metadata(shard).is_none_or(|m| {
        m.borrow()
            .users
            .get(access_key)
            .is_none_or(|u| u.user_type != UserType::Super)
    })
}

/// Applies `change` to a copy of the metadata, writes it, then keeps it; the answer says which.
async fn change(
    shard: &Rc<Shard>,
    change: impl FnOnce(&mut AuthMetadata) -> Result<(), RemotingCommand>,
) -> RemotingCommand {
    let Some(ctl) = shard.control.as_ref() else {
        return error(rc::SYSTEM_ERROR, "not the control shard");
    };
    if shard.role() == BrokerRole::Slave {
        return error(
            rc::SYSTEM_ERROR,
            "users and ACLs cannot be changed on a slave broker (it copies its master's); send the \
             request to the master",
        );
    }
    let Ok(_permit) = ctl.persist_lock.acquire_permit(1).await else {
        return error(rc::SYSTEM_ERROR, "the broker is shutting down");
    };
    let mut next = shard.auth.borrow().clone();
    if let Err(answer) = change(&mut next) {
        return answer;
    }
    if let Err(e) = crate::role::control::store_auth(shard, next).await {
        tracing::error!("cannot write {AUTH_FILE}: {e}");
        return error(
            rc::SYSTEM_ERROR,
            format!("the change was not stored ({AUTH_FILE}: {e}); nothing changed"),
        );
    }
    ok()
}

fn username(req: &RemotingCommand) -> Result<String, RemotingCommand> {
    let h = UserRequestHeader::from_ext_fields(&req.ext_fields).map_err(|e| header_error(&e))?;
    h.username
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| error(rc::INVALID_PARAMETER, "The username is blank"))
}

fn user_body(req: &RemotingCommand, name: &str) -> Result<UserInfo, RemotingCommand> {
    let mut info: UserInfo = if req.body.is_empty() {
        UserInfo::default()
    } else {
        serde_json::from_slice(&req.body)
            .map_err(|e| error(rc::SYSTEM_ERROR, format!("bad UserInfo body: {e}")))?
    };
    info.username = Some(name.to_owned());
    Ok(info)
}

pub async fn create_user(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let (name, info) = match username(req).and_then(|n| user_body(req, &n).map(|b| (n, b))) {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let wanted = match info.to_change() {
        Ok(c) => c,
        Err(why) => return refused(why),
    };
    if wanted.user_type == Some(UserType::Super) && signed_by_non_super(shard, req) {
        return error(
            rc::SYSTEM_ERROR,
            "The super user can only be create by super user",
        );
    }
    let siblings = repeats_through_siblings(shard);
    change(shard, |m| {
        if let (true, Some(old)) = (siblings, m.users.get(&name)) {
            if User::create(&wanted, None).as_ref() == Ok(old) {
                return Ok(());
            }
        }
        let user = User::create(&wanted, m.users.get(&name)).map_err(refused)?;
        m.users.insert(name, user);
        Ok(())
    })
    .await
}

pub async fn update_user(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let (name, info) = match username(req).and_then(|n| user_body(req, &n).map(|b| (n, b))) {
        Ok(v) => v,
        Err(answer) => return answer,
    };
    let wanted = match info.to_change() {
        Ok(c) => c,
        Err(why) => return refused(why),
    };
    let non_super = signed_by_non_super(shard, req);
    if wanted.user_type == Some(UserType::Super) && non_super {
        return error(
            rc::SYSTEM_ERROR,
            "The super user can only be update by super user",
        );
    }
    change(shard, |m| {
        let old = m.users.get(&name);
        if old.is_some_and(|u| u.user_type == UserType::Super) && non_super {
            return Err(refused("The super user can only be update by super user"));
        }
        let user = User::update(&wanted, old).map_err(refused)?;
        m.users.insert(name, user);
        Ok(())
    })
    .await
}

/// Deletes the user and its ACL; an absent user is no error.
pub async fn delete_user(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let name = match username(req) {
        Ok(n) => n,
        Err(_) => return refused("username can not be blank"),
    };
    let non_super = signed_by_non_super(shard, req);
    change(shard, |m| {
        let Some(user) = m.users.get(&name) else {
            return Ok(());
        };
        if user.user_type == UserType::Super && non_super {
            return Err(refused("The super user can only be update by super user"));
        }
        let subject = user.subject();
        m.users.remove(&name);
        m.acls.remove(&subject);
        Ok(())
    })
    .await
}

/// The user as a `UserInfo`, or an empty body when there is none.
pub fn get_user(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let name = match username(req) {
        Ok(n) => n,
        Err(answer) => return answer,
    };
    let Some(m) = metadata(shard) else {
        return ok();
    };
    match m.borrow().users.get(&name) {
        Some(u) => json_ok(&UserInfo::from_user(u)),
        None => ok(),
    }
}

/// Users whose name contains the filter, as a JSON list (no body when none).
pub fn list_users(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match ListUsersRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let filter = h.filter.unwrap_or_default();
    let Some(m) = metadata(shard) else {
        return ok();
    };
    let users: Vec<UserInfo> = m
        .borrow()
        .users
        .values()
        .filter(|u| filter.trim().is_empty() || u.username.contains(filter.as_str()))
        .map(UserInfo::from_user)
        .collect();
    if users.is_empty() {
        return ok();
    }
    json_ok(&users)
}

/// AUTH_CREATE_ACL and AUTH_UPDATE_ACL (alike, as in Apache): the body's policies merged into the
/// subject's ACL; the subject must be a user.
pub async fn create_or_update_acl(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match AclRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let mut info: AclInfo = match serde_json::from_slice(&req.body) {
        Ok(i) => i,
        Err(_) => return error(rc::SYSTEM_ERROR, "The body of acl is null"),
    };
    if info.policies.as_ref().is_none_or(Vec::is_empty) {
        return error(rc::SYSTEM_ERROR, "The body of acl is null");
    }
    if info.subject.as_deref().is_none_or(str::is_empty) {
        info.subject = h.subject;
    }
    let (subject, policies) = match info.to_request() {
        Ok(v) => v,
        Err(why) => return refused(why),
    };
    change(shard, |m| {
        let user = subject.strip_prefix("User:").unwrap_or_default();
        if !m.users.contains_key(user) {
            return Err(refused(format!("The subject of {subject} is not exist.")));
        }
        let acl = Acl::apply(&subject, m.acls.get(&subject), policies).map_err(refused)?;
        m.acls.insert(subject, acl);
        Ok(())
    })
    .await
}

/// The subject's whole ACL, or one resource's entry of one policy type.
pub async fn delete_acl(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    let h = match DeleteAclRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let Some(subject) = h.subject.filter(|s| !s.trim().is_empty()) else {
        return refused("The subject is null.");
    };
    let policy_type = match h.policy_type.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(t) => match PolicyType::parse(t) {
            Ok(t) => Some(t),
            Err(why) => return refused(why),
        },
        None => None,
    };
    let resource = match h.resource.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(r) => match Resource::parse(r) {
            Ok(r) => Some(r),
            Err(why) => return refused(why),
        },
        None => None,
    };
    let siblings = repeats_through_siblings(shard);
    change(shard, |m| {
        let user = subject.strip_prefix("User:").unwrap_or_default();
        if !m.users.contains_key(user) {
            return Err(refused("The subject is not exist."));
        }
        let Some(acl) = m.acls.get(&subject) else {
            if siblings {
                return Ok(());
            }
            return Err(refused("The acl is not exist."));
        };
        match acl.delete(policy_type, resource.as_ref()) {
            Some(rest) => m.acls.insert(subject, rest),
            None => m.acls.remove(&subject),
        };
        Ok(())
    })
    .await
}

/// The subject's ACL as an `AclInfo`, or an empty body when there is none.
pub fn get_acl(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match AclRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let subject = h.subject.unwrap_or_default();
    let Some(m) = metadata(shard) else {
        return ok();
    };
    match m.borrow().acls.get(&subject) {
        Some(acl) => json_ok(&AclInfo::from_acl(acl)),
        None => ok(),
    }
}

/// ACLs whose subject contains `subjectFilter`, keeping only the entries whose resource contains
/// `resourceFilter` (Apache's `listAcl`; an ACL left without entries is not listed).
pub fn list_acls(shard: &Shard, req: &RemotingCommand) -> RemotingCommand {
    let h = match ListAclsRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return header_error(&e),
    };
    let subject_filter = h.subject_filter.unwrap_or_default();
    let resource_filter = h.resource_filter.unwrap_or_default();
    let Some(m) = metadata(shard) else {
        return ok();
    };
    let mut out = Vec::new();
    for (subject, acl) in &m.borrow().acls {
        if !subject_filter.trim().is_empty() && !subject.contains(subject_filter.as_str()) {
            continue;
        }
        let mut acl = acl.clone();
        if !resource_filter.trim().is_empty() && !subject.contains(resource_filter.as_str()) {
            for p in &mut acl.policies {
                p.entries
                    .retain(|e| e.resource.key().contains(resource_filter.as_str()));
            }
            acl.policies.retain(|p| !p.entries.is_empty());
        }
        if !acl.policies.is_empty() {
            out.push(AclInfo::from_acl(&acl));
        }
    }
    if out.is_empty() {
        return ok();
    }
    json_ok(&out)
}

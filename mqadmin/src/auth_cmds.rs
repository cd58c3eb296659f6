//! ACL 2.0 user and ACL commands with Apache's names, flags and lines: createUser, updateUser,
//! deleteUser, getUser, listUser, copyUser (AUTH_CREATE_USER .. AUTH_LIST_USER) and createAcl,
//! updateAcl, deleteAcl, getAcl, listAcl, copyAcl (AUTH_CREATE_ACL .. AUTH_LIST_ACL), on one broker
//! (`-b`) or every master of a cluster (`-c`).

use std::time::Duration;

use auth::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use clap::{Args, Subcommand};
use client::request::request;
use client::ClientError;
use protocol::{request_code as code, ExtFields, RemotingCommand};
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::shared_args::{Namesrv, Target};
use crate::table::{Report, Table};

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Create an ACL 2.0 user on a broker or every master of a cluster.
    #[command(name = "createUser")]
    CreateUser(UserArgs),
    /// Change a user's password, type or status.
    #[command(name = "updateUser")]
    UpdateUser(UserArgs),
    /// Delete a user (and its ACL).
    #[command(name = "deleteUser")]
    DeleteUser(UserArgs),
    /// One user.
    #[command(name = "getUser")]
    GetUser(UserArgs),
    /// The users whose name contains the filter.
    #[command(name = "listUser")]
    ListUser(ListUserArgs),
    /// Copy users from one broker to another.
    #[command(name = "copyUser")]
    CopyUser(CopyArgs),
    /// Add entries to a subject's ACL (one per resource).
    #[command(name = "createAcl")]
    CreateAcl(AclArgs),
    /// Change entries of a subject's ACL (one per resource).
    #[command(name = "updateAcl")]
    UpdateAcl(AclArgs),
    /// Delete a subject's ACL, or its entries for the resources given.
    #[command(name = "deleteAcl")]
    DeleteAcl(AclArgs),
    /// One subject's ACL.
    #[command(name = "getAcl")]
    GetAcl(AclArgs),
    /// ACLs by subject and resource filters.
    #[command(name = "listAcl")]
    ListAcl(ListAclArgs),
    /// Copy ACLs from one broker to another.
    #[command(name = "copyAcl")]
    CopyAcl(CopyArgs),
}

#[derive(Debug, Args)]
pub struct UserArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'u', long = "username")]
    pub username: String,
    #[arg(short = 'p', long = "password")]
    pub password: Option<String>,
    /// Super or Normal
    #[arg(short = 't', long = "userType")]
    pub user_type: Option<String>,
    /// enable or disable
    #[arg(short = 's', long = "userStatus")]
    pub user_status: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListUserArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 'f', long = "filter")]
    pub filter: Option<String>,
}

#[derive(Debug, Args)]
pub struct AclArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    /// User:NAME
    #[arg(short = 's', long = "subject")]
    pub subject: String,
    /// Comma-separated: Topic:orders, Topic:order*, Group:g1, *
    #[arg(short = 'r', long = "resources")]
    pub resources: Option<String>,
    /// Comma-separated: Pub, Sub, Create, Update, Delete, Get, List, All
    #[arg(short = 'a', long = "actions")]
    pub actions: Option<String>,
    /// Comma-separated addresses or CIDR ranges
    #[arg(short = 'i', long = "sourceIp")]
    pub source_ips: Option<String>,
    /// Allow or Deny
    #[arg(short = 'd', long = "decision")]
    pub decision: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListAclArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    #[command(flatten)]
    pub target: Target,
    #[arg(short = 's', long = "subject")]
    pub subject: Option<String>,
    #[arg(short = 'r', long = "resource")]
    pub resource: Option<String>,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    #[command(flatten)]
    pub ns: Namesrv,
    /// The broker to copy from
    #[arg(short = 'f', long = "fromBroker")]
    pub from: String,
    /// The broker to copy to
    #[arg(short = 't', long = "toBroker")]
    pub to: String,
    /// Comma-separated usernames (copyUser) or subjects (copyAcl); all when absent
    #[arg(
        short = 'u',
        long = "usernames",
        visible_short_alias = 's',
        visible_alias = "subjects"
    )]
    pub names: Option<String>,
}

fn split(list: Option<&str>) -> Vec<String> {
    list.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn fields(pairs: &[(&str, Option<&str>)]) -> ExtFields {
    let mut f = ExtFields::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            f.insert(k, v);
        }
    }
    f
}

fn with_json(cmd: RemotingCommand, body: &impl serde::Serialize) -> RemotingCommand {
    cmd.with_body(serde_json::to_vec(body).unwrap_or_default())
}

/// Sends `cmd` to each address; Apache's "<verb> to <addr> success." per broker.
async fn to_each(
    admin: &Admin,
    addrs: &[String],
    cmd: &RemotingCommand,
    verb: &str,
) -> Result<Report, ClientError> {
    let mut table = Table::new(&["Broker Addr", "Result"]);
    let mut lines = Vec::new();
    for addr in addrs {
        admin.call(addr, cmd.clone()).await?;
        table.row(vec![addr.clone(), "success".into()]);
        lines.push(format!("{verb} to {addr} success."));
    }
    Ok(Report::new(table, json!({ "brokers": addrs })).with_footers(lines))
}

/// A JSON answer of a list or get request (no body: nothing).
fn answer<T: serde::de::DeserializeOwned>(
    resp: &RemotingCommand,
) -> Result<Option<T>, ClientError> {
    if resp.body.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&resp.body)
        .map(Some)
        .map_err(|e| ClientError::Invalid(format!("bad answer body: {e}")))
}

fn user_table(users: &[(String, UserInfo)]) -> Report {
    let mut table = Table::new(&["UserName", "Password", "UserType", "UserStatus", "Broker"]);
    let mut rows = Vec::new();
    for (addr, u) in users {
        let cell = |v: &Option<String>| v.clone().unwrap_or_default();
        table.row(vec![
            cell(&u.username),
            cell(&u.password),
            cell(&u.user_type),
            cell(&u.user_status),
            addr.clone(),
        ]);
        rows.push(json!({"broker": addr, "user": u}));
    }
    Report::new(table, Value::Array(rows))
}

fn acl_table(acls: &[(String, AclInfo)]) -> Report {
    let mut table = Table::new(&[
        "Subject",
        "PolicyType",
        "Resource",
        "Actions",
        "SourceIp",
        "Decision",
        "Broker",
    ]);
    let mut rows = Vec::new();
    for (addr, acl) in acls {
        let subject = acl.subject.clone().unwrap_or_default();
        for p in acl.policies.iter().flatten() {
            for e in p.entries.iter().flatten() {
                let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default().join(",");
                table.row(vec![
                    subject.clone(),
                    p.policy_type.clone().unwrap_or_default(),
                    e.resource.clone().unwrap_or_default(),
                    list(&e.actions),
                    list(&e.source_ips),
                    e.decision.clone().unwrap_or_default(),
                    addr.clone(),
                ]);
            }
        }
        rows.push(json!({"broker": addr, "acl": acl}));
    }
    Report::new(table, Value::Array(rows))
}

/// The ACL a createAcl / updateAcl command asks for: one Custom policy, an entry per resource.
fn acl_request(args: &AclArgs) -> Result<AclInfo, ClientError> {
    let resources = split(args.resources.as_deref());
    let actions = split(args.actions.as_deref());
    if resources.is_empty() || actions.is_empty() || args.decision.is_none() {
        return Err(ClientError::Invalid(
            "-r resources, -a actions and -d decision are required".into(),
        ));
    }
    let source_ips = split(args.source_ips.as_deref());
    let entries = resources
        .into_iter()
        .map(|r| PolicyEntryInfo {
            resource: Some(r),
            actions: Some(actions.clone()),
            source_ips: (!source_ips.is_empty()).then(|| source_ips.clone()),
            decision: args.decision.clone(),
        })
        .collect();
    Ok(AclInfo {
        subject: Some(args.subject.clone()),
        policies: Some(vec![PolicyInfo {
            policy_type: None,
            entries: Some(entries),
        }]),
    })
}

async fn addrs(admin: &Admin, target: &Target) -> Result<Vec<String>, ClientError> {
    admin
        .target_addrs(target.broker.as_deref(), target.cluster.as_deref())
        .await
}

pub async fn run(command: AuthCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        AuthCommand::CreateUser(a) => {
            change_user(a, timeout, code::AUTH_CREATE_USER, "create user").await
        }
        AuthCommand::UpdateUser(a) => {
            change_user(a, timeout, code::AUTH_UPDATE_USER, "update user").await
        }
        AuthCommand::DeleteUser(a) => {
            change_user(a, timeout, code::AUTH_DELETE_USER, "delete user").await
        }
        AuthCommand::GetUser(a) => {
            let admin = Admin::new(&a.ns.namesrv, timeout)?;
            let cmd = request(
                code::AUTH_GET_USER,
                fields(&[("username", Some(&a.username))]),
            );
            let mut users = Vec::new();
            for addr in addrs(&admin, &a.target).await? {
                let resp = admin.call(&addr, cmd.clone()).await?;
                if let Some(u) = answer::<UserInfo>(&resp)? {
                    users.push((addr, u));
                }
            }
            Ok(user_table(&users))
        }
        AuthCommand::ListUser(a) => {
            let admin = Admin::new(&a.ns.namesrv, timeout)?;
            let cmd = request(
                code::AUTH_LIST_USER,
                fields(&[("filter", a.filter.as_deref())]),
            );
            let mut users = Vec::new();
            for addr in addrs(&admin, &a.target).await? {
                let resp = admin.call(&addr, cmd.clone()).await?;
                for u in answer::<Vec<UserInfo>>(&resp)?.unwrap_or_default() {
                    users.push((addr.clone(), u));
                }
            }
            Ok(user_table(&users))
        }
        AuthCommand::CopyUser(a) => copy(a, timeout, true).await,
        AuthCommand::CreateAcl(a) => {
            change_acl(a, timeout, code::AUTH_CREATE_ACL, "create acl").await
        }
        AuthCommand::UpdateAcl(a) => {
            change_acl(a, timeout, code::AUTH_UPDATE_ACL, "update acl").await
        }
        AuthCommand::DeleteAcl(a) => {
            let admin = Admin::new(&a.ns.namesrv, timeout)?;
            let targets = addrs(&admin, &a.target).await?;
            let resources = split(a.resources.as_deref());
            let mut report: Option<Report> = None;
            let asks: Vec<Option<String>> = if resources.is_empty() {
                vec![None]
            } else {
                resources.into_iter().map(Some).collect()
            };
            for resource in asks {
                let cmd = request(
                    code::AUTH_DELETE_ACL,
                    fields(&[
                        ("subject", Some(&a.subject)),
                        ("resource", resource.as_deref()),
                    ]),
                );
                let r = to_each(&admin, &targets, &cmd, "delete acl").await?;
                report = Some(match report {
                    None => r,
                    Some(prev) => prev.with_footers(r.footer),
                });
            }
            report.ok_or_else(|| ClientError::Invalid("nothing to delete".into()))
        }
        AuthCommand::GetAcl(a) => {
            let admin = Admin::new(&a.ns.namesrv, timeout)?;
            let cmd = request(code::AUTH_GET_ACL, fields(&[("subject", Some(&a.subject))]));
            let mut acls = Vec::new();
            for addr in addrs(&admin, &a.target).await? {
                let resp = admin.call(&addr, cmd.clone()).await?;
                if let Some(acl) = answer::<AclInfo>(&resp)? {
                    acls.push((addr, acl));
                }
            }
            Ok(acl_table(&acls))
        }
        AuthCommand::ListAcl(a) => {
            let admin = Admin::new(&a.ns.namesrv, timeout)?;
            let cmd = request(
                code::AUTH_LIST_ACL,
                fields(&[
                    ("subjectFilter", a.subject.as_deref()),
                    ("resourceFilter", a.resource.as_deref()),
                ]),
            );
            let mut acls = Vec::new();
            for addr in addrs(&admin, &a.target).await? {
                let resp = admin.call(&addr, cmd.clone()).await?;
                for acl in answer::<Vec<AclInfo>>(&resp)?.unwrap_or_default() {
                    acls.push((addr.clone(), acl));
                }
            }
            Ok(acl_table(&acls))
        }
        AuthCommand::CopyAcl(a) => copy(a, timeout, false).await,
    }
}

async fn change_user(
    a: UserArgs,
    timeout: Duration,
    request_code: i32,
    verb: &str,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&a.ns.namesrv, timeout)?;
    let targets = addrs(&admin, &a.target).await?;
    let mut cmd = request(request_code, fields(&[("username", Some(&a.username))]));
    if request_code != code::AUTH_DELETE_USER {
        let info = UserInfo {
            username: Some(a.username.clone()),
            password: a.password.clone(),
            user_type: a.user_type.clone(),
            user_status: a.user_status.clone(),
        };
        cmd = with_json(cmd, &info);
    }
    to_each(&admin, &targets, &cmd, verb).await
}

async fn change_acl(
    a: AclArgs,
    timeout: Duration,
    request_code: i32,
    verb: &str,
) -> Result<Report, ClientError> {
    let admin = Admin::new(&a.ns.namesrv, timeout)?;
    let targets = addrs(&admin, &a.target).await?;
    let info = acl_request(&a)?;
    let cmd = with_json(
        request(request_code, fields(&[("subject", Some(&a.subject))])),
        &info,
    );
    to_each(&admin, &targets, &cmd, verb).await
}

/// copyUser / copyAcl: what `from` has (the names given, or all) created or updated on `to`.
async fn copy(a: CopyArgs, timeout: Duration, users: bool) -> Result<Report, ClientError> {
    let admin = Admin::new(&a.ns.namesrv, timeout)?;
    let names = split(a.names.as_deref());
    let mut table = Table::new(&["Name", "From", "To", "Result"]);
    let mut lines = Vec::new();
    let list_code = if users {
        code::AUTH_LIST_USER
    } else {
        code::AUTH_LIST_ACL
    };
    let resp = admin
        .call(&a.from, request(list_code, ExtFields::new()))
        .await?;
    let mut copied = Vec::new();
    if users {
        for u in answer::<Vec<UserInfo>>(&resp)?.unwrap_or_default() {
            let name = u.username.clone().unwrap_or_default();
            if !names.is_empty() && !names.contains(&name) {
                continue;
            }
            let get = request(code::AUTH_GET_USER, fields(&[("username", Some(&name))]));
            let exists = answer::<UserInfo>(&admin.call(&a.to, get).await?)?.is_some();
            let c = if exists {
                code::AUTH_UPDATE_USER
            } else {
                code::AUTH_CREATE_USER
            };
            let cmd = with_json(request(c, fields(&[("username", Some(&name))])), &u);
            admin.call(&a.to, cmd).await?;
            copied.push(name);
        }
    } else {
        for acl in answer::<Vec<AclInfo>>(&resp)?.unwrap_or_default() {
            let subject = acl.subject.clone().unwrap_or_default();
            if !names.is_empty() && !names.contains(&subject) {
                continue;
            }
            let cmd = with_json(
                request(
                    code::AUTH_CREATE_ACL,
                    fields(&[("subject", Some(&subject))]),
                ),
                &acl,
            );
            admin.call(&a.to, cmd).await?;
            copied.push(subject);
        }
    }
    let what = if users { "user" } else { "acl" };
    for name in &copied {
        table.row(vec![
            name.clone(),
            a.from.clone(),
            a.to.clone(),
            "success".into(),
        ]);
        lines.push(format!(
            "copy {what} of {name} from {} to {} success.",
            a.from, a.to
        ));
    }
    Ok(Report::new(table, json!({ "copied": copied })).with_footers(lines))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_cli_with_these_commands_is_consistent() {
        crate::cli::Cli::command().debug_assert();
    }
}

//! Users made at start, before any request is served (Apache's `initUser` and `AuthMigrator`):
//! `initAuthenticationUser` and `innerClientAuthenticationCredentials` become super users when no
//! user has their name, and with `migrateAuthFromV1Enabled` each plain_acl.yml account whose user
//! does not exist yet becomes a user (admin: Super) and an ACL of its permissions. An existing user
//! is never changed.

use auth::{Acl, Action, Decision, Policy, PolicyEntry, PolicyType, Resource, User, UserStatus};
use auth::{ResourcePattern, ResourceType, UserType};

use crate::config::BrokerConfig;
use crate::feature::acl::config::{Account, PlainAcl};
use crate::feature::acl::perm;
use crate::state::auth_metadata::AuthMetadata;

/// Adds the users and ACLs `cfg` asks for to `metadata`; answers what was added, for the log (empty:
/// nothing changed). `plain_acl` is read only with `migrateAuthFromV1Enabled`.
pub fn apply(
    cfg: &BrokerConfig,
    metadata: &mut AuthMetadata,
    plain_acl: impl FnOnce() -> Result<PlainAcl, String>,
) -> Result<Vec<String>, String> {
    let mut added = Vec::new();
    let mut add_super = |metadata: &mut AuthMetadata, name: &str, password: &str| {
        if !metadata.users.contains_key(name) {
            metadata.users.insert(
                name.to_owned(),
                User {
                    username: name.to_owned(),
                    password: password.to_owned(),
                    user_type: UserType::Super,
                    status: UserStatus::Enable,
                },
            );
            added.push(format!("super user {name}"));
        }
    };
    if let Some(init) = &cfg.auth.init_authentication_user {
        add_super(metadata, &init.username, &init.password);
    }
    if let Some(inner) = &cfg.auth.inner_client_credentials {
        add_super(metadata, &inner.access_key, &inner.secret_key);
    }
    if cfg.auth.migrate_auth_from_v1_enabled {
        let plain = plain_acl().map_err(|e| format!("migrateAuthFromV1Enabled: {e}"))?;
        let mut accounts: Vec<&Account> = plain.accounts.values().collect();
        accounts.sort_by(|a, b| a.access_key.cmp(&b.access_key));
        for account in accounts {
            if metadata.users.contains_key(&account.access_key) {
                continue;
            }
            let user = migrated_user(account);
            if let Some(acl) = migrated_acl(account)? {
                metadata.acls.insert(acl.subject.clone(), acl);
            }
            added.push(format!("{} (migrated from plain ACL)", user.subject()));
            metadata.users.insert(user.username.clone(), user);
        }
    }
    Ok(added)
}

fn migrated_user(account: &Account) -> User {
    User {
        username: account.access_key.clone(),
        password: account.secret_key.clone(),
        user_type: if account.admin {
            UserType::Super
        } else {
            UserType::Normal
        },
        status: UserStatus::Enable,
    }
}

/// A plain ACL permission as ACL 2.0 actions and decision (Apache's `parseActions` /
/// `parseDecision`): DENY denies all; PUB, SUB or both allow those; ANY allows all.
fn actions_of(bits: u8) -> (Vec<Action>, Decision) {
    if bits & perm::DENY != 0 {
        return (vec![Action::All], Decision::Deny);
    }
    let mut actions = Vec::new();
    if bits & perm::PUB != 0 {
        actions.push(Action::Pub);
    }
    if bits & perm::SUB != 0 {
        actions.push(Action::Sub);
    }
    if actions.is_empty() {
        actions.push(Action::All);
    }
    (actions, Decision::Allow)
}

fn entry(resource: Resource, bits: u8) -> PolicyEntry {
    let (actions, decision) = actions_of(bits);
    PolicyEntry {
        resource,
        actions,
        source_ips: Vec::new(),
        decision,
    }
}

fn any_of(kind: ResourceType) -> Resource {
    Resource {
        kind,
        name: String::new(),
        pattern: ResourcePattern::Any,
    }
}

/// The account's topic and group permissions as a custom policy, its defaults as a default policy
/// (`Topic:*`, `Group:*`); white addresses are not carried over (they let requests in unsigned,
/// which ACL 2.0 has no way to say).
fn migrated_acl(account: &Account) -> Result<Option<Acl>, String> {
    let mut custom: Vec<PolicyEntry> = Vec::new();
    let mut topics: Vec<_> = account.topic_perms.iter().collect();
    topics.sort();
    for (topic, bits) in topics {
        custom.push(entry(Resource::topic(topic), *bits));
    }
    let mut groups: Vec<_> = account.group_perms.iter().collect();
    groups.sort();
    for (group, bits) in groups {
        custom.push(entry(Resource::group(group), *bits));
    }
    let mut policies = Vec::new();
    if !custom.is_empty() {
        policies.push(Policy {
            policy_type: PolicyType::Custom,
            entries: custom,
        });
    }
    policies.push(Policy {
        policy_type: PolicyType::Default,
        entries: vec![
            entry(any_of(ResourceType::Topic), account.default_topic_perm),
            entry(any_of(ResourceType::Group), account.default_group_perm),
        ],
    });
    let subject = format!("User:{}", account.access_key);
    Acl::apply(&subject, None, policies)
        .map(Some)
        .map_err(|e| format!("the ACL of {subject}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use auth::evaluate::authorize;

    const PLAIN: &str = "accounts:
  - accessKey: producer1
    secretKey: pw-p
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - orders=PUB
      - audit=DENY
  - accessKey: admin1
    secretKey: pw-a
    admin: true
";

    fn cfg(pairs: &[(&str, &str)]) -> BrokerConfig {
        let mut cfg = BrokerConfig::default();
        for (k, v) in pairs {
            assert_eq!(cfg.set(k, v).unwrap(), None, "{k}");
        }
        cfg
    }

    #[test]
    fn init_and_inner_users_are_super_users_made_once() {
        let cfg = cfg(&[
            (
                "initAuthenticationUser",
                r#"{"username":"rocketmq","password":"12345678"}"#,
            ),
            (
                "innerClientAuthenticationCredentials",
                r#"{"accessKey":"inner","secretKey":"s3"}"#,
            ),
        ]);
        let mut m = AuthMetadata::default();
        let added = apply(&cfg, &mut m, || unreachable!("not migrating")).unwrap();
        assert_eq!(added.len(), 2);
        assert_eq!(m.users["rocketmq"].user_type, UserType::Super);
        assert_eq!(m.users["inner"].password, "s3");
        // A user changed since (its password) is left as it is.
        m.users.get_mut("rocketmq").unwrap().password = "changed".into();
        assert!(apply(&cfg, &mut m, || unreachable!()).unwrap().is_empty());
        assert_eq!(m.users["rocketmq"].password, "changed");
    }

    #[test]
    fn plain_acl_accounts_become_users_and_acls() {
        let cfg = cfg(&[("migrateAuthFromV1Enabled", "true")]);
        let mut m = AuthMetadata::default();
        let plain = crate::feature::acl::config::parse(PLAIN).unwrap();
        let added = apply(&cfg, &mut m, || Ok(plain)).unwrap();
        assert_eq!(added.len(), 2, "{added:?}");
        assert_eq!(m.users["admin1"].user_type, UserType::Super);
        let user = &m.users["producer1"];
        assert_eq!(user.user_type, UserType::Normal);
        let acl = m.acls.get("User:producer1");
        let may = |r: Resource, a: Action| authorize(user, acl, &r, &[a], "10.1.1.1").is_ok();
        assert!(may(Resource::topic("orders"), Action::Pub));
        assert!(!may(Resource::topic("orders"), Action::Sub));
        assert!(!may(Resource::topic("audit"), Action::Pub));
        // The defaults: topics denied, groups subscribable.
        assert!(!may(Resource::topic("other"), Action::Pub));
        assert!(may(Resource::group("g1"), Action::Sub));
        // An unreadable file stops the start with the reason.
        let mut fresh = AuthMetadata::default();
        let err = apply(&cfg, &mut fresh, || Err("cannot be read".into())).unwrap_err();
        assert!(err.contains("migrateAuthFromV1Enabled"), "{err}");
    }
}

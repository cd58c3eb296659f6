//! Whether a subject may do what a request asks (Apache's `AclAuthorizationHandler`): a super user
//! may do anything; otherwise the entries of its custom policy that match the resource, the actions
//! and the source IP, or, when none does, those of its default policy; the most specific one decides
//! (a resource of a kind before `*`; literal before prefixed before any; a longer prefix first). No ACL
//! or no matching entry: denied. Two matching entries are never equally specific: a policy holds one
//! entry per resource, and custom and default entries are not mixed; were they, Deny would win (what
//! Apache's code comment says; its comparator orders them the other way).

use crate::acl::{Acl, Decision, PolicyEntry, PolicyType};
use crate::action::{covers, Action};
use crate::resource::{Resource, ResourcePattern, ResourceType};
use crate::user::{User, UserType};

/// Why a request is refused, in Apache's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks one request of `user` on `resource` asking `actions` from `source_ip`.
pub fn authorize(
    user: &User,
    acl: Option<&Acl>,
    resource: &Resource,
    actions: &[Action],
    source_ip: &str,
) -> Result<(), Denied> {
    if user.user_type == UserType::Super {
        return Ok(());
    }
    let denied = |detail: &str| {
        Denied(format!(
            "{} has no permission to access {} from {}, {detail}",
            user.subject(),
            resource.key(),
            source_ip
        ))
    };
    let Some(acl) = acl else {
        return Err(denied("no matched policies."));
    };
    let matching = |policy_type| -> Vec<&PolicyEntry> {
        acl.policy(policy_type)
            .map(|p| {
                p.entries
                    .iter()
                    .filter(|e| e.resource.matches(resource))
                    .filter(|e| covers(&e.actions, actions))
                    .filter(|e| e.matches_source(source_ip))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut entries = matching(PolicyType::Custom);
    if entries.is_empty() {
        entries = matching(PolicyType::Default);
    }
    entries.sort_by_key(|e| specificity(e));
    match entries.first() {
        None => Err(denied("no matched policies.")),
        Some(e) if e.decision == Decision::Deny => Err(denied("the decision is deny.")),
        Some(_) => Ok(()),
    }
}

/// Sort key: smaller is more specific.
fn specificity(e: &PolicyEntry) -> (u8, u8, std::cmp::Reverse<usize>, u8) {
    let r = &e.resource;
    let kind = u8::from(r.kind == ResourceType::Any);
    let pattern = match r.pattern {
        ResourcePattern::Literal => 0,
        ResourcePattern::Prefixed => 1,
        ResourcePattern::Any => 2,
    };
    let prefix = if r.pattern == ResourcePattern::Prefixed {
        r.name.len()
    } else {
        0
    };
    let decision = match e.decision {
        Decision::Deny => 0,
        Decision::Allow => 1,
    };
    (kind, pattern, std::cmp::Reverse(prefix), decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::Policy;
    use crate::user::UserStatus;

    fn user(kind: UserType) -> User {
        User {
            username: "alice".into(),
            password: "pw".into(),
            user_type: kind,
            status: UserStatus::Enable,
        }
    }

    fn entry(resource: &str, actions: &str, ips: &[&str], decision: Decision) -> PolicyEntry {
        PolicyEntry {
            resource: Resource::parse(resource).unwrap(),
            actions: Action::parse_list(actions).unwrap(),
            source_ips: ips.iter().map(|s| (*s).to_owned()).collect(),
            decision,
        }
    }

    fn acl(custom: Vec<PolicyEntry>, default: Vec<PolicyEntry>) -> Acl {
        let mut policies = Vec::new();
        if !custom.is_empty() {
            policies.push(Policy {
                policy_type: PolicyType::Custom,
                entries: custom,
            });
        }
        if !default.is_empty() {
            policies.push(Policy {
                policy_type: PolicyType::Default,
                entries: default,
            });
        }
        Acl {
            subject: "User:alice".into(),
            policies,
        }
    }

    fn check(a: &Acl, resource: &str, action: Action, ip: &str) -> Result<(), Denied> {
        let r = Resource::parse(resource).unwrap();
        authorize(&user(UserType::Normal), Some(a), &r, &[action], ip)
    }

    #[test]
    fn the_most_specific_matching_entry_decides() {
        let a = acl(
            vec![
                entry("Topic:*", "Pub,Sub", &[], Decision::Allow),
                entry("Topic:secret*", "Pub", &[], Decision::Deny),
                entry("Topic:secret-ok", "Pub", &[], Decision::Allow),
                entry("Group:g1", "Sub", &["10.0.0.0/8"], Decision::Allow),
            ],
            vec![],
        );
        assert!(check(&a, "Topic:orders", Action::Pub, "1.2.3.4").is_ok());
        let err = check(&a, "Topic:secret-1", Action::Pub, "1.2.3.4").unwrap_err();
        assert_eq!(
            err.0,
            "User:alice has no permission to access Topic:secret-1 from 1.2.3.4, the decision is deny."
        );
        assert!(check(&a, "Topic:secret-ok", Action::Pub, "1.2.3.4").is_ok());
        // Sub on the prefixed topic: the Deny entry is for Pub only, so Topic:* allows it.
        assert!(check(&a, "Topic:secret-1", Action::Sub, "1.2.3.4").is_ok());
        assert!(check(&a, "Group:g1", Action::Sub, "10.1.2.3").is_ok());
        let err = check(&a, "Group:g1", Action::Sub, "192.168.1.1").unwrap_err();
        assert!(err.0.ends_with("no matched policies."), "{err}");
        assert!(check(&a, "Topic:orders", Action::Create, "1.2.3.4").is_err());
    }

    #[test]
    fn default_policies_only_when_no_custom_entry_matches_and_super_users_pass() {
        let a = acl(
            vec![entry("Topic:a", "Pub", &[], Decision::Deny)],
            vec![entry("*", "All", &[], Decision::Allow)],
        );
        assert!(check(&a, "Topic:a", Action::Pub, "1.1.1.1").is_err());
        assert!(check(&a, "Topic:b", Action::Pub, "1.1.1.1").is_ok());
        assert!(check(&a, "Group:x", Action::Delete, "1.1.1.1").is_ok());
        let r = Resource::topic("a");
        assert!(authorize(&user(UserType::Super), Some(&a), &r, &[Action::Pub], "x").is_ok());
        assert!(authorize(&user(UserType::Super), None, &r, &[Action::Pub], "x").is_ok());
        assert_eq!(
            authorize(&user(UserType::Normal), None, &r, &[Action::Pub], "9.9.9.9")
                .unwrap_err()
                .0,
            "User:alice has no permission to access Topic:a from 9.9.9.9, no matched policies."
        );
    }

    #[test]
    fn a_longer_prefix_decides_and_deny_wins_a_tie() {
        let a = acl(
            vec![
                entry("Topic:ab*", "Pub", &[], Decision::Allow),
                entry("Topic:a*", "Pub", &[], Decision::Deny),
            ],
            vec![],
        );
        assert!(check(&a, "Topic:abc", Action::Pub, "1.1.1.1").is_ok());
        assert!(check(&a, "Topic:axe", Action::Pub, "1.1.1.1").is_err());
        // Not reachable through `Acl::apply` (one entry per resource): built directly.
        let mut tie = a.clone();
        tie.policies[0].entries = vec![
            entry("Topic:ab", "Pub", &[], Decision::Allow),
            entry("Topic:ab", "Pub", &[], Decision::Deny),
        ];
        assert!(check(&tie, "Topic:ab", Action::Pub, "1.1.1.1").is_err());
    }
}

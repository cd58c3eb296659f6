//! ACLs: per subject (`User:alice`) a custom and a default policy, each a list of entries (resource,
//! actions, source IPs, Allow or Deny), one entry per resource; and how create, update and delete
//! requests change them (Apache's `AuthorizationMetadataManagerImpl`, `Acl`, `Policy`, with its
//! error texts).

use crate::action::Action;
use crate::ip_range;
use crate::resource::Resource;

/// What an entry decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    Allow,
    Deny,
}

impl Decision {
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "Allow",
            Decision::Deny => "Deny",
        }
    }

    pub fn parse(s: &str) -> Result<Decision, String> {
        [Decision::Allow, Decision::Deny]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| "The decision is null or illegal.".to_owned())
    }
}

/// `Custom` policies are looked at first; `Default` ones only when no custom entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyType {
    Custom,
    Default,
}

impl PolicyType {
    pub fn name(self) -> &'static str {
        match self {
            PolicyType::Custom => "Custom",
            PolicyType::Default => "Default",
        }
    }

    pub fn parse(s: &str) -> Result<PolicyType, String> {
        [PolicyType::Custom, PolicyType::Default]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("the policy type {s:?} is not valid: write Custom or Default"))
    }
}

/// One rule: on `resource`, `actions` from `source_ips` (none: from anywhere) are `decision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEntry {
    pub resource: Resource,
    pub actions: Vec<Action>,
    pub source_ips: Vec<String>,
    pub decision: Decision,
}

impl PolicyEntry {
    /// Apache's checks of an entry in a create or update request.
    pub fn validate(&self) -> Result<(), String> {
        if self.actions.is_empty() {
            return Err("The actions is empty.".to_owned());
        }
        if self.actions.contains(&Action::Any) {
            return Err("The actions can not be Any.".to_owned());
        }
        for ip in &self.source_ips {
            if ip.trim().is_empty() {
                return Err("The source ip is empty.".to_owned());
            }
            if !ip_range::is_valid(ip) {
                return Err("The source ip is invalid.".to_owned());
            }
        }
        Ok(())
    }

    /// Whether the request comes from one of the entry's source IPs (any, when it lists none).
    pub fn matches_source(&self, source_ip: &str) -> bool {
        self.source_ips.is_empty()
            || self
                .source_ips
                .iter()
                .any(|r| ip_range::contains(r, source_ip))
    }
}

/// The entries of one policy type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub policy_type: PolicyType,
    pub entries: Vec<PolicyEntry>,
}

impl Policy {
    /// Adds `new` entries; an entry for a resource already there replaces its actions, source IPs and
    /// decision.
    fn update(&mut self, new: Vec<PolicyEntry>) {
        for entry in new {
            match self
                .entries
                .iter_mut()
                .find(|e| e.resource == entry.resource)
            {
                Some(old) => *old = entry,
                None => self.entries.push(entry),
            }
        }
    }
}

/// A subject's ACL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    /// `User:alice`.
    pub subject: String,
    pub policies: Vec<Policy>,
}

impl Acl {
    /// Checks a create or update request (policies present, entries valid).
    pub fn validate_request(policies: &[Policy]) -> Result<(), String> {
        if policies.is_empty() {
            return Err("The policies is empty.".to_owned());
        }
        for policy in policies {
            if policy.entries.is_empty() {
                return Err("The policy entries is empty.".to_owned());
            }
            for entry in &policy.entries {
                entry.validate()?;
            }
        }
        Ok(())
    }

    /// The ACL after a create or update request (Apache treats both alike): `existing` merged with
    /// `policies` by policy type and resource, or a new ACL.
    pub fn apply(
        subject: &str,
        existing: Option<&Acl>,
        policies: Vec<Policy>,
    ) -> Result<Acl, String> {
        Acl::validate_request(&policies)?;
        let mut acl = existing.cloned().unwrap_or_else(|| Acl {
            subject: subject.to_owned(),
            policies: Vec::new(),
        });
        for policy in policies {
            match acl
                .policies
                .iter_mut()
                .find(|p| p.policy_type == policy.policy_type)
            {
                Some(old) => old.update(policy.entries),
                None => acl.policies.push(policy),
            }
        }
        Ok(acl)
    }

    /// The ACL after deleting the entry for `resource` from the policy of `policy_type` (Custom when
    /// not said); `None` when nothing remains (or no resource was named: the whole ACL goes).
    pub fn delete(
        &self,
        policy_type: Option<PolicyType>,
        resource: Option<&Resource>,
    ) -> Option<Acl> {
        let resource = resource?;
        let policy_type = policy_type.unwrap_or(PolicyType::Custom);
        let mut acl = self.clone();
        if let Some(policy) = acl
            .policies
            .iter_mut()
            .find(|p| p.policy_type == policy_type)
        {
            policy.entries.retain(|e| &e.resource != resource);
        }
        acl.policies.retain(|p| !p.entries.is_empty());
        (!acl.policies.is_empty()).then_some(acl)
    }

    pub fn policy(&self, policy_type: PolicyType) -> Option<&Policy> {
        self.policies.iter().find(|p| p.policy_type == policy_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn entry(
        resource: &str,
        actions: &str,
        ips: &[&str],
        decision: Decision,
    ) -> PolicyEntry {
        PolicyEntry {
            resource: Resource::parse(resource).unwrap(),
            actions: Action::parse_list(actions).unwrap(),
            source_ips: ips.iter().map(|s| (*s).to_owned()).collect(),
            decision,
        }
    }

    fn custom(entries: Vec<PolicyEntry>) -> Policy {
        Policy {
            policy_type: PolicyType::Custom,
            entries,
        }
    }

    #[test]
    fn requests_are_checked_with_apaches_texts() {
        assert_eq!(
            Acl::validate_request(&[]).unwrap_err(),
            "The policies is empty."
        );
        assert_eq!(
            Acl::validate_request(&[custom(vec![])]).unwrap_err(),
            "The policy entries is empty."
        );
        let mut e = entry("Topic:t", "Pub", &[], Decision::Allow);
        e.actions = vec![Action::Any];
        assert_eq!(e.validate().unwrap_err(), "The actions can not be Any.");
        e.actions.clear();
        assert_eq!(e.validate().unwrap_err(), "The actions is empty.");
        let e = entry("Topic:t", "Pub", &["10.0.0.0/33"], Decision::Allow);
        assert_eq!(e.validate().unwrap_err(), "The source ip is invalid.");
        let e = entry("Topic:t", "Pub", &[" "], Decision::Allow);
        assert_eq!(e.validate().unwrap_err(), "The source ip is empty.");
        assert!(Decision::parse("maybe").is_err());
    }

    #[test]
    fn updates_merge_by_policy_type_and_resource_and_deletes_remove_entries() {
        let first = Acl::apply(
            "User:alice",
            None,
            vec![custom(vec![
                entry("Topic:a", "Pub", &[], Decision::Allow),
                entry("Topic:b", "Sub", &[], Decision::Allow),
            ])],
        )
        .unwrap();
        let second = Acl::apply(
            "User:alice",
            Some(&first),
            vec![custom(vec![
                entry("Topic:a", "Sub", &["10.0.0.1"], Decision::Deny),
                entry("Group:g", "Sub", &[], Decision::Allow),
            ])],
        )
        .unwrap();
        let c = second.policy(PolicyType::Custom).unwrap();
        assert_eq!(c.entries.len(), 3);
        assert_eq!(
            c.entries[0].decision,
            Decision::Deny,
            "Topic:a replaced in place"
        );
        assert_eq!(c.entries[0].actions, [Action::Sub]);
        let topic_b = Resource::parse("Topic:b").unwrap();
        let less = second.delete(None, Some(&topic_b)).unwrap();
        assert_eq!(less.policy(PolicyType::Custom).unwrap().entries.len(), 2);
        assert!(
            second.delete(None, None).is_none(),
            "no resource: the whole ACL"
        );
        let only = Acl::apply(
            "User:bob",
            None,
            vec![custom(vec![entry("Topic:a", "Pub", &[], Decision::Allow)])],
        )
        .unwrap();
        let topic_a = Resource::parse("Topic:a").unwrap();
        assert!(
            only.delete(None, Some(&topic_a)).is_none(),
            "last entry gone"
        );
        assert_eq!(
            only.delete(Some(PolicyType::Default), Some(&topic_a)),
            Some(only.clone()),
            "another policy type's entry is not touched"
        );
    }
}

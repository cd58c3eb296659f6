//! The JSON bodies of the user and ACL admin requests and answers (Apache's `UserInfo`, `AclInfo`,
//! fields in fastjson's order) and their conversion to the model, refusing what does not parse with
//! Apache's texts where it has them.

use serde::{Deserialize, Serialize};

use crate::acl::{Acl, Decision, Policy, PolicyEntry, PolicyType};
use crate::action::Action;
use crate::resource::Resource;
use crate::user::{User, UserChange, UserStatus, UserType};

/// A user as AUTH_CREATE_USER / AUTH_UPDATE_USER carry it and AUTH_GET_USER / AUTH_LIST_USER answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

impl UserInfo {
    pub fn from_user(user: &User) -> UserInfo {
        UserInfo {
            username: Some(user.username.clone()),
            password: Some(user.password.clone()),
            user_type: Some(user.user_type.name().to_owned()),
            user_status: Some(user.status.name().to_owned()),
        }
    }

    /// The change a create or update request asks for.
    pub fn to_change(&self) -> Result<UserChange, String> {
        Ok(UserChange {
            username: self.username.clone().unwrap_or_default(),
            password: self.password.clone(),
            user_type: self
                .user_type
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .map(UserType::parse)
                .transpose()?,
            status: self
                .user_status
                .as_deref()
                .filter(|s| !s.trim().is_empty())
                .map(UserStatus::parse)
                .transpose()?,
        })
    }
}

/// An ACL as AUTH_CREATE_ACL / AUTH_UPDATE_ACL carry it and AUTH_GET_ACL / AUTH_LIST_ACL answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AclInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<PolicyInfo>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<PolicyEntryInfo>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntryInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ips: Option<Vec<String>>,
}

impl AclInfo {
    pub fn from_acl(acl: &Acl) -> AclInfo {
        AclInfo {
            subject: Some(acl.subject.clone()),
            policies: Some(
                acl.policies
                    .iter()
                    .map(|p| PolicyInfo {
                        policy_type: Some(p.policy_type.name().to_owned()),
                        entries: Some(p.entries.iter().map(entry_info).collect()),
                    })
                    .collect(),
            ),
        }
    }

    /// The subject (`User:alice`) and the policies a create or update request carries. A policy
    /// without a type is Custom; a policy without entries is left out, as in Apache's converter.
    pub fn to_request(&self) -> Result<(String, Vec<Policy>), String> {
        let subject = self
            .subject
            .clone()
            .filter(|s| s.starts_with("User:") && s.len() > "User:".len())
            .ok_or_else(|| "The subject type is null.".to_owned())?;
        let mut policies = Vec::new();
        for p in self.policies.iter().flatten() {
            let policy_type = match p.policy_type.as_deref().filter(|t| !t.trim().is_empty()) {
                Some(t) => PolicyType::parse(t)?,
                None => PolicyType::Custom,
            };
            let Some(infos) = p.entries.as_ref().filter(|e| !e.is_empty()) else {
                continue;
            };
            let entries = infos.iter().map(entry).collect::<Result<Vec<_>, _>>()?;
            policies.push(Policy {
                policy_type,
                entries,
            });
        }
        Ok((subject, policies))
    }
}

fn entry_info(e: &PolicyEntry) -> PolicyEntryInfo {
    PolicyEntryInfo {
        resource: Some(e.resource.key()),
        actions: Some(e.actions.iter().map(|a| a.name().to_owned()).collect()),
        source_ips: (!e.source_ips.is_empty()).then(|| e.source_ips.clone()),
        decision: Some(e.decision.name().to_owned()),
    }
}

fn entry(info: &PolicyEntryInfo) -> Result<PolicyEntry, String> {
    let resource = info
        .resource
        .as_deref()
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| "The resource is null.".to_owned())
        .and_then(Resource::parse)?;
    let actions = info
        .actions
        .iter()
        .flatten()
        .map(|a| Action::parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    let decision = Decision::parse(info.decision.as_deref().unwrap_or(""))?;
    Ok(PolicyEntry {
        resource,
        actions,
        source_ips: info.source_ips.clone().unwrap_or_default(),
        decision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_and_read_apaches_json() {
        let java = br#"{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:orders*","sourceIps":["192.168.0.0/24"]}],"policyType":"Custom"}],"subject":"User:alice"}"#;
        let info: AclInfo = serde_json::from_slice(java).unwrap();
        let (subject, policies) = info.to_request().unwrap();
        assert_eq!(subject, "User:alice");
        let acl = Acl::apply(&subject, None, policies).unwrap();
        assert_eq!(
            serde_json::to_vec(&AclInfo::from_acl(&acl)).unwrap(),
            java.to_vec()
        );

        let no_type: AclInfo = serde_json::from_str(
            r#"{"subject":"User:bob","policies":[{"entries":[{"resource":"*","actions":["All"],"decision":"deny"}]}]}"#,
        )
        .unwrap();
        let (_, p) = no_type.to_request().unwrap();
        assert_eq!(p[0].policy_type, PolicyType::Custom);
        assert_eq!(p[0].entries[0].decision, Decision::Deny);

        for (bad, why) in [
            (
                r#"{"subject":"alice","policies":[]}"#,
                "The subject type is null.",
            ),
            (
                r#"{"subject":"User:a","policies":[{"entries":[{"actions":["Pub"],"decision":"Allow"}]}]}"#,
                "The resource is null.",
            ),
            (
                r#"{"subject":"User:a","policies":[{"entries":[{"resource":"Topic:t","actions":["Pub"],"decision":"Maybe"}]}]}"#,
                "The decision is null or illegal.",
            ),
        ] {
            let info: AclInfo = serde_json::from_str(bad).unwrap();
            assert_eq!(info.to_request().unwrap_err(), why, "{bad}");
        }
        let info: AclInfo = serde_json::from_str(
            r#"{"subject":"User:a","policies":[{"entries":[{"resource":"Topic:t","actions":["Publish"],"decision":"Allow"}]}]}"#,
        )
        .unwrap();
        assert!(info.to_request().unwrap_err().contains("Publish"));

        let user: UserInfo = serde_json::from_str(
            r#"{"username":"alice","password":"pw","userType":"Super","userStatus":"enable"}"#,
        )
        .unwrap();
        let u = User::create(&user.to_change().unwrap(), None).unwrap();
        assert_eq!(u.user_type, UserType::Super);
        assert_eq!(
            serde_json::to_string(&UserInfo::from_user(&u)).unwrap(),
            r#"{"password":"pw","userStatus":"enable","userType":"Super","username":"alice"}"#
        );
        let bad: UserInfo = serde_json::from_str(r#"{"username":"a","userType":"Root"}"#).unwrap();
        assert!(bad.to_change().is_err());
    }
}

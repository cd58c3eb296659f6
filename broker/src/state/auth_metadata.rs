//! ACL 2.0 users and ACLs kept by this broker (`config/auth.json`, written before an admin request is
//! answered): the users by name and the ACLs by subject, in the `UserInfo` / `AclInfo` shapes the
//! admin requests carry. Managed on the control shard; a slave copies its master's.

use std::collections::BTreeMap;
use std::path::Path;

use auth::body::{AclInfo, UserInfo};
use auth::{Acl, User, UserStatus, UserType};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;

/// The file under `<storePathRootDir>/config/`.
pub const AUTH_FILE: &str = "auth.json";

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
struct AuthFile {
    #[serde(default)]
    acls: Vec<AclInfo>,
    #[serde(default)]
    users: Vec<UserInfo>,
}

/// Users and ACLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthMetadata {
    pub users: BTreeMap<String, User>,
    /// By subject (`User:alice`).
    pub acls: BTreeMap<String, Acl>,
}

impl AuthMetadata {
    /// Loads `auth.json`; empty when absent. A user or ACL that does not parse is an error naming it.
    pub fn load(path: &Path) -> Result<AuthMetadata, BrokerError> {
        let Some(bytes) = crate::state::persist::read_optional(path)
            .map_err(|e| BrokerError::io(path.display(), e))?
        else {
            return Ok(AuthMetadata::default());
        };
        let bad = |reason: String| BrokerError::BadMetadata {
            path: path.display().to_string(),
            reason,
        };
        let file: AuthFile = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        AuthMetadata::from_infos(file.users, file.acls).map_err(bad)
    }

    /// Builds the metadata from users and ACLs as the admin requests carry them (a master's, or the
    /// file's).
    pub fn from_infos(users: Vec<UserInfo>, acls: Vec<AclInfo>) -> Result<AuthMetadata, String> {
        let mut out = AuthMetadata::default();
        for info in users {
            let change = info.to_change()?;
            let user = User {
                username: change.username.clone(),
                password: change.password.unwrap_or_default(),
                user_type: change.user_type.unwrap_or(UserType::Normal),
                status: change.status.unwrap_or(UserStatus::Enable),
            };
            if user.username.is_empty() {
                return Err("a user without a name".to_owned());
            }
            out.users.insert(user.username.clone(), user);
        }
        for info in acls {
            let (subject, policies) = info.to_request()?;
            let acl = Acl::apply(&subject, None, policies)
                .map_err(|e| format!("the ACL of {subject}: {e}"))?;
            out.acls.insert(subject, acl);
        }
        Ok(out)
    }

    pub fn to_json(&self) -> Vec<u8> {
        let file = AuthFile {
            users: self.users.values().map(UserInfo::from_user).collect(),
            acls: self.acls.values().map(AclInfo::from_acl).collect(),
        };
        serde_json::to_vec_pretty(&file).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use auth::user::UserChange;

    #[test]
    fn the_file_round_trips_and_a_bad_entry_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        assert_eq!(AuthMetadata::load(&path).unwrap(), AuthMetadata::default());
        let mut m = AuthMetadata::default();
        let alice = User::create(
            &UserChange {
                username: "alice".into(),
                password: Some("pw".into()),
                ..UserChange::default()
            },
            None,
        )
        .unwrap();
        m.users.insert("alice".into(), alice);
        let info: AclInfo = serde_json::from_str(
            r#"{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:t*","actions":["Pub"],"decision":"Allow"}]}]}"#,
        )
        .unwrap();
        let (subject, policies) = info.to_request().unwrap();
        m.acls.insert(
            subject.clone(),
            Acl::apply(&subject, None, policies).unwrap(),
        );
        crate::state::persist::write_atomic(&path, &m.to_json()).unwrap();
        assert_eq!(AuthMetadata::load(&path).unwrap(), m);
        std::fs::write(
            &path,
            br#"{"users":[],"acls":[{"subject":"User:x","policies":[{"entries":[{"resource":"Queue:q","actions":["Pub"],"decision":"Allow"}]}]}]}"#,
        )
        .unwrap();
        let err = AuthMetadata::load(&path).unwrap_err().to_string();
        assert!(err.contains("Queue:q"), "{err}");
    }
}

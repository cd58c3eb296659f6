//! ACL 2.0 users: the name a client signs with (its AccessKey), the password (its SecretKey), whether
//! it is a super user (never checked against ACLs) and whether it is enabled; and the rules of
//! creating and updating one (Apache's `AuthenticationMetadataManagerImpl`, with its error texts).

/// `Super` users pass authorization; `Normal` ones are checked against their ACL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UserType {
    Super,
    Normal,
}

impl UserType {
    pub fn name(self) -> &'static str {
        match self {
            UserType::Super => "Super",
            UserType::Normal => "Normal",
        }
    }

    pub fn parse(s: &str) -> Result<UserType, String> {
        [UserType::Super, UserType::Normal]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("the user type {s:?} is not valid: write Super or Normal"))
    }
}

/// A disabled user cannot authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UserStatus {
    Enable,
    Disable,
}

impl UserStatus {
    /// Apache writes these in lower case.
    pub fn name(self) -> &'static str {
        match self {
            UserStatus::Enable => "enable",
            UserStatus::Disable => "disable",
        }
    }

    pub fn parse(s: &str) -> Result<UserStatus, String> {
        [UserStatus::Enable, UserStatus::Disable]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("the user status {s:?} is not valid: write enable or disable"))
    }
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub username: String,
    pub password: String,
    pub user_type: UserType,
    pub status: UserStatus,
}

/// A create or update request: what it sets (unset parts keep their value on update).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserChange {
    pub username: String,
    pub password: Option<String>,
    pub user_type: Option<UserType>,
    pub status: Option<UserStatus>,
}

impl User {
    /// The user a create request makes, unless `existing` already has one of that name.
    pub fn create(change: &UserChange, existing: Option<&User>) -> Result<User, String> {
        if change.username.trim().is_empty() {
            return Err("username can not be blank".to_owned());
        }
        let password = change.password.as_deref().unwrap_or("");
        if password.trim().is_empty() {
            return Err("password can not be blank".to_owned());
        }
        if existing.is_some() {
            return Err("The user is existed".to_owned());
        }
        Ok(User {
            username: change.username.clone(),
            password: password.to_owned(),
            user_type: change.user_type.unwrap_or(UserType::Normal),
            status: change.status.unwrap_or(UserStatus::Enable),
        })
    }

    /// `existing` after an update request.
    pub fn update(change: &UserChange, existing: Option<&User>) -> Result<User, String> {
        if change.username.trim().is_empty() {
            return Err("username can not be blank".to_owned());
        }
        let Some(old) = existing else {
            return Err("The user is not exist".to_owned());
        };
        let mut user = old.clone();
        if let Some(p) = change.password.as_deref().filter(|p| !p.trim().is_empty()) {
            user.password = p.to_owned();
        }
        if let Some(t) = change.user_type {
            user.user_type = t;
        }
        if let Some(s) = change.status {
            user.status = s;
        }
        Ok(user)
    }

    /// The subject key ACLs name this user by (`User:alice`).
    pub fn subject(&self) -> String {
        format!("User:{}", self.username)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(name: &str, password: Option<&str>) -> UserChange {
        UserChange {
            username: name.into(),
            password: password.map(Into::into),
            ..UserChange::default()
        }
    }

    #[test]
    fn creation_and_update_follow_apaches_rules() {
        let alice = User::create(&change("alice", Some("pw")), None).unwrap();
        assert_eq!(
            (alice.user_type, alice.status),
            (UserType::Normal, UserStatus::Enable)
        );
        assert_eq!(alice.subject(), "User:alice");
        assert_eq!(
            User::create(&change("alice", Some("pw")), Some(&alice)).unwrap_err(),
            "The user is existed"
        );
        assert_eq!(
            User::create(&change(" ", Some("pw")), None).unwrap_err(),
            "username can not be blank"
        );
        assert_eq!(
            User::create(&change("bob", None), None).unwrap_err(),
            "password can not be blank"
        );
        let upd = UserChange {
            status: Some(UserStatus::Disable),
            ..change("alice", Some(""))
        };
        let updated = User::update(&upd, Some(&alice)).unwrap();
        assert_eq!(updated.password, "pw", "a blank password keeps the old one");
        assert_eq!(updated.status, UserStatus::Disable);
        assert_eq!(
            User::update(&upd, None).unwrap_err(),
            "The user is not exist"
        );
        assert_eq!(UserType::parse("super").unwrap(), UserType::Super);
        assert_eq!(UserStatus::parse("DISABLE").unwrap(), UserStatus::Disable);
        assert!(UserType::parse("admin").is_err());
    }
}

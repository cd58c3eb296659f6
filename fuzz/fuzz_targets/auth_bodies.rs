//! Fuzz target: arbitrary bytes as the UserInfo and AclInfo bodies of ACL 2.0's admin requests
//! (3001-3010), through the checks the broker applies to them, and the ACLs they make evaluated
//! against a resource, actions and a source IP read from the same bytes.
#![no_main]

use auth::body::{AclInfo, UserInfo};
use auth::evaluate::authorize;
use auth::{Acl, Action, Resource, User};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = serde_json::from_slice::<UserInfo>(data) {
        if let Ok(change) = info.to_change() {
            if let Ok(user) = User::create(&change, None) {
                let _ = User::update(&change, Some(&user));
            }
        }
    }
    let Ok(info) = serde_json::from_slice::<AclInfo>(data) else {
        return;
    };
    let Ok((subject, policies)) = info.to_request() else {
        return;
    };
    let Ok(acl) = Acl::apply(&subject, None, policies) else {
        return;
    };
    let _ = AclInfo::from_acl(&acl);
    // A request read from the same bytes: resource, action and IP from the first entry, if any.
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('|');
    let resource = Resource::parse(parts.next().unwrap_or("*")).unwrap_or_else(|_| Resource::topic("t"));
    let action = Action::parse(parts.next().unwrap_or("Pub")).unwrap_or(Action::Pub);
    let ip = parts.next().unwrap_or("127.0.0.1");
    let user = User {
        username: subject.trim_start_matches("User:").to_owned(),
        password: "p".to_owned(),
        user_type: auth::UserType::Normal,
        status: auth::UserStatus::Enable,
    };
    let _ = authorize(&user, Some(&acl), &resource, &[action], ip);
    let _ = acl.delete(None, Some(&resource));
});
